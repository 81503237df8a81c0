"""The domain pack format: what one `pack.toml` (plus its `prompts/*.txt`) may say, as typed models.

A pack is data, not code: axes with their default weight ranges, themes with the cue words the
offline rubric writer uses, the narrative fields and checklists of curation, the relevance
vocabulary of the pre-filter, the offline baselines' cues and hazards, and the default evidence
corpus. Regular expressions in a pack are compiled when it is loaded, so a bad one is an error
naming the pack, not a failure halfway through a run.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

NAME = r"^[a-z][a-z0-9_]{0,39}$"
NARRATIVE_SLOTS = (  # the medical slots, which `records.Narrative` declares
    "demographics",
    "chief_complaint",
    "symptoms",
    "onset_duration",
    "history",
    "family_history",
    "social_history",
    "medications",
    "allergies",
    "exam_labs",
    "timeline",
)
HAZARD_DETECTORS = ("prohibitions", "not_used", "red_flags", "allergies", "interactions")
RULE_CONDITIONS = ("urgent", "explains", "patient", "warning")


def _words(value: Any) -> Any:
    """A word list may be written as one whitespace-separated string (long lists stay readable)."""
    return value.split() if isinstance(value, str) else value


Words = Annotated[list[str], BeforeValidator(_words)]


def _regex(value: str, where: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"{where}: not a regular expression: {exc}") from None
    return value


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AxisSpec(Strict):
    """A rubric axis and the weights its criteria may take (`negative` is (heaviest, lightest))."""

    name: str = Field(pattern=NAME)
    description: str = ""
    safety_like: bool = Field(default=False, description="violations on it weigh `negative` (e.g. -10 to -8)")
    positive: tuple[int, int] = (1, 10)
    negative: tuple[int, int] = (-10, -1)

    @model_validator(mode="after")
    def _ranges(self) -> AxisSpec:
        lo, hi = self.positive
        if not 1 <= lo <= hi <= 10:
            raise ValueError(f"axis {self.name}: positive range {list(self.positive)} not within [1, 10]")
        lo, hi = self.negative
        if not -10 <= lo <= hi <= -1:
            raise ValueError(f"axis {self.name}: negative range {list(self.negative)} not within [-10, -1]")
        return self


class ThemeSpec(Strict):
    """An evaluation theme of the domain's closed list, with the definition the rubric writer is shown."""

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _one_spelling(cls, value: str) -> str:
        from livemed.records.grading import canonical_theme

        if canonical_theme(value) != value:
            raise ValueError(
                f"theme {value!r} is not in its one spelling {canonical_theme(value)!r} (lower case, "
                "the last word singular), which criteria and rubrics store"
            )
        return value


class WeightRule(Strict):
    """One rule of the offline rubric writer: the first rule whose conditions all hold gives a positive
    criterion its axis and weight. Conditions: `theme:<name>`, `urgent` (the pack's urgency cues),
    `warning` (the criterion advises against something), `explains`, `patient` (it names the case's own
    facts). `theme` names the criterion's theme (default: the element's first theme)."""

    when: list[str] = Field(default_factory=list)
    axis: str = Field(pattern=NAME)
    weight: int = Field(ge=1, le=10)
    theme: str | None = None

    @field_validator("when")
    @classmethod
    def _conditions(cls, value: list[str]) -> list[str]:
        for item in value:
            if not item.startswith("theme:") and item not in RULE_CONDITIONS:
                known = ", ".join(RULE_CONDITIONS)
                raise ValueError(f"unknown rule condition {item!r} (theme:<name> or one of {known})")
        return value


class PatternHazard(Strict):
    """A harmful reply found from the advice by a pattern: when `pattern` matches an advice element (and
    `requires`, if given, does too), the negative criterion `criterion` (with `{name}` filled from the
    pattern's named groups) weighs `weight`; `unsafe` is what a reply doing it says (`offline/unsafe`)."""

    name: str = Field(min_length=1)
    pattern: str
    requires: str = ""
    criterion: str = Field(min_length=1)
    unsafe: str = Field(min_length=1)
    weight: int = Field(ge=-10, le=-1)
    theme: str = Field(min_length=1)

    @model_validator(mode="after")
    def _compiles(self) -> PatternHazard:
        _regex(self.pattern, f"hazard {self.name!r} pattern")
        _regex(self.requires, f"hazard {self.name!r} requires")
        return self


