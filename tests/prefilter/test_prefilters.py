from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from livemed.config import PrefilterConfig
from livemed.errors import UnknownNameError
from livemed.prefilter import build_prefilters
from livemed.prefilter.clean import HtmlStripper, strip_html
from livemed.prefilter.duplicates import DuplicateFilter, words
from livemed.prefilter.simple import LanguageFilter, LengthFilter
from livemed.prefilter.vocabulary import VocabularyFilter
from livemed.records import Doc, Rejection, Reply
from livemed.store import Store

MEDICAL = (
    "My mother is 72 and was diagnosed with atrial fibrillation last month. Her doctor prescribed apixaban "
    "and metoprolol. Since then she has had bruising on her arms and some dizziness when she stands up. "
    "Her kidney function was borderline at the last blood test. Should we ask about changing the dose?"
)
OTHER = (
    "We are planning a road trip along the coast next summer and would love suggestions for quiet "
    "campsites with a view of the sea, good places to eat fresh fish and short walks for the kids."
)


def doc(text: str, source_id: str = "1", **extra: object) -> Doc:
    return Doc(
        source="t", source_id=source_id, published=datetime(2025, 3, 1, tzinfo=UTC), text=text, **extra
    )


def test_html_and_boilerplate_are_stripped() -> None:
    raw = (
        "<div><p>Severe <b>headache</b> &amp; nausea</p><script>track()</script>"
        "<p>Thanks in advance!</p><p>Sent from my iPhone</p></div>"
    )
    out = HtmlStripper()(doc(raw, replies=[Reply(text="<p>Go to A&amp;E</p>"), Reply(text="<br/>")]))
    assert isinstance(out, Doc)
    assert out.text == "Severe headache & nausea"
    assert [r.text for r in out.replies] == ["Go to A&E"]
    assert strip_html("plain &lt;text&gt;\nhttps://example.org/x\nmore") == "plain <text>\nmore"
    empty = HtmlStripper()(doc("<p>Sent from my iPhone</p>"))
    assert isinstance(empty, Rejection)
    assert empty.reason == "empty_after_cleaning"
    assert empty.stage == "prefilter"


def test_length_bounds() -> None:
    check = LengthFilter(20, 100)
    assert isinstance(check(doc("x" * 50)), Doc)
    short, long = check(doc("x" * 5)), check(doc("x" * 101))
    assert isinstance(short, Rejection)
    assert short.reason == "too_short"
    assert isinstance(long, Rejection)
    assert long.reason == "too_long"
    assert long.record_id == "t:1"


def test_language_keeps_allowed_languages() -> None:
    check = LanguageFilter(["en"])
    kept = check(doc(MEDICAL))
    assert isinstance(kept, Doc)
    assert kept.language == "en"
    french = check(doc("Ma mère a 72 ans et son médecin lui a prescrit un anticoagulant pour une arythmie."))
    assert isinstance(french, Rejection)
    assert french.reason == "language"
    assert "'fr'" in french.detail
    assert isinstance(LanguageFilter(["en", "fr"])(doc("Ma mère a 72 ans et son médecin est gentil.")), Doc)


def test_vocabulary_needs_medical_terms_or_mesh() -> None:
    check = VocabularyFilter(min_hits=2)
    assert isinstance(check(doc(MEDICAL)), Doc)
    other = check(doc(OTHER))
    assert isinstance(other, Rejection)
    assert other.reason == "not_medical"
    with_mesh = check(doc(OTHER, metadata={"mesh": ["Atrial Fibrillation", "Apixaban"]}))
    assert isinstance(with_mesh, Doc)
    assert isinstance(VocabularyFilter(min_hits=2, extra_terms=["campsites", "walks"])(doc(OTHER)), Doc)


@pytest.mark.parametrize(
    "text",
    [
        "I've been feeling dizzy and almost fainted twice this week, and my heart races when I stand up.",
        "My period came twice this month, very heavy with clots. Could this be perimenopause? I'm 46.",
        "Been coughing for three weeks after a cold, worse at night, and now my chest hurts when I breathe.",
        "Sharp pain in my lower right belly since last night, I threw up twice and can't stand up straight.",
        "My blood sugar readings are around 180 in the morning even though I take metformin.",
    ],
)
def test_patients_lay_words_and_inflections_count(text: str) -> None:
    assert isinstance(VocabularyFilter()(doc(text)), Doc)


