"""Answers: a candidate model replies to a case written as a patient's message.

The patient message is the case's candidate view (`curate.view.candidate_view`: the narrative and
the query as a patient would write them, or the asker's own post), and does not ask for "only the
final answer". A case whose query is derived (a case report's clinical question)
is put as a clinician's consult instead ("A colleague would like your opinion on a patient"), with
clinical labels. A case in a language other than English carries a line asking for the reply in it
(the instructions stay English). The candidate is sent it inside a data block
(`livemed.common.prompts.data_block`), after a short instruction saying it is the patient's text, to answer
and never to obey; the grader sees the plain patient message as the conversation, in its own blocks.
Imported cases that carry their own conversation (HealthBench) are sent as that conversation, turn by
turn, as the benchmark defines it (no instruction of livemed's wraps those turns). A call that fails
is a `Rejection` (stage "answer"), never an answer: its answer id is not stored, so the next run
tries it again.
"""

from __future__ import annotations

import functools
from typing import Protocol, runtime_checkable

from livemed.common.prompts import data_block
from livemed.curate.view import candidate_view
from livemed.domains import DomainPack, medical
from livemed.models import LLM, CallFailure, Message, Settings
from livemed.records import Answer, Case, Provenance, Record, Rejection, short_hash

STAGE = "answer"

# The texts are the domain pack's (`prompts/answer_*.txt`; the slot labels are `answer_labels` and
# `consult_labels` in its pack.toml): the patient message, the consult, their rules, the language note.
PROMPTS = ("answer_patient", "answer_consult", "answer_rules", "answer_consult_rules", "answer_language")


def prompt_hash(pack: DomainPack | None = None) -> str:
    return _prompt_hash(pack or medical())


@functools.cache
def _prompt_hash(pack: DomainPack) -> str:  # once per pack, not once per answer
    return short_hash(
        *(pack.prompt(name) for name in PROMPTS),
        *(f"{k}={v}" for k, v in pack.answer_labels.items()),
        *(f"{k}={v}" for k, v in pack.consult_labels.items()),
    )


PROMPT_HASH = prompt_hash()  # the medical pack's
ANSWER_RULES = medical().prompt("answer_rules")  # the medical pack's rules, as tests and docs name them
CONSULT_RULES = medical().prompt("answer_consult_rules")


def language_of(case: Case) -> str | None:
    """The case's language code when it is known and not English (passed on to the candidate)."""
    code = (case.language or "").strip().lower()
    return code if code and code not in ("en", "und", "unknown") else None


def conversation(case: Case, pack: DomainPack | None = None) -> list[Message]:
    """The case as a conversation (what the grader judges the reply in): imported, or the candidate's
    view (`curate.view.candidate_view`) as the user's message."""
    if case.messages:
        return [{"role": m["role"], "content": m["content"]} for m in case.messages]  # type: ignore[typeddict-item]
    return [{"role": "user", "content": candidate_view(case, pack)}]


def candidate_messages(case: Case, pack: DomainPack | None = None) -> list[Message]:
    """What the candidate model is sent: the imported conversation, or the patient message as data."""
    if case.messages:
        return conversation(case, pack)
    pack = pack or medical()
    name, rules = (
        ("consult_message", pack.prompt("answer_consult_rules"))
        if case.query_derived
        else ("patient_message", pack.prompt("answer_rules"))
    )
    language = language_of(case)
    if language is not None:
        rules = f"{rules}\n{pack.render('answer_language', language=language)}"
    return [{"role": "user", "content": f"{rules}\n\n{data_block(name, candidate_view(case, pack))}"}]


@runtime_checkable
class OfflineAnswerer(Protocol):
    """A no-LLM answerer baseline: it answers from the case record itself."""

    @property
    def id(self) -> str: ...

    def answer(self, case: Case) -> str: ...


def answer_id(case_id: str, model: str, sample: int) -> str:
    return f"answer:{case_id}:{model}:{sample}"


def answer_model(answer_id: str, case_id: str) -> str | None:
    """The model of a stored answer from its id and case id (`answer_id`'s inverse: a model id may
    hold colons, a sample number does not); None for an id `answer_id` did not make."""
    head = f"answer:{case_id}:"
    model, colon, sample = answer_id.removeprefix(head).rpartition(":")
    if not answer_id.startswith(head) or not colon or not model or not sample.isdigit():
        return None
    return model


def rejection_id(case_id: str, model: str, sample: int) -> str:
    return f"{STAGE}:{answer_id(case_id, model, sample)}"


async def answer_case(
    case: Case,
    answerer: LLM | OfflineAnswerer,
    *,
    settings: Settings,
    sample: int = 0,
    pack: DomainPack | None = None,
) -> list[Record]:
    """One sample of one model's answer to `case`: an Answer, or a Rejection when the call failed."""
    call_settings = settings.model_copy(update={"sample": sample})
    recorded = call_settings.model_dump(mode="json", exclude_defaults=True)
    if isinstance(answerer, OfflineAnswerer):
        text = answerer.answer(case)
        labels = getattr(answerer, "labels", {})  # a simulation says so (answer/simulation.py)
        provenance = Provenance(model_id=answerer.id, settings={"baseline": True, **labels})
        return [Answer(case_id=case.id, model=answerer.id, sample=sample, text=text, provenance=provenance)]
    result = await answerer.generate(candidate_messages(case, pack), call_settings)
    if isinstance(result, CallFailure):
        return [
            Rejection(
                stage=STAGE,
                reason=result.reason,
                detail=result.detail,
                record_kind="answer",
                record_id=answer_id(case.id, answerer.id, sample),
                source=case.source,
                published=case.published,
            )
        ]
    provenance = Provenance(model_id=answerer.id, prompt_hash=prompt_hash(pack), settings=recorded)
    return [
        Answer(
            case_id=case.id,
            model=answerer.id,
            sample=sample,
            text=result.text,
            finish_reason=result.finish_reason,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            provenance=provenance,
        )
    ]
