"""A grader prompt of the user's own (`--grader-template FILE`), e.g. HealthBench's from simple-evals.

livemed bundles no one else's prompt text: a user points `--grader-template` at a file. Two placeholder
styles are understood (a template uses one of them):

- livemed's: `{conversation}` (the conversation before the reply, one data block per turn),
  `{response}` (the reply, a data block), `{criterion}` (a data block, points in its label) and
  `{points}` (the criterion's points as a number); the three block placeholders each on a line of
  their own;
- HealthBench's: `<<conversation>>` (the conversation WITH the reply as its last assistant turn,
  written as simple-evals writes it: `role: content` turns joined by blank lines) and
  `<<rubric_item>>` (`[points] criterion`). These keep simple-evals' bytes so scores stay comparable
  with published HealthBench numbers; the outside text in them is still defused
  (`livemed.prompts.neutralise`: no text can forge a data-block delimiter).

The template must ask for `{"explanation": ..., "criteria_met": true|false}` (HealthBench's does). Its
sha256 short hash is the graded records' `prompt_hash`, and it is part of the judge's id
(`model@tpl-<hash>`), so grades under another template are other grades (never mixed or skipped).
Placeholders are replaced as plain text (a template's own JSON braces are left alone).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from livemed.errors import ConfigError
from livemed.models import LLM, Message
from livemed.prompts import data_block, neutralise
from livemed.records import Criterion, short_hash

LIVEMED_PLACEHOLDERS = ("{conversation}", "{response}", "{criterion}", "{points}")
HEALTHBENCH_PLACEHOLDERS = ("<<conversation>>", "<<rubric_item>>")


@dataclass(frozen=True)
class GraderTemplate:
    text: str
    name: str = "template"

    @property
    def hash(self) -> str:
        return short_hash(self.text)

    @property
    def healthbench(self) -> bool:
        return "<<conversation>>" in self.text

    @property
    def label(self) -> str:
        return f"tpl-{self.hash}"


def parse_template(text: str, name: str = "template") -> GraderTemplate:
    """A template, checked: one placeholder style, with a conversation and a criterion placeholder."""
    livemed = [p for p in LIVEMED_PLACEHOLDERS if p in text]
    healthbench = [p for p in HEALTHBENCH_PLACEHOLDERS if p in text]
    if livemed and healthbench:
        raise ConfigError(f"grader template {name}: mixes {{...}} and <<...>> placeholders; use one style")
    if healthbench and len(healthbench) < 2:
        raise ConfigError(f"grader template {name}: needs both <<conversation>> and <<rubric_item>>")
    if not healthbench and not {"{conversation}", "{response}", "{criterion}"} <= set(livemed):
        raise ConfigError(
            f"grader template {name}: needs {{conversation}}, {{response}} and {{criterion}} "
            "(or HealthBench's <<conversation>> and <<rubric_item>>)"
        )
    for block in ("{conversation}", "{response}", "{criterion}"):
        if block in text and not re.search(rf"^{re.escape(block)}$", text, re.MULTILINE):
            raise ConfigError(
                f"grader template {name}: put {block} on a line of its own (it is a data block)"
            )
    return GraderTemplate(text=text, name=name)


def load_template(path: Path) -> GraderTemplate:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read grader template {path}: {exc}") from None
    return parse_template(text, path.name)


def points_text(criterion: Criterion) -> str:
    value = criterion.value
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def template_prompt(
    template: GraderTemplate, convo: list[Message], response: str, criterion: Criterion
) -> str:
    """The template with its placeholders filled for one (conversation, response, criterion)."""
    points = points_text(criterion)
    if template.healthbench:
        turns: list[Message] = [*convo, {"role": "assistant", "content": response}]
        conversation = "\n\n".join(f"{m['role']}: {neutralise(m['content'])}" for m in turns)
        item = f"[{points}] {neutralise(criterion.text)}"
        return _fill(template.text, {"<<conversation>>": conversation, "<<rubric_item>>": item})
    blocks = "\n\n".join(
        data_block("turn", m["content"], role=m["role"], n=n) for n, m in enumerate(convo, start=1)
    )
    values = {
        "{conversation}": blocks,
        "{response}": data_block("response", response),
        "{criterion}": data_block("criterion", criterion.text, points=points),
        "{points}": points,
    }
    return _fill(template.text, values)


def _fill(text: str, values: dict[str, str]) -> str:
    """Every placeholder replaced in one pass (a value that contains a placeholder is left as it is)."""
    pattern = re.compile("|".join(re.escape(p) for p in values))
    return pattern.sub(lambda m: values[m.group()], text)


@dataclass
class TemplatedLLM(LLM):
    """A judge that grades with a user's template; its id names the template (`model@tpl-<hash>`)."""

    template: GraderTemplate = field(default_factory=lambda: GraderTemplate(""))

    @property
    def id(self) -> str:
        return f"{self.model.id}@{self.template.label}"


def with_template(judge: LLM, template: GraderTemplate) -> TemplatedLLM:
    return TemplatedLLM(judge.engine, judge.model, judge.stage, judge.refresh, template=template)