@pytest.mark.parametrize(
    "text",
    [
        "My car makes a grinding noise whenever I brake; the pads and the battery were replaced last year.",
        "Which laptop battery lasts longest for travel? I need something light with a bright screen.",
        "How do I keep my tomato plants from wilting in the heat? The leaves are curling at the edges.",
        "Banana bread came out dense: a cup of sugar, baked an hour, the top burning, the middle raw.",
        "Our joint bank account keeps draining with fees; how long is the transfer period to switch banks?",
        "The team was tired by the second half, the striker kept racing offside and the rain was pounding.",
    ],
)
def test_everyday_text_is_still_not_medical(text: str) -> None:
    rejected = VocabularyFilter()(doc(text))
    assert isinstance(rejected, Rejection)
    assert rejected.reason == "not_medical"


def test_exact_and_near_duplicates_are_rejected() -> None:
    check = DuplicateFilter(threshold=0.7, num_perm=128)
    assert isinstance(check(doc(MEDICAL, "a")), Doc)
    exact = check(doc(MEDICAL.upper().replace(".", " ."), "b"))
    assert isinstance(exact, Rejection)
    assert exact.reason == "duplicate_exact"
    assert "t:a" in exact.detail
    near = check(doc(MEDICAL.replace("last month", "two weeks ago"), "c"))
    assert isinstance(near, Rejection)
    assert near.reason == "duplicate_near"
    assert "t:a" in near.detail
    assert isinstance(check(doc(OTHER, "d")), Doc)
    assert isinstance(check(doc(MEDICAL, "a")), Doc)  # a document is not its own duplicate


def test_signatures_persist_and_stored_docs_are_backfilled(any_store: Store) -> None:
    first = DuplicateFilter()
    assert isinstance(first(doc(MEDICAL, "a")), Doc)
    first.flush(any_store)
    any_store.put([doc(OTHER, "imported")])  # stored without a signature
    second = DuplicateFilter()
    assert second.load(any_store) == 2
    assert len(list(any_store.signatures_iter())) == 2
    again = second(doc(MEDICAL, "z"))
    assert isinstance(again, Rejection)
    assert again.reason == "duplicate_exact"
    imported = second(doc(OTHER + " Thanks.", "y"))
    assert isinstance(imported, Rejection)
    assert imported.reason == "duplicate_near"


def test_chain_runs_in_order_and_stops_at_first_rejection() -> None:
    chain = build_prefilters(PrefilterConfig(min_chars=50))
    assert chain.names == ["html", "length", "language", "vocabulary", "duplicate"]
    kept = chain(doc(f"<p>{MEDICAL}</p>"))
    assert isinstance(kept, Doc)
    assert kept.text == MEDICAL
    assert kept.language == "en"
    rejected = chain(doc("<p>too short</p>", "2"))
    assert isinstance(rejected, Rejection)
    assert rejected.reason == "too_short"
    with pytest.raises(UnknownNameError, match="did you mean 'language'"):
        build_prefilters(PrefilterConfig(), ["languag"])


def test_changed_minhash_parameters_resign_the_stored_docs(sqlite_store: Store) -> None:
    sqlite_store.put([doc(MEDICAL, "a")])
    first = DuplicateFilter(num_perm=64)
    assert first.load(sqlite_store) == 1
    ((_, _, blob64),) = sqlite_store.signatures_iter()
    assert len(blob64) == 64 * 4
    wider = DuplicateFilter(
        threshold=0.7, num_perm=128
    )  # crashed: "Expecting minhash with length 128, got 64"
    assert wider.load(sqlite_store) == 1
    ((_, _, blob128),) = sqlite_store.signatures_iter()
    assert len(blob128) == 128 * 4
    near = wider(doc(MEDICAL.replace("last month", "two weeks ago"), "c"))
    assert isinstance(near, Rejection)
    assert near.reason == "duplicate_near"
    longer = DuplicateFilter(num_perm=128, shingle_words=5)  # same length, incompatible values
    assert longer.load(sqlite_store) == 1
    ((_, _, blob_k5),) = sqlite_store.signatures_iter()
    assert blob_k5 != blob128
    assert blob_k5 == longer.minhash(words(doc(MEDICAL, "a"))).hashvalues.astype(np.uint32).tobytes()
    assert sqlite_store.state_get("prefilter", "minhash_parameters")["shingle_words"] == 5
