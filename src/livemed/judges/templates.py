"""The judge prompts: pairwise (reasoning in `<think>…</think>`, verdict `<answer>[[A]]</answer>` or
`[[B]]`) and pointwise (`<score>0–10</score>`), with per-task instructions.

Every outside text (the benchmark item, the candidate responses) goes through `data_block`.
`PROMPT_HASHES` go into the provenance of every verdict, so a changed template is a new judge
configuration. These builders are shared with judge training (stable names and signatures)."""

from __future__ import annotations

from livemed.common.prompts import DATA_RULES, data_block
from livemed.judges.datasets.items import CalcItem, ChoiceItem, Item, PicoItem
from livemed.models import Message
from livemed.records import Candidate, Pair, short_hash
from livemed.records.judging import JudgeMode, Order

SYSTEM = (
    "You are an impartial evaluator. You judge how well assistant responses fulfil the user's "
    "instructions for a biomedical task, using the task's source text and instructions."
)

INSTRUCTIONS: dict[str, str] = {
    "pubmedqa": "Answer the research question about the abstract with yes, no or maybe, after a short "
    "rationale; end with a line 'Answer: <yes|no|maybe>'.",
    "medqa": "Choose the single best option for the clinical question, after a short rationale; end with "
    "a line 'Answer: <letter>'.",
    "medbullets": "Choose the single best option for the clinical question, after a short rationale; end "
    "with a line 'Answer: <letter>'.",
    "medcalc": "Compute the value the question asks for from the patient note, after a short rationale; "
    "end with a line 'Answer: <value>' (a number; a date as MM/DD/YYYY; a gestational age as "
    "('<weeks> weeks', '<days> days')).",
    "pico": "Extract the Population, Intervention, Comparison and Outcome of the trial as short verbatim "
    "strings from the abstract, and give them as a JSON object with keys P, I, C and O, each a list of "
    "strings.",
}

PAIRWISE_FORMAT = """Compare the two assistant responses (the blocks named "response", slots A and B) to
the task (the block named "source") under the task's instructions below. Decide which response follows
the instructions better and gives the higher-quality, more correct answer.

Task instructions: {instruction}

{blocks}

{rules}

First reason inside <think>…</think>. Then give your verdict inside <answer>…</answer> as exactly
[[A]] or [[B]], and write nothing after it: <think>your reasoning</think><answer>[[A]]</answer>
A strict parser reads your reply: it must be one <think> block with some reasoning, closed by
</think>, then exactly <answer>[[A]]</answer> or <answer>[[B]]</answer>, with nothing before, between
or after them. A reply without the answer, with the reasoning left open (no </think>), with text
outside the tags, with two answers or anything but [[A]] or [[B]] in the answer counts as invalid."""

POINTWISE_FORMAT = """Evaluate the assistant response (the block named "response") to the task (the
block named "source") under the task's instructions below: how well it follows the instructions and how
correct and high-quality its answer is.

Task instructions: {instruction}

{blocks}

{rules}

First reason inside <think>…</think>. Then give a score from 0 (worst) to 10 (best), an integer or one
decimal, inside <score>…</score>, and write nothing after it: <think>your reasoning</think><score>7</score>
A strict parser reads your reply: it must be one <think> block with some reasoning, closed by
</think>, then exactly one <score>…</score> holding a number from 0 to 10 (an integer or one decimal),
with nothing before, between or after them. A reply without the score, with the reasoning left open
(no </think>), with text outside the tags, with two scores or a score out of range counts as invalid."""

PROMPT_HASHES: dict[JudgeMode, str] = {
    "pairwise": short_hash(SYSTEM, PAIRWISE_FORMAT, *sorted(INSTRUCTIONS.values())),
    "pointwise": short_hash(SYSTEM, POINTWISE_FORMAT, *sorted(INSTRUCTIONS.values())),
}


def instruction(dataset: str) -> str:
    """The task instruction for a dataset (the candidates' task, which the judge checks against)."""
    return INSTRUCTIONS[dataset]


def source_text(item: Item) -> str:
    """The task as the candidates saw it: the abstract, note or question (and options)."""
    if isinstance(item, PicoItem):
        return f"Abstract:\n{item.text}"
    if isinstance(item, CalcItem):
        return f"Patient note:\n{item.note}\n\nQuestion: {item.question}"
    assert isinstance(item, ChoiceItem)
    if item.dataset == "pubmedqa":
        return f"Abstract:\n{item.context}\n\nQuestion: {item.question}"
    options = "\n".join(f"{key}. {text}" for key, text in item.options.items())
    return f"Question: {item.question}\n\nOptions:\n{options}"


def pairwise_messages(pair: Pair, order: Order = "original") -> list[Message]:
    """System + user messages asking for a pairwise verdict on `pair` in the given slot order."""
    first, second, _ = pair.slots(order)
    blocks = "\n\n".join(
        (
            data_block("source", pair.question, dataset=pair.dataset),
            data_block("response", first.text, slot="A"),
            data_block("response", second.text, slot="B"),
        )
    )
    user = PAIRWISE_FORMAT.format(instruction=pair.instruction, blocks=blocks, rules=DATA_RULES)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def pointwise_messages(pair: Pair, candidate: Candidate) -> list[Message]:
    """System + user messages asking for a 0–10 score of one candidate of `pair`."""
    blocks = "\n\n".join(
        (data_block("source", pair.question, dataset=pair.dataset), data_block("response", candidate.text))
    )
    user = POINTWISE_FORMAT.format(instruction=pair.instruction, blocks=blocks, rules=DATA_RULES)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
