"""Deterministic rubric checks (lint), applied to a writer's draft before it becomes a Rubric.

Blocking findings (the rubric is repaired once, or rejected):
- `no_positive`         no positive criterion: nothing to earn
- `weight_out_of_range` weight 0 or outside [-10, 10]
- `sign_mismatch`       the weight's sign disagrees with the polarity
- `bad_axis`            not one of the domain pack's axes (medical: accuracy, completeness,
                        communication, context_awareness, safety; legal: … jurisdiction_awareness, harm)
- `uncovered_advice`    an advice element no positive criterion covers (linked by advice index, or
                        ≥ 60% of its stemmed content words in the criterion, rapidfuzz for spelling);
                        only the elements the writer's step 1 kept under a listed theme are required
- `omission_negative`   a negative criterion written as an omission ("Fails to …", "Does not warn …",
                        "No mention of …", "Neglects …", "Misses …", and the pack's `[lint]
                        omission_phrases`): the unmet positive criterion already costs the weight, so it
                        would count twice (`omission_negatives` lists them, for audits)
- `decisive_as_example` a decisive value of the source fact (a dose, an interval, a threshold, a time
                        limit, a jurisdiction: `rubrics/decisive.py`) given only after "such as"/"e.g.":
                        a reply with the wrong value would meet the criterion

Fixed on the spot and recorded (`settle`): `near_duplicate` (rapidfuzz token-sort ratio ≥ 90 with the
same polarity: the later one is dropped) and `light_safety` (a negative criterion on a safety-like
axis lighter than its range is set to the range's lightest weight: the method weighs safety violations
-8 to -10; the medical pack's safety and the legal pack's harm axes say so, and the weights prompt says
the same, `band_lines`, written from those axes). Warnings, recorded only:
`off_band_weight` (a weight outside its axis's range in the domain pack, e.g. a finance pack's risk
axis at -10 to -9), `unlisted_theme` (a criterion whose theme is not on the domain's closed list,
`rubrics/themes.py`),
`decisive_missing` (a positive criterion that leaves out its source fact's decisive value),
`bare_or` (a positive criterion with an "A, B or C" list that says neither "at least one of" nor
"all of"/"each of": the grader requires every item unless told one is enough, `rubrics/alternatives.py`),
`unpaired_decisive` (a value the advice bounds, a safety net's trigger or a jurisdiction that no
negative criterion from the same fact names: a wrong one costs nothing; each such value, not only the
first),
`suspected_sign_error` (a positive criterion that reads like a fault, or a negative one that reads
like praise), `no_source_fact` (a criterion naming no fact), `no_clinical_content` (a criterion
whose words, past the rubric boilerplate and generic words such as "helpful" or "doctor", name nothing
clinical), `restates_query` (a criterion whose content words are all the query's: it rewards repeating
the question) and `missing_negative` (advice that warns — "avoid", "do not", "stop", "contraindicated",
"seek urgent care" — but a rubric with no negative criterion).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field
from rapidfuzz import fuzz

from livemed.common.text import content_words, overlap, stem, words
from livemed.domains import DomainPack, medical
from livemed.records import Criterion
from livemed.rubrics import decisive
from livemed.rubrics.alternatives import bare_lists
from livemed.rubrics.themes import listed, pack_themes

BLOCKING = frozenset(
    {
        "no_positive",
        "weight_out_of_range",
        "sign_mismatch",
        "bad_axis",
        "uncovered_advice",
        "omission_negative",
        "decisive_as_example",
    }
)
# A negative criterion written as an omission: the positive criterion not met already costs its weight.
# The built-in openings; a domain pack adds its own (`[lint] omission_phrases`). "Does not / Never" counts
# only before a verb of saying or advising: "Does not stop the bleeding" may be the harm itself.
_OMISSION_VERBS_TEXT = (
    "mention warn advise recommend refer offer address discuss explain ask suggest include tell say note "
    "cover consider"
)
OMISSION_VERBS = tuple(_OMISSION_VERBS_TEXT.split())
OMISSION_OPENINGS = (
    r"(?:fails?|failing|neglects?|neglecting|forgets?) to\b",
    rf"(?:does not|doesn't|doesn’t|did not|didn't|never)\s+(?:{'|'.join(OMISSION_VERBS)})(?:s|es|ed|ing)?\b",
    r"(?:omits?|omitting|misses|lacks|ignores?|overlooks?|neglects|leaves out|skips)\b",
    r"(?:makes )?no (?:mention|warning|advice|referral|discussion|explanation|recommendation)\b",
    r"without (?:mentioning|warning|advising|recommending|referring|offering|explaining)\b",
    r"is silent (?:on|about)\b",
)
DUPLICATE_RATIO = 90.0
SAFETY_FLOOR = -8  # the lightest weight a safety violation may have (the shipped packs' safety and harm)
COVER_SHARE = 0.6
_FAULT_CUES = re.compile(
    r"\b(fails? to|incorrect(ly)?|hallucinat\w*|fabricat\w*|contraindicated|unsafe|dangerous|"
    r"contradicts?|omits?|misses|wrongly|inappropriate(ly)?)\b",
    re.IGNORECASE,
)
_PRAISE_CUES = re.compile(r"\b(correctly|appropriately|accurately|clearly explains)\b", re.IGNORECASE)


class DraftCriterion(BaseModel):
    """A criterion as a writer proposes it: loosely typed, so the lint can say what is wrong."""

    model_config = ConfigDict(extra="ignore")

    text: str = Field(min_length=1)
    polarity: str
    axis: str
    weight: int
    theme: str | None = None
    source_fact: str | None = None
    advice_index: int | None = None


@dataclass(frozen=True)
class Finding:
    code: str
    message: str

    @property
    def blocking(self) -> bool:
        return self.code in BLOCKING

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def settle(
    drafts: Sequence[DraftCriterion], pack: DomainPack | None = None
) -> tuple[list[DraftCriterion], list[Finding]]:
    """The fixes made without asking the writer, each a `Finding`: near-duplicates dropped, and light
    safety weights raised (`light_safety`: on the pack's safety-like axes, to the lightest weight of
    their negative range, -8 for medical safety and legal harm; the weights prompt states the same rule,
    `band_lines`)."""
    kept, findings = drop_near_duplicates(drafts)
    floors = safety_floors(pack or medical())
    weighed: list[DraftCriterion] = []
    for draft in kept:
        floor = floors.get(draft.axis)
        if floor is not None and draft.polarity == "negative" and floor < draft.weight < 0:
            message = f"{draft.text[:60]!r}: {draft.axis} violation weighted {draft.weight}, set to {floor}"
            findings.append(Finding("light_safety", message))
            draft = draft.model_copy(update={"weight": floor})
        weighed.append(draft)
    return weighed, findings


def safety_floors(pack: DomainPack) -> dict[str, int]:
    """Axis → the lightest weight a negative criterion on it may have: the pack's safety-like axes."""
    return {a.name: a.negative[1] for a in pack.axes if a.safety_like}


