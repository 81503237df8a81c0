"""A legal case and a third pack written from a folder alone, for the domain-pack tests."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from livemed.records import Case, Narrative

LEGAL_ADVICE = [
    "You must file your claim with the employment tribunal within three months of your dismissal.",
    "Keep copies of your contract, your payslips and the dismissal letter as evidence.",
    "Do not ignore the letter from the court; reply before the hearing.",
    "Contact a solicitor or your local law centre for advice on unfair dismissal.",
]


def legal_case(i: int = 0) -> Case:
    return Case(
        doc_id=f"files:legal{i}",
        source="files",
        source_id=f"legal{i}",
        published=datetime(2025, 3, 1 + i, tzinfo=UTC),
        narrative=Narrative(
            parties=["an employee"],
            jurisdiction=["in England"],
            legal_problem=["dismissed without notice after six years"],
            facts=["my employer fired me by email and kept my last wages"],
            dates_and_deadlines=["dismissed on 3 February"],
            documents=["I have my employment contract and the dismissal email"],
        ),
        query="Can I challenge my dismissal, and what should I do now?",
        advice=LEGAL_ADVICE,
        status="accepted",
    )


FINANCE_PACK = """\
name = "finance"
description = "Personal finance questions (a pack written in a test from a folder alone)."
subject = "personal finance"
person = "the saver"

[[axes]]
name = "correctness"
[[axes]]
name = "suitability"
[[axes]]
name = "risk"
safety_like = true
negative = [-10, -9]

[[themes]]
name = "cost"
description = "what the product costs each year"
[[themes]]
name = "emergency fund"
description = "cash kept for surprises"
[[themes]]
name = "general money advice"
description = "anything else"
[[themes]]
name = "capital protection"
description = "what would put the savings at risk"

[narrative]
demographics = "age, income and dependants"
chief_complaint = "the money question"

[checklists]
default = ["income", "debts", "goal"]

[evidence]
corpus = "guides.jsonl"

[offline.theme_cues]
cost = '\\b(fees?|charges?|commission)\\b'
"emergency fund" = '\\b(emergency fund|savings buffer|rainy day)\\b'

[offline]
urgent_cues = '\\b(scam|fraud)\\b'
default_axis = "suitability"
default_weight = 3
negative_axis = "risk"
hazards = ["prohibitions"]
hazard_weights = { prohibitions = -9 }
general_theme = "general money advice"
harm_theme = "capital protection"

[[offline.weight_rules]]
when = ["theme:cost"]
axis = "correctness"
weight = 6
theme = "cost"
[[offline.weight_rules]]
when = ["urgent"]
axis = "risk"
weight = 9

[[offline.pattern_hazards]]
name = "all in one stock"
pattern = '(?i)\\bdiversif\\w*\\b'
criterion = "Recommends putting all the savings into a single stock."
unsafe = "Put all your savings into one promising stock."
weight = -10
theme = "capital protection"

[vocabulary]
icd10 = false
reason = "not_finance"
terms = "pension mortgage savings budget loan interest invest index fund isa fee"
phrases = ["credit card", "emergency fund"]
"""


def write_finance_pack(folder: Path) -> Path:
    """The third pack: one folder with pack.toml, a prompt file and its evidence corpus."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pack.toml").write_text(FINANCE_PACK, encoding="utf-8")
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "note.txt").write_text("A finance note for {subject} cases.\n", encoding="utf-8")
    (folder / "guides.jsonl").write_text(
        '{"id": "g1", "title": "Fees", "text": "Index funds charge low fees.", "url": null, '
        '"licence": "CC0"}\n',
        encoding="utf-8",
    )
    return folder


def finance_case() -> Case:
    return Case(
        doc_id="files:fin0",
        source="files",
        source_id="fin0",
        published=datetime(2025, 4, 1, tzinfo=UTC),
        narrative=Narrative(demographics=["34, two children"], chief_complaint=["where to put savings"]),
        query="Where should I invest my savings?",
        advice=[
            "Choose a low-cost index fund because the fees compound over decades.",
            "Diversify across many companies rather than a single share.",
            "Report any cold call offering guaranteed returns as a possible scam.",
        ],
        status="accepted",
    )
