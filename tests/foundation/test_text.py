"""`livemed.common.text`: the one stemmer, content-word filter, sentence splitter and negation detector.

The figures are those every caller had before the word tools moved here (the lexical grader, the leak
and grounding audits, the offline curation baseline, the rubric lint, the evidence query)."""

from __future__ import annotations

import pytest

from livemed.common.text import (
    SENTENCE_END,
    clauses,
    content_words,
    key,
    negated,
    overlap,
    sentences,
    stem,
    words,
)
from livemed.common.word_tables import FUNCTION_WORDS, NORMALISED_NEGATIONS

REPORT = (
    "I'm a 58-year-old man and last night I woke with severe pain in my right big toe. "
    "I had a similar attack in the same toe two years ago that settled in a week."
)
QUOTED = (
    'He was told "stop the ibuprofen." Then he felt better (after two days.) She said: avoid alcohol; '
    "rest!\nFollow up in 2 weeks"
)


def test_sentences_cut_prose_after_its_marks_and_closing_quotes_and_at_line_breaks() -> None:
    assert sentences(REPORT) == [
        "I'm a 58-year-old man and last night I woke with severe pain in my right big toe.",
        "I had a similar attack in the same toe two years ago that settled in a week.",
    ]
    assert sentences(QUOTED) == [
        'He was told "stop the ibuprofen.',
        "Then he felt better (after two days.",
        "She said: avoid alcohol; rest!",
        "Follow up in 2 weeks",
    ]
    assert sentences("  \n\n ") == []


def test_the_lexical_graders_passages_end_at_semicolons_and_only_before_whitespace() -> None:
    assert sentences(REPORT, cut="passages") == sentences(REPORT)
    assert sentences(QUOTED, cut="passages") == [
        'He was told "stop the ibuprofen." Then he felt better (after two days.) She said: avoid alcohol;',
        "rest!",
        "Follow up in 2 weeks",
    ]


def test_k_qa_answers_are_cut_only_before_a_capital_or_a_digit() -> None:
    answer = (
        "It is considered an effective and well-tolerated antidepressant. The benefits of Lexapro occur "
        "within a few weeks. An antihistamine (e.g. cetirizine) helps. 2 weeks is typical."
    )
    assert sentences(answer, cut="capitals") == [
        "It is considered an effective and well-tolerated antidepressant.",
        "The benefits of Lexapro occur within a few weeks.",
        "An antihistamine (e.g. cetirizine) helps.",
        "2 weeks is typical.",
    ]
    assert "An antihistamine (e.g." in sentences(answer)  # prose cuts after any mark


def test_sentence_end_is_where_sentences_cuts() -> None:
    text = "Take it. Then rest!\nCall us."
    pieces = SENTENCE_END.split(text)
    assert [p.strip() for p in pieces] == sentences(text)
    assert [m.group() for m in SENTENCE_END.finditer(text)] == [" ", "\n"]


@pytest.mark.parametrize(
    ("word", "grader", "leak", "grounding"),
    [
        ("checking", "check", "check", "check"),
        ("checked", "check", "check", "check"),
        ("studies", "studi", "studi", "study"),
        ("patients", "patien", "patient", "patient"),
        ("patient's", "patien", "patient", "patient"),
        ("quickly", "quickl", "quick", "quick"),
        ("sleepiness", "sleepi", "sleepin", "sleepines"),
        ("haemorrhages", "haemor", "haemorr", "haemorrhag"),
        ("its", "its", "its", "its"),
        ("pills", "pill", "pill", "pill"),
        ("days", "days", "day", "day"),
    ],
)
def test_one_stemmer_read_three_ways(word: str, grader: str, leak: str, grounding: str) -> None:
    assert stem(word) == grader
    assert stem(word, min_stem=3, keep=7, ly=True) == leak
    assert stem(word, min_stem=3, keep=None, ly=True, ies=True) == grounding


def test_keys_fold_brands_synonyms_and_british_spelling_before_the_stem() -> None:
    assert key("lexapro") == key("escitalopram") == "escita"
    assert key("sleepiness") == key("drowsiness") == "sedati"
    assert key("haemorrhages") == key("hemorrhages") == "hemorr"
    assert key("diarrhoea") == key("diarrhea")


def test_content_words_by_default_drop_stop_words_boilerplate_negations_and_single_letters() -> None:
    criterion = "The response advises the patient to avoid ibuprofen 400 mg and see a doctor in 2 days"
    assert content_words(words(criterion)) == ["ibuprofen", "400", "mg", "see", "doctor", "days"]
    assert content_words(words(criterion), numbers=True)[-2:] == ["2", "days"]
    assert {stem(w) for w in content_words(words(criterion))} == {
        "400",
        "days",
        "doctor",
        "ibupro",
        "mg",
        "see",
    }


def test_content_words_with_a_callers_own_stop_list_and_shortest_word() -> None:
    normalised = "do not take ibuprofen on an empty stomach or if you have had an ulcer"
    skip = FUNCTION_WORDS | NORMALISED_NEGATIONS
    assert content_words(normalised.split(), skip=skip, shortest=1) == [
        "take",
        "ibuprofen",
        "empty",
        "stomach",
        "ulcer",
    ]
    assert content_words(normalised.split(), skip=(), shortest=6) == ["ibuprofen", "stomach"]


@pytest.mark.parametrize(
    ("text", "is_negated"),
    [
        ("Do not stop the medicine", False),  # two cues cancel
        ("Stop the medicine", True),
        ("Avoid screens, and avoid alcohol", True),  # each clause on its own
        ("Tell them about your trimethoprim allergy", True),  # an allergy contraindicates
        ("She had an allergic reaction to the plaster", False),  # a side effect does not
        ("You shouldn't drive, but you can walk", True),
        ("Never take it without food", False),
        ("Take ibuprofen with food", False),
    ],
)
def test_negation_is_the_parity_of_cues_in_a_clause(text: str, is_negated: bool) -> None:
    assert negated(text) is is_negated


def test_clauses_are_cut_at_commas_semicolons_colons_and_but() -> None:
    assert clauses("Avoid screens, and avoid alcohol") == ["Avoid screens", "and avoid alcohol"]
    assert clauses("You shouldn't drive, but you can walk") == ["You shouldn't drive", "but you can walk"]
    assert clauses("Rest at home but call us; it may take days: three") == [
        "Rest at home",
        "call us",
        "it may take days",
        "three",
    ]


def test_overlap_counts_stemmed_content_words_and_spelling_variants() -> None:
    assert overlap(
        "Advises taking ibuprofen with food", "take ibuprofen with meals and food"
    ) == pytest.approx(2 / 3)
    assert overlap("Recommends paediatric paracetamol", "pediatric paracetamol dosing") == 0.5
    assert overlap("The response advises it", "anything") == 0.0  # no content words