def band_lines(pack: DomainPack) -> str:
    """What the code enforces on weights, as the weights prompt states it: the safety floors (raised in
    `settle`) and any axis's own ranges (`off_band_weight`), from the pack's axes — one source."""
    lines = []
    for axis in pack.axes:
        (plo, phi), (nlo, nhi) = axis.positive, axis.negative
        if axis.safety_like:
            lines.append(
                f"- a negative criterion on the {axis.name} axis weighs {nhi} to {nlo}: a lighter weight is\n"
                f"  raised to {nhi} (and recorded); put a lighter fault on another axis"
            )
        elif (plo, phi, nlo, nhi) != (1, 10, -10, -1):
            lines.append(f"- on the {axis.name} axis: positive {plo} to {phi}, negative {nhi} to {nlo}")
    return "\n".join(lines)


def drop_near_duplicates(drafts: Sequence[DraftCriterion]) -> tuple[list[DraftCriterion], list[Finding]]:
    """Keep the first of each group of near-identical criteria with the same polarity."""
    kept: list[DraftCriterion] = []
    findings: list[Finding] = []
    for draft in drafts:
        twin = next(
            (k for k in kept if k.polarity == draft.polarity and _similar(k.text, draft.text)),
            None,
        )
        if twin is None:
            kept.append(draft)
        else:
            findings.append(Finding("near_duplicate", f"dropped {draft.text!r} (same as {twin.text!r})"))
    return kept, findings


def _similar(a: str, b: str) -> bool:
    return fuzz.token_sort_ratio(a.lower(), b.lower()) >= DUPLICATE_RATIO


