"""The leak threshold's figures in docs/prompts.md are what the audit gives on the labelled dev set."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.leak_threshold import figures, load, trivial

from livemed.config import Thresholds

DOCS = Path(__file__).resolve().parents[2] / "docs" / "prompts.md"
MARKER = "<!-- leak-dev-set: checked by tests/curate/test_leak_dev_set.py -->"


def stated() -> str:
    text = DOCS.read_text(encoding="utf-8")
    return text[text.index(MARKER) : text.index("\n\n", text.index(MARKER))]


def test_every_dev_item_is_labelled_with_its_reason_and_licence() -> None:
    items = load()
    assert {item["label"] for item in items} == {"leak", "no_leak"}
    assert all(item["why"].strip() and item["licence"].strip() and item["origin"] for item in items)
    assert len({item["id"] for item in items}) == len(items)


def test_the_docs_state_the_dev_sets_size_and_the_default_thresholds_precision_and_recall() -> None:
    items = load()
    rows = {row.threshold: row for row in figures(items)}
    default = Thresholds().answer_leak
    chosen = rows[default]
    text = " ".join(stated().split())
    size = re.search(r"dev set: (\d+) cases, (\d+) labelled leak; at the default threshold ([\d.]+)", text)
    assert size is not None
    assert (int(size[1]), int(size[2]), float(size[3])) == (
        len(items),
        sum(item["label"] == "leak" for item in items),
        default,
    )
    assert f"precision {chosen.precision:.3f}, recall {chosen.recall:.3f}" in text
    assert f"({chosen.tp} of {chosen.tp + chosen.fn} leaks caught, no false alarm)" in text
    assert chosen.fp == 0
    assert f"At 0.6 precision falls to {rows[0.6].precision:.3f}" in text
    assert rows[0.6].recall == chosen.recall
    assert f"at 0.8 recall falls to {rows[0.8].recall:.3f}" in text
    # the default is the best F1 on the set, its lowest threshold where tied
    f1 = {t: 2 * r.precision * r.recall / (r.precision + r.recall) for t, r in rows.items()}
    assert default == min(t for t in f1 if f1[t] == max(f1.values()))


def test_the_docs_give_the_intervals_and_what_a_worthless_audit_gets() -> None:
    items = load()
    chosen = {row.threshold: row for row in figures(items)}[Thresholds().answer_leak]
    text = " ".join(stated().split())
    precision, recall = chosen.intervals()
    for p in (precision, recall):
        assert p.low is not None
        assert p.high is not None
        assert f"{p.k}/{p.n} [{p.low:.3f}, {p.high:.3f}]" in text
    every, none = trivial(items)["every case"], trivial(items)["no case"]
    assert f"flagging every case gets precision {every.precision:.3f} ({every.tp} of {len(items)})" in text
    assert f"at recall {every.recall:.3f}, flagging none recall {none.recall:.3f}" in text
    assert chosen.precision > every.precision  # the audit beats both
    assert chosen.recall > none.recall
