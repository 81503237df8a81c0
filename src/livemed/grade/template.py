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
  (`livemed.common.prompts.neutralise`: no text can forge a data-block delimiter).

The template must ask for `{"explanation": ..., "criteria_met": true|false}` (HealthBench's does). Its
sha256 short hash is the graded records' `prompt_hash`, and it is part of the judge's id
(`model@tpl-<hash>`), so grades under another template are other grades (never mixed or skipped).
Placeholders are replaced as plain text (a template's own JSON braces are left alone).

How the filled template is sent is the template's setup (`--grader-setup`):

- `livemed` (the default): the filled template as the one user message, at temperature 0, through
  `LLM.structured` (JSON-schema output where the endpoint takes it, one repair turn, then unusable);
- `healthbench`: as openai/simple-evals' HealthBench runner sends its grader calls
  (`healthbench_eval.py` with `sampler/chat_completion_sampler.py`): the system message "You are a
  helpful assistant.", then the filled template as the user message, temperature 0.5, 2048 max tokens,
  no response format, and the same request sent again until a reply parses as simple-evals parses it
  (`healthbench_reply`). simple-evals asks forever; livemed asks at most the grader model's
  `max_retries` + 1 times (`max_retries` in `[models."ID"]`, default 4: five replies), and a verdict
  that never parses is unusable (`unparsable`), never "not met". Needs HealthBench's placeholders.
  The judge's id is `model@tpl-<hash>-healthbench`, so its grades never mix with the default setup's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, NamedTuple

from livemed.common.prompts import data_block, neutralise
from livemed.errors import ConfigError
from livemed.models import LLM, CallFailure, Message, Settings
from livemed.records import CALL_FAILED, Criterion, short_hash

LIVEMED_PLACEHOLDERS = ("{conversation}", "{response}", "{criterion}", "{points}")
HEALTHBENCH_PLACEHOLDERS = ("<<conversation>>", "<<rubric_item>>")

Setup = Literal["livemed", "healthbench"]
SETUPS: tuple[Setup, ...] = ("livemed", "healthbench")
# simple-evals' grader sampler: `ChatCompletionSampler(model="gpt-4.1-2025-04-14",
# system_message=OPENAI_SYSTEM_MESSAGE_API, max_tokens=2048)`, its temperature the default 0.5.
HEALTHBENCH_SYSTEM = "You are a helpful assistant."
SETUP_SETTINGS: dict[Setup, Settings] = {
    "livemed": Settings(temperature=0),  # grade.grader.JUDGE_SETTINGS
    "healthbench": Settings(temperature=0.5, max_tokens=2048),
}


@dataclass(frozen=True)
class GraderTemplate:
    text: str
    name: str = "template"
    setup: Setup = "livemed"

    @property
    def hash(self) -> str:
        return short_hash(self.text)

    @property
    def healthbench(self) -> bool:
        return "<<conversation>>" in self.text

    @property
    def label(self) -> str:
        return f"tpl-{self.hash}" + ("" if self.setup == "livemed" else f"-{self.setup}")

    @property
    def settings(self) -> Settings:
        """The grader calls' sampling settings under this setup."""
        return SETUP_SETTINGS[self.setup]

    def run_settings(self) -> dict[str, Any]:
        """What a Run, a card and each grade's provenance record of the template and its setup."""
        recorded: dict[str, Any] = {"grader_template": f"{self.name} sha256:{self.hash}"}
        if self.setup != "livemed":
            recorded["grader_setup"] = self.setup
        return recorded


def parse_template(text: str, name: str = "template", setup: str = "livemed") -> GraderTemplate:
    """A template, checked: one placeholder style, with a conversation and a criterion placeholder
    (HealthBench's under the `healthbench` setup)."""
    if setup not in SETUPS:
        raise ConfigError(f"--grader-setup must be one of {', '.join(SETUPS)}, got {setup!r}")
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
    if setup == "healthbench" and not healthbench:
        raise ConfigError(
            f"--grader-setup healthbench sends HealthBench's grader prompt: grader template {name} "
            "needs its <<conversation>> and <<rubric_item>> placeholders"
        )
    return GraderTemplate(text=text, name=name, setup=setup)


def load_template(path: Path, setup: str = "livemed") -> GraderTemplate:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read grader template {path}: {exc}") from None
    return parse_template(text, path.name, setup)


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


def template_messages(
    template: GraderTemplate, convo: list[Message], response: str, criterion: Criterion
) -> list[Message]:
    """The grader call's messages: the filled template as the user message, after HealthBench's system
    message under its setup (as simple-evals' sampler puts it in front)."""
    prompt = template_prompt(template, convo, response, criterion)
    if template.setup == "healthbench":  # simple-evals writes its grader turn as dict(content=…, role="user")
        return [{"role": "system", "content": HEALTHBENCH_SYSTEM}, {"content": prompt, "role": "user"}]
    return [{"role": "user", "content": prompt}]


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


class Reply(NamedTuple):
    """A verdict (`met` True/False, the explanation, the reply as it came), or `met` None with the
    reason there is none (`reason`, a detail in `explanation`)."""

    met: bool | None
    explanation: str
    raw: str
    reason: str = ""


_FENCES = re.compile(r"^```json\s*|\s*```$")


def healthbench_reply(text: str) -> tuple[bool, str] | None:
    """(criteria_met, explanation) when `text` parses as simple-evals' grade loop accepts it: the
    reply stripped, a leading ```json and a trailing ``` removed, the rest a JSON object whose
    `criteria_met` is true or false; else None (simple-evals asks again)."""
    try:
        data = json.loads(_FENCES.sub("", text.strip()))
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("criteria_met"), bool):
        return None
    explanation = data.get("explanation")
    return data["criteria_met"], explanation if isinstance(explanation, str) else ""


async def until_parsed(judge: TemplatedLLM, messages: list[Message]) -> Reply:
    """The HealthBench setup's grade loop: the same request until a reply parses (`healthbench_reply`),
    at most the model's `max_retries` + 1 replies; a failed call ends it (`call_failed`). Each retry
    skips the cached reply (`refresh`), and its reply replaces the cache entry."""
    tries = judge.engine.config.model_settings(judge.model.id).max_retries + 1
    asking: LLM = judge
    raw = ""
    for _ in range(tries):
        result = await asking.generate(messages, judge.template.settings)
        if isinstance(result, CallFailure):
            return Reply(None, f"call failed: {result.detail}", raw, CALL_FAILED)
        raw = result.text
        verdict = healthbench_reply(raw)
        if verdict is not None:
            return Reply(verdict[0], verdict[1], raw)
        asking = replace(judge, refresh=True)
    detail = f"no reply with a true/false criteria_met in {tries} replies (the model's max_retries + 1)"
    return Reply(None, detail, raw, "unparsable")