def _axis_findings(where: str, draft: DraftCriterion, pack: DomainPack) -> list[Finding]:
    """`bad_axis` for an axis the pack does not have; `off_band_weight` for a weight outside its range."""
    axis = pack.axis(draft.axis)
    if axis is None:
        return [Finding("bad_axis", f"{where}: axis {draft.axis!r} (axes: {', '.join(pack.axis_names)})")]
    if draft.weight == 0:
        return []
    low, high = axis.positive if draft.weight > 0 else axis.negative
    if low <= draft.weight <= high:
        return []
    return [
        Finding("off_band_weight", f"{where}: weight {draft.weight} outside {axis.name}'s [{low}, {high}]")
    ]


def _criterion_findings(number: int, draft: DraftCriterion, pack: DomainPack) -> list[Finding]:
    found: list[Finding] = []
    where = f"#{number} {draft.text[:60]!r}"
    if draft.weight == 0 or not -10 <= draft.weight <= 10:
        found.append(
            Finding("weight_out_of_range", f"{where}: weight {draft.weight} not in [-10, 10] \\ {{0}}")
        )
    if draft.polarity not in ("positive", "negative") or (draft.weight > 0) != (draft.polarity == "positive"):
        found.append(
            Finding("sign_mismatch", f"{where}: weight {draft.weight} vs polarity {draft.polarity!r}")
        )
    found += _axis_findings(where, draft, pack)
    if draft.polarity == "positive" and (lists := bare_lists(draft.text)):
        message = f"{where}: {lists[0]!r}: say 'at least one of' (one is enough) or 'all of'"
        found.append(Finding("bare_or", message))
    if draft.polarity == "positive" and _FAULT_CUES.search(draft.text):
        found.append(Finding("suspected_sign_error", f"{where}: positive but reads like a fault"))
    if draft.polarity == "negative" and is_omission(draft.text, pack):
        found.append(Finding("omission_negative", f"{where}: a negative criterion written as an omission"))
    if draft.theme and pack.themes and not listed(draft.theme, pack_themes(pack)):
        found.append(Finding("unlisted_theme", f"{where}: theme {draft.theme!r} is not on the theme list"))
    if draft.polarity == "negative" and _PRAISE_CUES.search(draft.text):
        found.append(Finding("suspected_sign_error", f"{where}: negative but reads like praise"))
    if not (draft.source_fact or "").strip():
        found.append(Finding("no_source_fact", f"{where}: names no source fact"))
    return found


@lru_cache(maxsize=8)
def _omission(pack: DomainPack) -> re.Pattern[str]:
    own = [re.escape(p.strip()) + r"\b" for p in pack.lint.omission_phrases if p.strip()]
    return re.compile(rf"^\s*(?:{'|'.join([*OMISSION_OPENINGS, *own])})", re.IGNORECASE)


def is_omission(text: str, pack: DomainPack | None = None) -> bool:
    """Is `text`, as a negative criterion, an omission ("Does not warn …", "No mention of …")?"""
    return bool(_omission(pack or medical()).search(text))


def omission_negatives(
    criteria: Sequence[Criterion | DraftCriterion], pack: DomainPack | None = None
) -> list[str]:
    """The negative criteria (their texts) that restate a positive's omission: 0 is the target."""
    return [c.text for c in criteria if c.polarity == "negative" and is_omission(c.text, pack)]


def decisive_findings(drafts: Sequence[DraftCriterion], pack: DomainPack | None = None) -> list[Finding]:
    """A positive criterion must require its source fact's decisive values: `decisive_as_example`
    (blocking) when one is only an example there ("such as 500 mg"), `decisive_missing` when it is not
    there at all; `unpaired_decisive` for each value with a wrong side (`decisive.pairable`) that no
    negative criterion from the same fact names."""
    found: list[Finding] = []
    for number, draft in enumerate(drafts):
        if draft.polarity != "positive" or not draft.source_fact:
            continue
        where = f"#{number} {draft.text[:60]!r}"
        values = decisive.decisive(draft.source_fact, pack)
        for value in values:
            if decisive.as_example(value, draft.text, pack):
                found.append(
                    Finding(
                        "decisive_as_example", f"{where}: {value.text!r} is a requirement, not an example"
                    )
                )
            elif not decisive.required(value, draft.text, pack):
                found.append(Finding("decisive_missing", f"{where}: does not state {value.text!r}"))
        paired = [
            d
            for d in drafts
            if d.polarity == "negative"
            and (
                d.source_fact == draft.source_fact
                or (d.advice_index is not None and d.advice_index == draft.advice_index)
            )
        ]
        for value in values:
            if decisive.pairable(value) and not any(decisive.names(value, d.text) for d in paired):
                message = f"{where}: no negative criterion names a wrong {value.kind} for {value.text!r}"
                found.append(Finding("unpaired_decisive", message))
    return found


