"""The rubric writer's prompts: the domain text as named constants, and the builders (outside text only
in data blocks, `livemed.prompts.data_block`). `rubrics/write.py` runs them."""

from __future__ import annotations

import json
from collections.abc import Sequence

from livemed.prompts import DATA_RULES, data_block
from livemed.records import Case, short_hash
from livemed.rubrics.check import DraftCriterion, Finding
from livemed.rubrics.themes import MEDICAL_THEMES, theme_lines

# Domain-specific text of the writer's prompts (a domain pack can lift these as they are).
THEMES = MEDICAL_THEMES
CRITERION_EXAMPLES = """\
- POSITIVE: "Advises having the potassium level checked with a blood test, such as within a week
  of starting the new drug" (the core is the potassium test; the timing is a detail, given as "such as");
- NEGATIVE: "Recommends ibuprofen despite the patient's kidney disease" (the bad action itself)."""
WEIGHT_BANDS = """- positive criteria: 7 to 10 for the advice a correct reply cannot leave out (an emergency
  referral, the key diagnosis or treatment); 4 to 6 for important advice; 1 to 3 for minor details;
- negative criteria: -8 to -10 for a safety violation (an action that could harm THIS patient, a missed
  emergency); -4 to -7 for contradicting the central advice or an invented medical fact; -1 to -3 for
  a minor inaccuracy."""
AXES_LINE = "accuracy, completeness, communication, context_awareness, safety"

THEMES_PROMPT = """Step 1 of writing an evaluation rubric for a medical case.

{note}

{language}

{narrative}

{query}

{advice}

Evaluation themes (a closed list; use these names only):
{themes}

Assign the case one or more themes from the list. Then list the facts of the advice (the blocks named
"advice", each labelled with its number i) that fall under the themes you assigned: atomic,
self-contained statements, each with the number of the advice element it comes from and its themes
(from the list). Leave out advice that falls under no listed theme (pleasantries, generic encouragement,
facts about the doctor), and advice that is not clinically essential for this patient. Use the
narrative only as context. Reply as JSON:
{{"themes": [...], "facts": [{{"fact": "...", "advice_index": 0, "themes": ["..."]}}]}}"""

CRITERIA_PROMPT = """Step 2 of writing an evaluation rubric for a medical case.

{note}

{language}

{narrative}

{query}

{facts}

Turn each fact (the blocks named "fact", each labelled with its number i) into binary criteria a
grader can check in a model's reply to this patient:
- a POSITIVE criterion rewarding the clinically essential core of the fact. A correct reply that gives
  the core in other words, or with less detail, must meet it: put the gold answer's specifics (timings,
  doses, brand names) as examples after "such as", never as requirements;
- where it applies, a NEGATIVE criterion describing the bad behaviour itself: contradicting the fact,
  inventing a claim, or recommending an action contraindicated by THIS patient's narrative.
  Never write a negative criterion as an omission ("Fails to ...", "Does not mention ...", "Omits ..."):
  an omission is already the positive criterion not met, and a negative for it would punish it twice.
Examples:
{examples}
Write each criterion as a statement of what the reply does, in English. Reply as JSON:
{{"criteria": [{{"fact_index": 0, "text": "...", "polarity": "positive" or "negative"}}]}}"""

WEIGHTS_PROMPT = """Step 3 of writing an evaluation rubric for a medical case.

{note}

{language}

{narrative}

{query}

{themes}

{criteria}

Give every criterion (the blocks named "criterion", each labelled with its number i, from 0, and its
polarity) an axis ({axes}) and a signed integer weight in [-10, 10]: positive for positive criteria,
negative for negative ones, never 0. Bands:
{bands}
Reply as JSON, one entry per criterion, with its number i and its text copied exactly:
{{"criteria": [{{"index": 0, "text": "...", "axis": "...", "weight": 5}}]}}"""

REPAIR_PROMPT = """A draft evaluation rubric for a medical case failed the checks in the block named
"findings" (criteria are named by their number i, from 0).

{note}

{narrative}

{query}

{findings}

{advice}

{draft}

Return a PATCH of the flagged criteria only (the draft's criteria are the blocks named "criterion"):
for each criterion to change, its number i and the corrected criterion, or "drop": true to remove it;
and in "add" any new criterion, e.g. for an advice element no positive criterion covers (set its
advice_index). Rules: weights are integers in [-10, 10], never 0, positive for positive criteria and
negative for negative ones; axis one of {axes}; no negative criterion written as an omission ("Fails to
..."). Reply as JSON:
{{"replace": [{{"index": 0, "drop": false, "criterion": {{"text": "...", "polarity": "...", "axis": "...",
"weight": 5, "theme": "...", "source_fact": "...", "advice_index": 0}}}}], "add": [...]}}"""

PROMPT_HASH = short_hash(
    THEMES_PROMPT,
    CRITERIA_PROMPT,
    WEIGHTS_PROMPT,
    REPAIR_PROMPT,
    DATA_RULES,
    CRITERION_EXAMPLES,
    WEIGHT_BANDS,
    *(f"{name}: {text}" for name, text in THEMES.items()),
)


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


def themes_prompt(case: Case) -> str:
    return THEMES_PROMPT.format(
        note=DATA_RULES,
        language=language_note(case),
        narrative=data_block("narrative", narrative_text(case)),
        query=data_block("query", case.query),
        advice=numbered("advice", case.advice),
        themes=theme_lines(THEMES),
    )


def criteria_prompt(case: Case, facts: list[str]) -> str:
    return CRITERIA_PROMPT.format(
        note=DATA_RULES,
        language=language_note(case),
        narrative=data_block("narrative", narrative_text(case)),
        query=data_block("query", case.query),
        facts=numbered("fact", facts),
        examples=CRITERION_EXAMPLES,
    )


def weights_prompt(case: Case, criteria: Sequence[tuple[str, str]], themes: Sequence[str] = ()) -> str:
    """`criteria` are (polarity, text) pairs; `themes` the case's themes from step 1."""
    listing = "\n\n".join(
        data_block("criterion", text, i=n, polarity=polarity) for n, (polarity, text) in enumerate(criteria)
    )
    return WEIGHTS_PROMPT.format(
        note=DATA_RULES,
        language=language_note(case),
        narrative=data_block("narrative", narrative_text(case)),
        query=data_block("query", case.query),
        themes=data_block("themes", ", ".join(themes) or "(none)"),
        criteria=listing,
        axes=AXES_LINE,
        bands=WEIGHT_BANDS,
    )


def repair_prompt(case: Case, drafts: list[DraftCriterion], findings: list[Finding]) -> str:
    draft = "\n\n".join(
        data_block("criterion", json.dumps(d.model_dump(exclude_none=True), ensure_ascii=False), i=n)
        for n, d in enumerate(drafts)
    )
    return REPAIR_PROMPT.format(
        findings=data_block("findings", "\n".join(f"- {f}" for f in findings if f.blocking)),
        note=DATA_RULES,
        narrative=data_block("narrative", narrative_text(case)),
        query=data_block("query", case.query),
        advice=numbered("advice", case.advice),
        draft=draft or "(none)",
        axes=AXES_LINE,
    )