class OfflineSpec(Strict):
    """What the offline baselines (`offline/rules`, `offline/unsafe`) take from the domain."""

    theme_cues: dict[str, str] = Field(
        default_factory=dict, description="theme → regex: how the offline writer finds it (in this order)"
    )
    urgent_cues: str = ""
    weight_rules: list[WeightRule] = Field(default_factory=list)
    default_axis: str = Field(default="completeness", pattern=NAME)
    default_weight: int = Field(default=4, ge=1, le=10)
    negative_axis: str = Field(default="safety", pattern=NAME)
    hazards: list[str] = Field(default_factory=lambda: list(HAZARD_DETECTORS))
    hazard_weights: dict[str, int] = Field(default_factory=dict)
    pattern_hazards: list[PatternHazard] = Field(default_factory=list)
    narrative_cues: dict[str, str] = Field(default_factory=dict, description="slot → regex (curation)")
    query_cues: dict[str, str] = Field(
        default_factory=dict, description="query type → regex: the curation baseline's s_cc (first match)"
    )
    fallback_slot: str = "symptoms"
    patient_slots: list[str] = Field(
        default_factory=lambda: ["medications", "history"],
        description="slots whose words tie advice to the person's own facts (weight rule 'patient')",
    )
    fallback_cues: str = ""
    general_theme: str = "general advice"
    harm_theme: str = "harm avoidance"

    @field_validator("urgent_cues", "fallback_cues")
    @classmethod
    def _compiles(cls, value: str) -> str:
        return _regex(value, "offline cues")

    @field_validator("narrative_cues", "theme_cues", "query_cues")
    @classmethod
    def _cues_compile(cls, value: dict[str, str]) -> dict[str, str]:
        for name, pattern in value.items():
            _regex(pattern, f"cues of {name!r}")
        return value

    @field_validator("hazards")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [h for h in value if h not in HAZARD_DETECTORS]
        if unknown:
            raise ValueError(f"unknown hazard detector(s) {unknown} (known: {', '.join(HAZARD_DETECTORS)})")
        return value


class DecisiveSpec(Strict):
    """Decisive values (`rubrics/decisive.py`): what they look like, and the negative criterion that
    names a wrong one. A value of a `harm_kinds` kind past its bound ("no more than 4 g a day",
    "within six months"), in an advice element under `harm_theme`, harms: on the offline writer's
    `negative_axis` at `harm_weight`; any other wrong value is on `axis` at `weight`."""

    patterns: dict[str, str] = Field(
        default_factory=dict, description="kind (the noun criteria use: 'dose') → regex; {number}: a number"
    )
    axis: str = Field(default="accuracy", pattern=NAME)
    weight: int = Field(default=-6, ge=-10, le=-1)
    harm_kinds: list[str] = Field(default_factory=list)
    harm_theme: str = ""
    harm_weight: int = Field(default=-9, ge=-10, le=-1)

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, value: dict[str, str]) -> dict[str, str]:
        for kind, pattern in value.items():
            _regex(pattern.replace("{number}", "1"), f"decisive pattern {kind!r}")
        return value


class LintSpec(Strict):
    """The pack's words for the rubric lint: `omission_phrases`, openings of a negative criterion that
    state an omission (added to the built-in ones: "Fails to", "Does not …", "No mention of", …)."""

    omission_phrases: list[str] = Field(default_factory=list)


class LeakSpec(Strict):
    """What gives a case's answer away (`curate/leak.py`, the Screener's decision point, the baseline):
    `outcome_patterns`, regexes of report sentences that state the diagnosis or outcome (added to the
    built-in "confirmed", "consistent with", "diagnosed as", "revealed", "final diagnosis"); `answer_cues`,
    regexes after which an advice element names the answer ("the diagnosis is", "consistent with")."""

    outcome_patterns: list[str] = Field(default_factory=list)
    answer_cues: list[str] = Field(default_factory=list)

    @field_validator("outcome_patterns", "answer_cues")
    @classmethod
    def _patterns_compile(cls, value: list[str]) -> list[str]:
        for pattern in value:
            _regex(pattern, "leak patterns")
        return value


