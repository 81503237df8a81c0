"""The leak audit's threshold, tuned on a labelled dev set (`tests/fixtures/leak/dev.jsonl`).

Each item is a case (narrative, query, advice, the Validator's query type when known) labelled `leak`
(the candidate's view gives the answer away: an advice element or the final diagnosis) or `no_leak`
by hand, with the reason. `figures` runs the real audit (`curate.leak.leak_scores`) on every item and
gives precision and recall of "leaks" at each candidate threshold (a case leaks when a finding's leak
is above the threshold, as `[thresholds] answer_leak` is applied); docs/prompts.md states the chosen
threshold's figures and `tests/curate/test_leak_dev_set.py` checks them.

    .venv/bin/python benchmarks/leak_threshold.py            # the table over candidate thresholds
    .venv/bin/python benchmarks/leak_threshold.py --drafts   # print the sourced cases to label (JSONL)

`--drafts` screens the sources with the offline curation baseline: the bundled demo's documents
(case reports and threads), the Europe PMC full-text fixture and the Stack Exchange fixture.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from livemed.common.closed_form import Proportion, proportion
from livemed.curate.baseline import CurationBaseline
from livemed.curate.leak import leak_scores
from livemed.curate.screener import Screener
from livemed.demo import load_demo_docs
from livemed.models import LLM, Engine
from livemed.prefilter.clean import strip_html
from livemed.records import Case, Doc, Narrative, Reply, ReplyRole, Validation
from livemed.sources.xml import jats_text, parse_xml, text_of

ROOT = Path(__file__).resolve().parents[1]
DEV_SET = ROOT / "tests" / "fixtures" / "leak" / "dev.jsonl"
FIXTURES = ROOT / "tests" / "fixtures"
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


@dataclass(frozen=True)
class Row:
    threshold: float
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    def intervals(self) -> tuple[Proportion, Proportion]:
        """Precision and recall with their 95% Wilson intervals (n: cases flagged, cases that leak)."""
        return proportion(self.tp, self.tp + self.fp), proportion(self.tp, self.tp + self.fn)

    def line(self, name: str = "") -> str:
        precision, recall = (
            f"{p.k}/{p.n} [{p.low:.3f}, {p.high:.3f}]" if p.n else "-" for p in self.intervals()
        )
        label = name or f"{self.threshold:.2f}"
        return (
            f"{label:>14}  {self.tp:>3} {self.fp:>3} {self.fn:>3} {self.tn:>3}"
            f"  {self.precision:>9.3f} {precision:<22} {self.recall:>6.3f} {recall}"
        )


def trivial(items: list[dict[str, Any]]) -> dict[str, Row]:
    """What a worthless audit gets on the same items: flag every case, or none."""
    leaks = sum(item["label"] == "leak" for item in items)
    rest = len(items) - leaks
    return {"every case": Row(1.0, leaks, rest, 0, 0), "no case": Row(0.0, 0, 0, leaks, rest)}


def item_case(item: dict[str, Any]) -> Case:
    """The dev item's case, as the audit reads it."""
    query_type = item.get("query_type")
    validation = Validation(s_cc=True, s_inf=1.0, s_align=1.0, query_type=query_type) if query_type else None
    return Case(
        doc_id=f"dev:{item['id']}",
        source="dev",
        source_id=item["id"],
        published=datetime(2026, 1, 1, tzinfo=UTC),
        narrative=Narrative.model_validate(item["narrative"]),
        query=item["query"],
        query_derived=bool(item.get("query_derived")),
        advice=item["advice"],
        validation=validation,
    )


def load(path: Path = DEV_SET) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def worst_leak(item: dict[str, Any]) -> float:
    """The case's highest leak over every finding the audit computes (advice and diagnosis)."""
    return max((f.leak.leak for f in leak_scores(item_case(item))), default=0.0)


def figures(items: list[dict[str, Any]], thresholds: tuple[float, ...] = THRESHOLDS) -> list[Row]:
    scored = [(worst_leak(item), item["label"] == "leak") for item in items]
    rows = []
    for t in thresholds:
        flagged = [(score > t, leaks) for score, leaks in scored]
        rows.append(
            Row(
                t,
                tp=sum(f and y for f, y in flagged),
                fp=sum(f and not y for f, y in flagged),
                fn=sum(not f and y for f, y in flagged),
                tn=sum(not f and not y for f, y in flagged),
            )
        )
    return rows


def source_docs() -> list[Doc]:
    """The documents the dev set's sourced cases were screened from."""
    article = parse_xml((FIXTURES / "europepmc" / "case_report_fulltext.xml").read_bytes())
    europepmc = Doc(
        source="europepmc",
        source_id="PMC99000001",
        published=datetime(2025, 3, 1, tzinfo=UTC),
        doc_type="case_report",
        title=text_of(article.find(".//{*}article-title")),
        text=jats_text(article).text(),
    )
    question = json.loads((FIXTURES / "stackexchange" / "search_advanced.json").read_text())["items"][0]
    answer = json.loads((FIXTURES / "stackexchange" / "answers.json").read_text())["items"][0]
    stackexchange = Doc(
        source="stackexchange",
        source_id=str(question["question_id"]),
        published=datetime(2025, 3, 2, tzinfo=UTC),
        doc_type="thread",
        title=strip_html(question["title"]),
        text=strip_html(question["body"]),
        replies=[Reply(role=ReplyRole.ACCEPTED, text=strip_html(answer["body"]))],
    )
    return [*load_demo_docs(), europepmc, stackexchange]


async def drafts() -> list[dict[str, Any]]:
    """The sourced cases, unlabelled: each document screened by the offline baseline."""
    out = []
    async with Engine() as engine:
        screener = Screener(LLM(engine, CurationBaseline(), stage="screener"))
        for doc in source_docs():
            case = await screener.screen(doc)
            if isinstance(case, Case):
                out.append(
                    {
                        "id": doc.id,
                        "origin": doc.source,
                        "query_derived": case.query_derived,
                        "narrative": case.narrative.model_dump(exclude_defaults=True),
                        "query": case.query,
                        "advice": case.advice,
                    }
                )
    return out


def main(argv: list[str]) -> None:
    if "--drafts" in argv:
        for draft in asyncio.run(drafts()):
            print(json.dumps(draft, ensure_ascii=False))
        return
    items = load()
    leaks = sum(item["label"] == "leak" for item in items)
    print(f"dev set {DEV_SET.relative_to(ROOT)}: {len(items)} cases, {leaks} labelled leak")
    print("     threshold   tp  fp  fn  tn  precision (95% Wilson)           recall (95% Wilson)")
    for row in figures(items):
        print(row.line())
    for name, row in trivial(items).items():
        print(row.line(f"flag {name}"))


if __name__ == "__main__":
    main(sys.argv[1:])
