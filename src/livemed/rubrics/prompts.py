"""The rubric writer's prompts: the domain pack's texts (`prompts/rubric_*.txt`: the four step
templates, the criterion examples and the weight bands; the theme list and the axes are the pack's
data), and the builders (outside text only in data blocks, `livemed.common.prompts.data_block`).
`rubrics/write.py` runs them. The medical pack renders the prompts `tests/prompts/snapshots` hold."""

from __future__ import annotations

import json
from collections.abc import Sequence

from livemed.common.prompts import DATA_RULES, data_block
from livemed.domains import DomainPack, medical
from livemed.records import Case, short_hash
from livemed.rubrics.check import DraftCriterion, Finding, band_lines
from livemed.rubrics.themes import MEDICAL_THEMES, pack_themes, theme_lines

THEMES = MEDICAL_THEMES  # the medical pack's closed list (rubrics/themes.py)

# The writer's prompts are the domain pack's (`prompts/rubric_*.txt`): the four step templates, the
# criterion examples and the weight bands; the theme list and the axes are the pack's data.
PROMPTS = (
    "rubric_themes",
    "rubric_criteria",
    "rubric_weights",
    "rubric_repair",
    "rubric_examples",
    "rubric_weight_bands",
)


def prompt_hash(pack: DomainPack | None = None) -> str:
    """The hash of everything the writer's prompts are made of, for one pack."""
    pack = pack or medical()
    return short_hash(
        *(pack.prompt(name) for name in PROMPTS),
        DATA_RULES,
        ", ".join(pack.axis_names),
        *(f"{name}: {text}" for name, text in pack_themes(pack).items()),
    )


PROMPT_HASH = prompt_hash()  # the medical pack's


def narrative_text(case: Case) -> str:
    return "\n".join(f"{name}: {fact}" for name, fact in case.narrative.entities()) or "(none)"


def numbered(name: str, items: list[str], **attrs: str) -> str:
    """One data block per item, labelled with its number `i` (from 0)."""
    return "\n\n".join(data_block(name, item, i=n, **attrs) for n, item in enumerate(items)) or "(none)"


def language_note(case: Case) -> str:
    """The case's language, passed on: the writer's prompts and criteria are English whatever it is."""
    return (
        f"Case language: {case.language or 'unknown'}. Write facts and criteria in English; the replies "
        "they will grade may be written in the case's language."
    )


def themes_prompt(case: Case, pack: DomainPack | None = None) -> str:
    pack = pack or medical()
    return pack.render(
        "rubric_themes",
        note=DATA_RULES,
        language=language_note(case),
        narrative=data_block("narrative", narrative_text(case)),
        query=data_block("query", case.query),
        advice=numbered("advice", case.advice),
        themes=theme_lines(pack_themes(pack)),
    )


def criteria_prompt(case: Case, facts: list[str], pack: DomainPack | None = None) -> str:
    pack = pack or medical()
    return pack.render(
        "rubric_criteria",
        note=DATA_RULES,
        language=language_note(case),
        narrative=data_block("narrative", narrative_text(case)),
        query=data_block("query", case.query),
        facts=numbered("fact", facts),
        examples=pack.prompt("rubric_examples"),
    )


def weights_prompt(
    case: Case,
    criteria: Sequence[tuple[str, str]],
    themes: Sequence[str] = (),
    pack: DomainPack | None = None,
) -> str:
    """`criteria` are (polarity, text) pairs; `themes` the case's themes from step 1."""
    pack = pack or medical()
    listing = "\n\n".join(
        data_block("criterion", text, i=n, polarity=polarity) for n, (polarity, text) in enumerate(criteria)
    )
    return pack.render(
        "rubric_weights",
        note=DATA_RULES,
        language=language_note(case),
        narrative=data_block("narrative", narrative_text(case)),
        query=data_block("query", case.query),
        themes=data_block("themes", ", ".join(themes) or "(none)"),
        criteria=listing,
        axes=", ".join(pack.axis_names),
        bands=bands_text(pack),
    )


def bands_text(pack: DomainPack | None = None) -> str:
    """The weight bands of step 3: the pack's text, its last lines the rules the code enforces
    (`check.band_lines`, from the pack's axes: the -8 safety floor among them)."""
    pack = pack or medical()
    return pack.render("rubric_weight_bands", axis_bands=band_lines(pack))


def repair_prompt(
    case: Case, drafts: list[DraftCriterion], findings: list[Finding], pack: DomainPack | None = None
) -> str:
    pack = pack or medical()
    draft = "\n\n".join(
        data_block("criterion", json.dumps(d.model_dump(exclude_none=True), ensure_ascii=False), i=n)
        for n, d in enumerate(drafts)
    )
    return pack.render(
        "rubric_repair",
        findings=data_block("findings", "\n".join(f"- {f}" for f in findings if f.blocking)),
        note=DATA_RULES,
        narrative=data_block("narrative", narrative_text(case)),
        query=data_block("query", case.query),
        advice=numbered("advice", case.advice),
        draft=draft or "(none)",
        axes=", ".join(pack.axis_names),
    )
