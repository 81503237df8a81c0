"""An Inspect AI task over an exported release (`inspect` export): livemed's prompts, grader and score.

Used by the exported `livemed_task.py`; needs `inspect-ai` (`pip install 'livemed[inspect]'`). Each
sample is one case: the candidate model answers livemed's patient prompt (`candidate_messages`); the
grader (`-T grader=...`, else the evaluated model) judges each criterion with livemed's own
per-criterion prompt (`grading.judge.per_criterion_messages`, temperature 0); the sample's score is
livemed's case score (`grading.score.case_score`, convention livemed, a verdict that cannot be read
counts as not met), and the scorer's metadata says how many verdicts could not be read.
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

from livemed.grading import score as S
from livemed.grading.judge import Verdict, per_criterion_messages
from livemed.models import Message
from livemed.models.structured import parse_as
from livemed.records import Criterion


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


@scorer(metrics=[mean(), stderr()])
def livemed_rubric(grader: str | None = None) -> Scorer:
    """livemed's case score of the reply, one grader call per criterion."""

    async def score(state: TaskState, target: Target) -> Score:
        model = get_model(grader) if grader else get_model()
        convo: list[Message] = state.metadata["conversation"]
        response = state.output.completion
        items, unreadable, verdicts = [], 0, {}
        for raw in state.metadata["criteria"]:
            criterion = Criterion.model_validate(raw)
            messages = per_criterion_messages(convo, response, criterion)
            reply = await model.generate(_chat(messages), config=GenerateConfig(temperature=0))  # type: ignore[arg-type]
            verdict, _ = parse_as(Verdict, reply.completion)
            met = None if verdict is None else verdict.criteria_met
            unreadable += met is None
            verdicts[criterion.id] = met
            items.append(S.Item(criterion.value, met, axis=criterion.axis))
        value = S.case_score(items, "livemed", "not-met")
        if value is None:  # the export leaves such rubrics out; a hand-edited file may not
            raise ValueError(f"sample {state.sample_id}: its rubric has no positive criterion to score")
        return Score(
            value=value,
            answer=response,
            metadata={"verdicts": verdicts, "unreadable_verdicts": unreadable},
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