def covers(draft: DraftCriterion, index: int, element: str) -> bool:
    """Does a positive criterion cover advice element `index`? Linked by index, or by word overlap."""
    if draft.advice_index == index:
        return True
    candidates = [draft.text, *([draft.source_fact] if draft.source_fact else [])]
    return any(overlap(element, c) >= COVER_SHARE for c in candidates)


_GENERIC_TEXT = (
    "response reply helpful help good appropriate relevant accurate information advice answer "
    "question doctor physician clinician person user concern concerns issue issues thing things way "
    "ways important complete thorough clear empathetic empathy polite friendly tone language simple "
    "words well"
)
_GENERIC = frozenset(stem(w) for w in content_words(words(_GENERIC_TEXT)))
_WARNING = re.compile(
    r"\b(?:avoid|do not|don't|never|stop|contraindicated|must not|should not)\b"
    r"|\b(?:seek|get|call)\b[^.;]*\b(?:urgent|emergency|immediately)\b",
    re.IGNORECASE,
)
RESTATE_SHARE = 1.0


def content_findings(drafts: Sequence[DraftCriterion], advice: Sequence[str], query: str) -> list[Finding]:
    """The warnings on what criteria say: nothing clinical, the query restated, a warning left unpenalised."""
    found: list[Finding] = []
    asked = {stem(w) for w in content_words(words(query))}
    for number, draft in enumerate(drafts):
        said = {stem(w) for w in content_words(words(draft.text))}
        where = f"#{number} {draft.text[:60]!r}"
        if not said - _GENERIC:
            found.append(Finding("no_clinical_content", f"{where}: names nothing clinical"))
        elif asked and len(said) >= 2 and len(said & asked) / len(said) >= RESTATE_SHARE:
            found.append(Finding("restates_query", f"{where}: only restates the query"))
    warns = [element for element in advice if _WARNING.search(element)]
    if warns and not any(d.polarity == "negative" for d in drafts):
        found.append(
            Finding("missing_negative", f"the advice warns ({warns[0][:60]!r}) but no criterion is negative")
        )
    return found


def lint(
    drafts: Sequence[DraftCriterion],
    advice: Sequence[str],
    query: str = "",
    *,
    required: Collection[int] | None = None,
    pack: DomainPack | None = None,
) -> list[Finding]:
    """Every finding for a draft rubric (after near-duplicates are dropped); `required`: the advice
    indices a positive criterion must cover (default: all). Criteria are numbered from 0 (#0), as the
    repair prompt numbers them."""
    domain = pack or medical()
    findings = [f for n, d in enumerate(drafts) for f in _criterion_findings(n, d, domain)]
    findings += content_findings(drafts, advice, query)
    findings += decisive_findings(drafts, domain)
    positives = [d for d in drafts if d.polarity == "positive" and d.weight > 0]
    if not positives:
        findings.append(Finding("no_positive", "the rubric has no positive criterion"))
    for index, element in enumerate(advice):
        if required is not None and index not in required:
            continue
        if not any(covers(d, index, element) for d in positives):
            findings.append(
                Finding("uncovered_advice", f"advice #{index} {element[:80]!r} has no positive criterion")
            )
    return findings


def to_criteria(drafts: Sequence[DraftCriterion]) -> list[Criterion]:
    """Drafts that passed the blocking checks, as records."""
    return [
        Criterion(
            text=d.text.strip(),
            polarity=d.polarity,
            axis=d.axis,
            weight=d.weight,
            theme=d.theme,
            source_fact=d.source_fact,
        )
        for d in drafts
    ]


def reference_coverage(
    criteria: Sequence[Criterion], statements: Sequence[str], threshold: float = COVER_SHARE
) -> tuple[int, int]:
    """(covered, total): reference statements (e.g. K-QA Must_have) whose content words a positive
    criterion contains (share ≥ `threshold`, see `overlap`)."""
    positives = [c.text for c in criteria if c.polarity == "positive"]
    covered = sum(any(overlap(s, p) >= threshold for p in positives) for s in statements)
    return covered, len(statements)