class VocabularySpec(Strict):
    """The relevance pre-filter's vocabulary. `terms` match with regular English endings, `as_written`
    and `phrases` as written; `icd10` adds the ICD-10-CM title words (minus `exclude`)."""

    icd10: bool = False
    terms: Words = Field(default_factory=list)
    as_written: Words = Field(default_factory=list)
    phrases: list[str] = Field(default_factory=list)
    exclude: Words = Field(default_factory=list)
    reason: str = Field(default="off_domain", pattern=NAME, description="the pre-filter's rejection reason")


class EvidenceSpec(Strict):
    """The default evidence corpus: used when neither --evidence nor `evidence` names one; a
    relative path is relative to the pack's folder, "medquad" is the fetched MedQuAD copy."""

    corpus: str | None = None
    note: str = ""


class CandidateViewSpec(Strict):
    """How a case is shown to the candidate beyond its slots' facts (`curate/view.py`)."""

    date_slot: str | None = Field(
        default=None, description="the slot that shows the case's own date when the text states none"
    )


class CoverageSpec(Strict):
    """The fact-coverage audit's word groups (`rubrics/coverage.py`): a criterion's word counts as seen
    when the candidate's view has any word of its group ("caffeine" ~ "coffee", "family" ~ "father")."""

    equivalents: list[Words] = Field(default_factory=list)


