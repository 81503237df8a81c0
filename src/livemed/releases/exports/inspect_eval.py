"""An Inspect AI task over an exported release (`inspect` export): livemed's prompts, grader and score.

Used by the exported `livemed_task.py`; needs `inspect-ai` (`pip install 'livemed[inspect]'`). Each
sample is one case: the candidate model answers livemed's patient prompt (`candidate_messages`); the
grader (`-T grader=...`, else the evaluated model) judges each criterion with livemed's own
per-criterion prompt (`grade.grader.per_criterion_messages`, temperature 0); the sample's score is
livemed's case score (`score.formula.case_score`, convention livemed). A verdict that cannot be read
is not a score: the scorer raises (`UnreadableVerdicts`), so Inspect records the sample as an error
(and, by its default `fail_on_error`, fails the eval) rather than a number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import Sample, json_dataset
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    get_model,
)
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState, generate

from livemed.grade.grader import Verdict, per_criterion_messages
from livemed.models import Message
from livemed.models.structured import parse_as
from livemed.records import Criterion
from livemed.score import formula as S


def _chat(messages: list[dict[str, str]]) -> list[ChatMessage]:
    kinds: dict[str, Any] = {"system": ChatMessageSystem, "assistant": ChatMessageAssistant}
    return [kinds.get(m["role"], ChatMessageUser)(content=m["content"]) for m in messages]


def _sample(record: dict[str, Any]) -> Sample:
    return Sample(
        id=record["id"],
        input=_chat(record["input"]),
        target=record["content_hash"],
        metadata={"conversation": record["conversation"], "criteria": record["criteria"]},
    )


class UnreadableVerdicts(RuntimeError):
    """The grader's reply to some criteria of a sample could not be read: the sample has no score."""


@scorer(metrics=[mean(), stderr()])
def livemed_rubric(grader: str | None = None) -> Scorer:
    """livemed's case score of the reply, one grader call per criterion."""

    async def score(state: TaskState, target: Target) -> Score:
        model = get_model(grader) if grader else get_model()
        convo: list[Message] = state.metadata["conversation"]
        response = state.output.completion
        items, unreadable, verdicts = [], [], {}
        for raw in state.metadata["criteria"]:
            criterion = Criterion.model_validate(raw)
            messages = per_criterion_messages(convo, response, criterion)
            reply = await model.generate(_chat(messages), config=GenerateConfig(temperature=0))  # type: ignore[arg-type]
            verdict, reason = parse_as(Verdict, reply.completion)
            if verdict is None:
                unreadable.append(f"{criterion.id}: {reason}")
                continue
            verdicts[criterion.id] = verdict.criteria_met
            items.append(S.Item(criterion.value, verdict.criteria_met, axis=criterion.axis))
        if unreadable:
            n = len(state.metadata["criteria"])
            raise UnreadableVerdicts(
                f"sample {state.sample_id}: {len(unreadable)} of {n} grader verdicts unreadable "
                f"(the first: {unreadable[0]:.200}); no score"
            )
        value = S.case_score(items, "livemed", "strict")
        if value is None:  # the export leaves such rubrics out; a hand-edited file may not
            raise ValueError(f"sample {state.sample_id}: its rubric has no positive criterion to score")
        return Score(
            value=value,
            answer=response,
            metadata={"verdicts": verdicts},
        )

    return score


def release_task(samples: Path, *, name: str, grader: str | None = None) -> Task:
    """The Inspect task of an exported release's `samples.jsonl`."""
    return Task(
        dataset=json_dataset(str(samples), sample_fields=_sample, name=f"livemed-{name}"),
        solver=[generate()],
        scorer=livemed_rubric(grader),
        config=GenerateConfig(temperature=0),
    )
