"""Reasons before verdicts: every reply schema livemed sends, and every JSON reply its prompts show, puts
the reason field first (after an identifier such as a criterion's number) and requires it.

The schemas are collected from the source, not listed by hand: every `.structured(messages, Schema, …)`
and `generate_structured(model, messages, Schema)` call, following a schema passed in as a parameter one
call up (the rubric writer's `_step`). Each one is either a verdict schema (checked) or named below as a
generation schema, with why it has no verdict; a new schema must be one or the other.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import livemed
from livemed.domains import load_pack
from livemed.models.structured import json_schema_of

SRC = Path(livemed.__file__).parent
REASONS = ("explanation", "rationale")
IDENTIFIERS = ("id", "index", "advice_index")  # may come before the reason: they say what it is about
GENERATION = {  # schemas that extract or write text and give no verdict on it
    "ScreenerOutput": "the Screener extracts the case's narrative, query and advice",
    "ThemedFacts": "rubric step 1 lists the advice's facts",
    "FormulatedList": "rubric step 2 writes criteria",
    "WeightedList": "rubric step 3 weighs criteria",
    "Patch": "the rubric repair rewrites criteria",
    "CheckReply": "`models check` tests that a JSON schema is honoured",
}
BUILT = {"screener_output": "ScreenerOutput"}  # schema builders (the pack's narrative slots) -> their class
SCHEMA_ARG = {"structured": 1, "generate_structured": 2}  # the schema's position in the call


def _calls(tree: ast.AST) -> Iterator[tuple[ast.Call, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            yield node, name


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _schema_names(tree: ast.Module) -> Iterator[str]:
    """The class names passed as the reply schema of a structured call in one module."""
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for function in functions:
        params = [a.arg for a in function.args.args]
        for call, name in _calls(function):
            if name not in SCHEMA_ARG:
                continue
            arg = _argument(call, SCHEMA_ARG[name], "schema")
            if isinstance(arg, ast.Call) and getattr(arg.func, "id", "") in BUILT:
                yield BUILT[getattr(arg.func, "id", "")]  # a schema built per pack from this class
                continue
            assert isinstance(arg, ast.Name), f"{function.name}: a structured call's schema is not a name"
            if arg.id not in params:
                yield arg.id
                continue
            position = params.index(arg.id)  # a parameter: the classes the callers pass
            for outer, outer_name in _calls(tree):
                if outer_name == function.name:
                    passed = _argument(outer, position, arg.id)
                    assert isinstance(passed, ast.Name), f"a call of {function.name} passes no schema name"
                    yield passed.id


def reply_schemas() -> dict[str, type[BaseModel]]:
    """Every reply schema livemed asks a model for, by class name (the generic `livemed.models` layer,
    which passes its callers' schemas on, is left out)."""
    found: dict[str, type[BaseModel]] = {}
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC.parent).with_suffix("")
        if relative.parts[1] == "models":
            continue
        text = path.read_text(encoding="utf-8")
        if not any(f"{name}(" in text for name in SCHEMA_ARG):
            continue
        module = importlib.import_module(".".join(relative.parts))
        for name in _schema_names(ast.parse(text)):
            schema = getattr(module, name)
            assert issubclass(schema, BaseModel), f"{relative}: {name} is not a pydantic model"
            found[name] = schema
    return found


SCHEMAS = reply_schemas()
VERDICTS = sorted(set(SCHEMAS) - set(GENERATION))


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref") or node.get("items", {}).get("$ref")
    return schema["$defs"][ref.rsplit("/", 1)[-1]] if ref else node


def verdict_object(schema: dict[str, Any]) -> dict[str, Any]:
    """The object that holds the verdicts: the schema itself, or the items of a wrapper whose only field
    is a list of objects (`{"verdicts": [...]}`, `{"scores": [...]}`)."""
    properties = schema["properties"]
    if len(properties) == 1:
        (only,) = properties.values()
        if only.get("type") == "array" and "$ref" in only.get("items", {}):
            return _resolve(schema, only)
    return schema


def reason_problem(model: type[BaseModel]) -> str | None:
    """Why `model`'s JSON schema does not put a required reason first, or None."""
    schema = json_schema_of(model)
    target = verdict_object(schema)
    keys = [k for k in target["properties"] if k not in IDENTIFIERS]
    if not keys or keys[0] not in REASONS:
        return f"first field after the identifiers is {keys[:1]}, not one of {REASONS}"
    reason = keys[0]
    if reason not in target.get("required", []):
        return f"{reason} is not required"
    if target["properties"][reason].get("minLength", 0) < 1:
        return f"{reason} may be empty"
    return None


def test_every_reply_schema_is_classified_and_the_collection_finds_them() -> None:
    assert set(GENERATION) <= set(SCHEMAS)  # no stale name
    expected = {"Verdict", "BatchVerdict", "QueryCheck", "AlignmentOutput", "Diagnosis"}
    assert expected <= set(VERDICTS), sorted(SCHEMAS)


@pytest.mark.parametrize("name", VERDICTS)
def test_a_verdict_schema_puts_its_required_reason_first(name: str) -> None:
    assert reason_problem(SCHEMAS[name]) is None, f"{name}: {reason_problem(SCHEMAS[name])}"


class _Late(BaseModel):
    criteria_met: bool
    explanation: str


class _Optional(BaseModel):
    explanation: str = ""
    criteria_met: bool


def test_the_check_catches_a_late_or_optional_reason() -> None:
    assert reason_problem(_Late) is not None
    assert "not required" in str(reason_problem(_Optional))


# the JSON replies the prompts show: a reason key must come before every verdict key in them
VERDICT_KEYS = ("criteria_met", "category", "score", "grounded", "s_cc", "query_type", "present")
_SHOWN_JSON = re.compile(r"\{\{?\"[^\n]*(?:\n[^\n{]*\"[a-z_]+\":[^\n]*)*")


def prompt_texts() -> dict[str, str]:
    from livemed.analysis.diagnose import _system
    from livemed.judges.templates import PAIRWISE_FORMAT, POINTWISE_FORMAT

    packs = [load_pack(name) for name in ("medical", "legal")]
    texts = {f"{pack.name}/{name}": text for pack in packs for name, text in pack.prompts.items()}
    texts["taxonomy"] = _system()
    texts["judges/pairwise"], texts["judges/pointwise"] = PAIRWISE_FORMAT, POINTWISE_FORMAT
    return texts


def shown_replies(text: str) -> list[str]:
    """Each JSON reply a prompt shows (from its opening brace, over its continuation lines)."""
    return [m.group() for m in _SHOWN_JSON.finditer(text)]


def test_every_json_reply_a_prompt_shows_has_its_reason_before_its_verdict() -> None:
    checked = 0
    for name, text in prompt_texts().items():
        for shown in shown_replies(text):
            verdicts = [shown.find(f'"{key}"') for key in VERDICT_KEYS if f'"{key}"' in shown]
            if not verdicts:
                continue  # a rubric writer's output: no verdict
            reasons = [shown.find(f'"{key}"') for key in REASONS if f'"{key}"' in shown] or [len(shown)]
            assert min(reasons) < min(verdicts), f"{name}: {shown!r}"
            checked += 1
    assert checked >= 5  # the grader's two formats in both packs, and the taxonomy's


def test_the_shown_reply_check_reads_a_late_reason() -> None:
    late = 'Reply with JSON: {"category": "CNIF", "rationale": "…"}'
    (shown,) = shown_replies(late)
    assert shown.find('"category"') < shown.find('"rationale"')
    assert json.loads(shown)  # the whole object was read