class DomainPack(Strict):
    """One domain, read from a folder (`load_pack`)."""

    name: str = Field(min_length=1)
    description: str = ""
    subject: str = Field(min_length=1, description="the adjective prompts use: 'a medical case'")
    person: str = Field(default="the patient", min_length=1, description="who the advice is for")
    taxonomy: Literal["clinical"] | None = Field(
        default=None,
        description="the error taxonomy `livemed taxonomy` labels failures with: clinical (CNIF, GOPR, MHME, "
        "KGOC, NCE), or none (the command refuses the pack)",
    )
    axes: list[AxisSpec] = Field(min_length=1)
    themes: list[ThemeSpec] = Field(default_factory=list)
    narrative: dict[str, str] = Field(default_factory=dict, description="narrative slot → what it holds here")
    checklists: dict[str, list[str]] = Field(default_factory=dict)
    checklist_aliases: dict[str, list[str]] = Field(
        default_factory=dict, description="checklist item → other names a reply may give it"
    )
    checklist_fields: dict[str, str] = Field(
        default_factory=dict, description="checklist item → the narrative slot that answers it (baselines)"
    )
    answer_labels: dict[str, str] = Field(default_factory=dict, description="slot → label, patient message")
    consult_labels: dict[str, str] = Field(default_factory=dict, description="slot → label, consult")
    candidate_view: CandidateViewSpec = Field(default_factory=CandidateViewSpec)
    coverage: CoverageSpec = Field(default_factory=CoverageSpec)
    vocabulary: VocabularySpec = Field(default_factory=VocabularySpec)
    offline: OfflineSpec = Field(default_factory=OfflineSpec)
    decisive: DecisiveSpec = Field(default_factory=DecisiveSpec)
    lint: LintSpec = Field(default_factory=LintSpec)
    evidence: EvidenceSpec = Field(default_factory=EvidenceSpec)
    leak: LeakSpec = Field(default_factory=LeakSpec)
    prompts: dict[str, str] = Field(default_factory=dict, description="prompt name → text (prompts/*.txt)")
    folder: Path | None = None

    def __hash__(self) -> int:  # packs key caches (automata, compiled cues): by name and folder
        return hash((self.name, str(self.folder)))

    @model_validator(mode="after")
    def _consistent(self) -> DomainPack:
        names = [a.name for a in self.axes]
        if len(set(names)) != len(names):
            raise ValueError(f"axes named twice: {names}")
        if bad_names := sorted(s for s in self.narrative if not re.match(NAME, s)):
            raise ValueError(f"narrative slot names must be lower-case identifiers: {bad_names}")
        slots = {*self.checklist_fields.values(), *self.offline.narrative_cues}
        slots |= {*self.answer_labels, *self.consult_labels, *filter(None, [self.candidate_view.date_slot])}
        if "patient_slots" in self.offline.model_fields_set:
            slots |= set(self.offline.patient_slots)
        if "fallback_slot" in self.offline.model_fields_set or self.offline.fallback_cues:
            slots.add(self.offline.fallback_slot)
        bad_slots = sorted(slots - set(self.narrative_slots))
        if bad_slots:
            known = ", ".join(self.narrative_slots)
            raise ValueError(
                f"unknown narrative slot(s) {bad_slots} (this pack's [narrative] slots: {known})"
            )
        offline = self.offline
        used = {r.axis for r in offline.weight_rules} | {offline.default_axis, offline.negative_axis}
        used |= {self.decisive.axis} if self.decisive.patterns else set()
        if missing := sorted(used - set(names)):
            raise ValueError(f"offline rules name axes the pack does not have: {missing}")
        themes = {t.name for t in self.themes}
        conditions = [c for r in offline.weight_rules for c in r.when]
        wanted = {c.removeprefix("theme:") for c in conditions if c.startswith("theme:")}
        wanted |= {*offline.theme_cues, offline.general_theme, offline.harm_theme}
        wanted |= {self.decisive.harm_theme} - {""}
        wanted |= {r.theme for r in offline.weight_rules if r.theme} | {
            h.theme for h in offline.pattern_hazards
        }
        if themes and (missing := sorted(wanted - themes)):  # no [[themes]]: no closed list
            raise ValueError(f"offline rules and cues name themes the pack does not list: {missing}")
        return self

    @property
    def narrative_slots(self) -> tuple[str, ...]:
        """The narrative slots a case of this domain fills: its `[narrative]` keys (the medical slots
        when it names none)."""
        return tuple(self.narrative) or NARRATIVE_SLOTS

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    def axis(self, name: str) -> AxisSpec | None:
        return next((a for a in self.axes if a.name == name), None)

    @property
    def safety_axes(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes if a.safety_like)

    @property
    def theme_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.themes)

    @cached_property
    def theme_patterns(self) -> dict[str, re.Pattern[str]]:
        return {name: re.compile(cues, re.IGNORECASE) for name, cues in self.offline.theme_cues.items()}

    @cached_property
    def narrative_patterns(self) -> tuple[tuple[str, re.Pattern[str]], ...]:
        """The offline curation baseline's (slot, cues) pairs, ties to the earlier slot."""
        return tuple((slot, re.compile(p, re.IGNORECASE)) for slot, p in self.offline.narrative_cues.items())

    @cached_property
    def fallback_pattern(self) -> re.Pattern[str] | None:
        cues = self.offline.fallback_cues
        return re.compile(cues, re.IGNORECASE) if cues else None

    @cached_property
    def outcome_pattern(self) -> re.Pattern[str] | None:
        """The pack's `[leak] outcome_patterns` as one regex (None without any)."""
        found = self.leak.outcome_patterns
        return re.compile("|".join(f"(?:{p})" for p in found), re.IGNORECASE) if found else None

    def checklist(self, doc_type: str) -> list[str]:
        return self.checklists.get(doc_type) or self.checklists.get("default") or []

    def evidence_corpus(self) -> str | None:
        """The default evidence corpus: a name such as "medquad" as it is, a relative path against the
        pack's folder."""
        corpus = self.evidence.corpus
        if not corpus or corpus == "medquad" or self.folder is None or Path(corpus).is_absolute():
            return corpus or None
        return str(self.folder / corpus)

    def prompt(self, name: str) -> str:
        """The text of `prompts/<name>.txt`; a pack without it is an error naming both."""
        from livemed.errors import ConfigError

        if name not in self.prompts:
            raise ConfigError(
                f"domain pack {self.name!r} has no prompt {name!r}: write prompts/{name}.txt in its folder, "
                'or add extends = "medical" to its pack.toml'
            )
        return self.prompts[name]

    def render(self, name: str, **parts: str) -> str:
        """Prompt `name` with each `{part}` filled in one pass: text put in is never scanned again, so
        a data block that happens to contain "{query}" stays as it is. Unknown `{words}` stay too."""
        return fill(self.prompt(name), **parts)


_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def fill(template: str, **parts: str) -> str:
    """`template` with every `{name}` given in `parts` replaced, in a single pass."""
    return _PLACEHOLDER.sub(lambda m: parts.get(m.group(1), m.group(0)), template)
