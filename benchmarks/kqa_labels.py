"""A labelled (response, criterion, label) set for grader development, made from K-QA.

From `questions_w_answers.jsonl` (201 questions, each with a physician answer and Must_have statements):

- **met**: a physician answer with each of its own Must_have statements. The physicians wrote the
  statements from their answer, so the answer should entail them; the label is noisy (a statement can add
  a detail the answer leaves out) and `support_share` measures how often the words are really there.
- **not met**, three kinds per statement:
  - `unrelated`: a Must_have statement of another question (drawn with a fixed seed);
  - `negated`: the statement negated by rule ("X is Y" → "X is not Y", "X can Y" → "X cannot Y",
    "X is not Y" → "X is Y"); statements with no auxiliary to negate are left out;
  - `altered`: one drug name (from `DRUGS`) or one number swapped for another the answer does not contain;
  - `removed`: the statement with the answer less every sentence that holds half or more of the
    statement's content words (on topic, but what entailed it is gone; noisy when the answer says it
    again in other words).
- **split**: by question, on a hash of the question text: `dev` (tune on it) and `heldout` (never tuned on).

Each item is a dict with the fields `livemed judges agreement --labels` reads (`response`, `criterion`,
`label`, `question`) plus `kind`, `split` and `qid`.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from livemed.common.text import content_words, sentences, stem, words

SEED = 12
SPLITS = ("dev", "heldout")
DRUGS = [
    "acetaminophen",
    "ibuprofen",
    "naproxen",
    "aspirin",
    "amoxicillin",
    "azithromycin",
    "doxycycline",
    "ciprofloxacin",
    "metronidazole",
    "cephalexin",
    "clindamycin",
    "penicillin",
    "prednisone",
    "hydrocortisone",
    "omeprazole",
    "ranitidine",
    "metformin",
    "insulin",
    "lisinopril",
    "amlodipine",
    "losartan",
    "atorvastatin",
    "simvastatin",
    "warfarin",
    "apixaban",
    "sertraline",
    "escitalopram",
    "fluoxetine",
    "citalopram",
    "bupropion",
    "trazodone",
    "gabapentin",
    "tramadol",
    "oxycodone",
    "codeine",
    "morphine",
    "lorazepam",
    "alprazolam",
    "diazepam",
    "zolpidem",
    "melatonin",
    "levothyroxine",
    "furosemide",
    "hydroxyzine",
    "cetirizine",
    "loratadine",
    "diphenhydramine",
    "fluconazole",
    "acyclovir",
    "valacyclovir",
    "ivermectin",
    "permethrin",
    "tamsulosin",
    "finasteride",
    "sildenafil",
    "colchicine",
    "allopurinol",
    "methotrexate",
    "albuterol",
    "montelukast",
    "ondansetron",
    "loperamide",
]
_AUX = re.compile(
    r"\b(is|are|was|were|can|could|should|may|might|will|would|must|does|do|has|have)\b( not\b)?", re.I
)
_HAVE = {"has": "does not have", "have": "do not have"}
_PARTICIPLE = re.compile(r"\s+(been|\w+ed|\w+en)\b", re.I)
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")


def split_of(question: str) -> str:
    """`dev` or `heldout`, fixed by the question's text (half each, up to hashing)."""
    digest = hashlib.sha256(f"livemed-kqa-{SEED}:{question.strip()}".encode()).digest()
    return SPLITS[digest[0] % 2]


def negate(statement: str) -> str | None:
    """The statement negated at its first auxiliary verb, or None when it has none."""
    found = _AUX.search(statement)
    if found is None:
        return None
    verb, already = found.group(1), found.group(2)
    if already:
        replacement = verb
    elif verb.lower() in _HAVE and not _PARTICIPLE.match(statement, found.end()):
        replacement = _HAVE[verb.lower()]
    else:
        replacement = f"{verb} not"
    return statement[: found.start()] + replacement + statement[found.end() :]


def alter(statement: str, answer: str, rng: random.Random) -> str | None:
    """One drug or number swapped for one the answer does not mention, or None when there is neither."""
    lowered, answer_lowered = statement.lower(), answer.lower()
    drugs = [d for d in DRUGS if re.search(rf"\b{d}\b", lowered)]
    if drugs:
        others = [d for d in DRUGS if d not in answer_lowered and d not in lowered]
        new = rng.choice(others)
        return re.sub(rf"\b{drugs[0]}\b", new, statement, count=1, flags=re.I)
    numbers = _NUMBER.findall(statement)
    if numbers:
        old = numbers[0]
        value = float(old)
        new = str(int(value * 3 + 2)) if value.is_integer() else f"{value * 3:.1f}"
        if new in answer:
            return None
        return _NUMBER.sub(new, statement, count=1)
    return None


def _statements(row: dict[str, Any]) -> list[str]:
    return [s.strip() for s in row.get("Must_have") or [] if isinstance(s, str) and s.strip()]


def build(rows: Iterable[dict[str, Any]], seed: int = SEED) -> list[dict[str, Any]]:
    """Every labelled item, in a fixed order (questions in file order)."""
    rows = [r for r in rows if r.get("Free_form_answer") and _statements(r)]
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for qid, row in enumerate(rows):
        items.extend(_items_for(qid, row, rows, rng))
    return items


def _items_for(
    qid: int, row: dict[str, Any], rows: list[dict[str, Any]], rng: random.Random
) -> Iterator[dict[str, Any]]:
    question, answer = str(row["Question"]), str(row["Free_form_answer"])
    split = split_of(question)
    base = {"question": question, "response": answer, "split": split, "qid": qid}
    others = [i for i in range(len(rows)) if i != qid and split_of(str(rows[i]["Question"])) == split]
    for statement in _statements(row):
        yield {**base, "criterion": statement, "label": "met", "kind": "own"}
        other = _statements(rows[rng.choice(others)])
        yield {**base, "criterion": rng.choice(other), "label": "not met", "kind": "unrelated"}
        negated = negate(statement)
        if negated:
            yield {**base, "criterion": negated, "label": "not met", "kind": "negated"}
        altered = alter(statement, answer, rng)
        if altered:
            yield {**base, "criterion": altered, "label": "not met", "kind": "altered"}
        rest = remove_support(answer, statement)
        if rest:
            yield {**base, "response": rest, "criterion": statement, "label": "not met", "kind": "removed"}


def _content(text: str) -> set[str]:
    """The stemmed content words the lexical grader reads (`common.text`)."""
    return {stem(w) for w in content_words(words(text))}


def remove_support(answer: str, statement: str) -> str | None:
    """The answer less its sentences holding half or more of the statement's content words.

    None when no sentence or every sentence holds that many."""
    wanted = _content(statement)
    if not wanted:
        return None
    parts = sentences(answer, cut="passages")
    kept = [s for s in parts if len(wanted & _content(s)) * 2 < len(wanted)]
    return " ".join(kept) if kept and len(kept) < len(parts) else None


def support_share(items: Iterable[dict[str, Any]], at_least: float = 0.6) -> tuple[int, int]:
    """(supported, total) `own` items: the answer holds `at_least` of the statement's content words."""
    supported = total = 0
    for item in items:
        if item["kind"] != "own":
            continue
        wanted = _content(item["criterion"])
        total += 1
        supported += bool(wanted) and len(wanted & _content(item["response"])) >= at_least * len(wanted)
    return supported, total


def read_kqa(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_jsonl(items: Iterable[dict[str, Any]], path: Path) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for item in items:
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
            count += 1
    return count
