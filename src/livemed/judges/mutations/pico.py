"""PICO candidates: drop a span, move a span to the wrong key, insert a distractor span from the
abstract, cut or extend a span's boundary, empty a key; single operators and seeded combinations."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable

from livemed.judges.datasets.items import PICO_KEYS, PicoItem
from livemed.judges.metrics import normalise_span, pico_macro_f1
from livemed.records import Candidate

Spans = dict[str, list[str]]
Operator = Callable[[Spans, PicoItem, random.Random], tuple[Spans, str] | None]
COMBINED = 3  # candidates made of two or three operators
_WORD = re.compile(r"\S+")


def _copy(spans: Spans) -> Spans:
    return {key: list(spans.get(key, [])) for key in PICO_KEYS}


def _filled(spans: Spans) -> list[tuple[str, int]]:
    return [(key, i) for key in PICO_KEYS for i in range(len(spans[key]))]


def drop_span(spans: Spans, item: PicoItem, rng: random.Random) -> tuple[Spans, str] | None:
    del item
    places = _filled(spans)
    if not places:
        return None
    key, i = rng.choice(places)
    out = _copy(spans)
    del out[key][i]
    return out, f"drop_span:{key}"


def move_span(spans: Spans, item: PicoItem, rng: random.Random) -> tuple[Spans, str] | None:
    del item
    places = _filled(spans)
    if not places:
        return None
    key, i = rng.choice(places)
    target = rng.choice([k for k in PICO_KEYS if k != key])
    out = _copy(spans)
    out[target].append(out[key].pop(i))
    return out, f"move_span:{key}->{target}"


def insert_distractor(spans: Spans, item: PicoItem, rng: random.Random) -> tuple[Spans, str] | None:
    """A 2–5 word phrase of the abstract that is no gold span, added under a random key."""
    words = _WORD.findall(item.text)
    gold = {normalise_span(s) for key in PICO_KEYS for s in spans[key]}
    for _ in range(20):
        if len(words) < 2:
            return None
        size = rng.randint(2, min(5, len(words)))
        start = rng.randrange(0, len(words) - size + 1)
        phrase = " ".join(words[start : start + size]).strip(".,;:()")
        if phrase and normalise_span(phrase) not in gold and phrase in item.text:
            key = rng.choice(PICO_KEYS)
            out = _copy(spans)
            out[key].append(phrase)
            return out, f"insert_distractor:{key}"
    return None


def cut_boundary(spans: Spans, item: PicoItem, rng: random.Random) -> tuple[Spans, str] | None:
    del item
    places = [(k, i) for k, i in _filled(spans) if len(spans[k][i].split()) > 1]
    if not places:
        return None
    key, i = rng.choice(places)
    words = spans[key][i].split()
    out = _copy(spans)
    out[key][i] = " ".join(words[1:] if rng.random() < 0.5 else words[:-1])
    return out, f"cut_boundary:{key}"


def extend_boundary(spans: Spans, item: PicoItem, rng: random.Random) -> tuple[Spans, str] | None:
    """The span with the next (or previous) word of the abstract joined on."""
    places = _filled(spans)
    rng.shuffle(places)
    for key, i in places:
        span = spans[key][i]
        at = item.text.find(span)
        if at < 0:
            continue
        after = _WORD.match(item.text[at + len(span) :].lstrip())
        before = _WORD.findall(item.text[:at])
        extended = None
        if after and rng.random() < 0.5:
            extended = f"{span} {after.group().rstrip('.,;:')}"
        elif before:
            extended = f"{before[-1].lstrip('(')} {span}"
        if extended and normalise_span(extended) != normalise_span(span):
            out = _copy(spans)
            out[key][i] = extended
            return out, f"extend_boundary:{key}"
    return None


def empty_key(spans: Spans, item: PicoItem, rng: random.Random) -> tuple[Spans, str] | None:
    del item
    keys = [k for k in PICO_KEYS if spans[k]]
    if not keys:
        return None
    key = rng.choice(keys)
    out = _copy(spans)
    out[key] = []
    return out, f"empty_key:{key}"


OPERATORS: tuple[Operator, ...] = (
    drop_span,
    move_span,
    insert_distractor,
    cut_boundary,
    extend_boundary,
    empty_key,
)


def answer_json(spans: Spans) -> str:
    return json.dumps({key: spans.get(key, []) for key in PICO_KEYS}, ensure_ascii=False)


def answer_text(spans: Spans) -> str:
    return (
        f"I extracted the trial's elements as short verbatim spans from the abstract.\n{answer_json(spans)}"
    )


def candidates(item: PicoItem, seed: int) -> list[Candidate]:
    """Gold, each operator once, and `COMBINED` seeded combinations of two or three operators."""
    rng = random.Random(f"{seed}:pico:{item.item_id}")
    gold = _copy(item.spans)
    out = [_candidate("gold", gold, ["gold"], item)]
    seen = {answer_json(gold)}
    plans = [[op] for op in OPERATORS] + [rng.sample(OPERATORS, rng.choice((2, 3))) for _ in range(COMBINED)]
    for number, plan in enumerate(plans):
        spans, names = gold, []
        for op in plan:
            made = op(spans, item, rng)
            if made is not None:
                spans, name = made
                names.append(name)
        key = answer_json(spans)
        if names and key not in seen:
            seen.add(key)
            out.append(_candidate(f"m{number}", spans, names, item))
    return out


def _candidate(cid: str, spans: Spans, operators: list[str], item: PicoItem) -> Candidate:
    return Candidate(
        id=cid,
        text=answer_text(spans),
        answer=answer_json(spans),
        operators=operators,
        metric=pico_macro_f1(spans, item.spans),
        correct=None,
    )
