"""The fake server's replies for `tests/fixtures/healthbench/grader_examples.jsonl`, the same to
openai/simple-evals' HealthBench runner (when its grader requests were recorded) and to livemed (when
its requests are checked against that record): `tests/fixtures/healthbench/record_grader_requests.py`
and `tests/grade/test_healthbench_setup.py`.

- a candidate request (any model but the grader) gets the example's ideal completion, found by the
  conversation it sends;
- a grader request (model `GRADER`) gets a verdict in a ```json fence, as HealthBench's template asks:
  met for an item with positive points, not met for one with negative points; except that the first
  request grading `ASKED_TWICE` gets a reply that is no JSON, so the grader asks again.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import Behavior, Responder

EXAMPLES = Path(__file__).resolve().parent.parent / "fixtures" / "healthbench" / "grader_examples.jsonl"
RECORDED = EXAMPLES.with_name("grader_requests.json")
GRADER = "gpt-4.1-2025-04-14"  # simple-evals' grader model
ASKED_TWICE = "Advises giving aspirin to the child to bring the fever down."
NOT_JSON = "The response meets the rubric item."
_ITEM = re.compile(r"^\[(-?[0-9.]+)\] (.*)$", re.MULTILINE)


def examples() -> list[dict[str, Any]]:
    return [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line]


def responder() -> Responder:
    """A responder with its own memory of which items it was asked to grade already."""
    completions = {_key(e["prompt"]): e["ideal_completions_data"]["ideal_completion"] for e in examples()}
    seen: set[str] = set()
    lock = threading.Lock()

    def respond(body: dict[str, Any]) -> Behavior:
        messages = body["messages"]
        if body["model"] != GRADER:
            return Behavior(text=completions[_key(messages)])
        prompt = next(m["content"] for m in messages if m["role"] == "user")  # not a repair turn
        points, item = _ITEM.findall(prompt)[-1]
        with lock:
            first = item not in seen
            seen.add(item)
        if item == ASKED_TWICE and first:
            return Behavior(text=NOT_JSON)
        met = not points.startswith("-")
        verdict = {"explanation": f"fake verdict on: {item}", "criteria_met": met}
        return Behavior(text=f"```json\n{json.dumps(verdict, indent=2)}\n```")

    return respond


def _key(messages: list[dict[str, Any]]) -> str:
    return json.dumps([[m["role"], m["content"]] for m in messages if m["role"] != "system"])
