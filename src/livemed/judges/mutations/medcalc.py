"""MedCalc candidates: relative errors of controlled size, unit slips, rounding errors, a related but
wrong calculator, recomputation from perturbed inputs; dates shifted, gestational ages off by days.
A gold value of 0 (where every relative error and unit slip is 0 too) gets additive errors instead:
1, 2, 5 and 10 steps of the calculator's unit (`ADDITIVE_STEP`)."""

from __future__ import annotations

import random
from datetime import timedelta

from livemed.judges import calculators as C
from livemed.judges.datasets.items import CalcItem
from livemed.judges.metrics import (
    DATE_CALCULATORS,
    GESTATIONAL_AGE,
    format_age,
    medcalc_correct,
    parse_age,
    parse_date,
    squared_error,
)
from livemed.records import Candidate

RELATIVE = (0.02, 0.1, 0.25, 0.5)  # sizes of the relative errors
UNIT_SLIPS = {"x10": 10.0, "div10": 0.1, "lb_kg": 2.20462}
DATE_SHIFTS = (1, 7, 14, 30)
AGE_SHIFTS = (1, 3, 7, 14)  # days
PERTURB = 0.2  # relative change of one input when recomputing
ADDITIVE = (1, 2, 5, 10)  # sizes of the additive errors of a zero gold value, in steps
# One step of the calculators whose MedCalc-Bench v1.0 rows have a gold value of 0: Wells' PE points
# come in halves, the Framingham hard-CHD risk is a percentage under 1 there, the delta ratio a ratio;
# any other calculator's step is one unit (a score point, one mEq/L of a gap).
ADDITIVE_STEP: dict[int, float] = {8: 0.5, 46: 0.1, 64: 0.1}
SIGNED = frozenset({63, 64, 66})  # delta gap, delta ratio, albumin-corrected delta gap: may be negative
Made = list[tuple[str, str, list[str], dict[str, object] | None]]  # (id, answer, operators, inputs shown)


def _fmt(value: float, item: CalcItem) -> str:
    if item.output_type == "integer":
        return str(round(value))
    return f"{value:.3f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.6g}"


def answer_text(item: CalcItem, answer: str, inputs: dict[str, object] | None = None) -> str:
    """A model-like response: the values read from the note, the calculator, the answer."""
    values = inputs if inputs is not None else item.entities
    shown = "; ".join(f"{k}: {_show(v)}" for k, v in list(values.items())[:8])
    return (
        f"Values taken from the note: {shown}.\nApplying the {item.calculator} gives the result."
        f"\nAnswer: {answer}"
    )


def _show(value: object) -> str:
    if isinstance(value, list | tuple) and len(value) == 2:
        return f"{value[0]} {value[1]}"
    return str(value)


def _additive(item: CalcItem, rng: random.Random) -> Made:
    """Errors of 1, 2, 5 and 10 steps from a zero gold value (upward, or a seeded sign where the
    calculator's value may be negative)."""
    step = ADDITIVE_STEP.get(item.calculator_id, 1.0)
    out: Made = []
    for size in ADDITIVE:
        sign = rng.choice((1, -1)) if item.calculator_id in SIGNED else 1
        moved = sign * size * step
        out.append((f"add:{size}", _fmt(moved, item), [f"additive_error:{moved:+g}"], None))
    return out


def _numeric(item: CalcItem, rng: random.Random) -> Made:
    gold = float(item.answer)
    out: Made = _additive(item, rng) if gold == 0 else []
    for size in RELATIVE:
        sign = rng.choice((1, -1))
        out.append(
            (
                f"rel:{size:g}",
                _fmt(gold * (1 + sign * size), item),
                [f"relative_error:{sign * size:+g}"],
                None,
            )
        )
    for name, factor in UNIT_SLIPS.items():
        out.append((f"unit:{name}", _fmt(gold * factor, item), [f"unit_slip:{name}"], None))
    if item.output_type == "integer":
        step = rng.choice((1, -1))
        out.append(("round:off1", _fmt(gold + step, item), [f"rounding:off_by_{step:+d}"], None))
    else:
        out.append(("round:int", str(round(gold)), ["rounding:integer"], None))
        out.append(("round:sig1", f"{float(f'{gold:.1g}'):g}", ["rounding:one_significant_figure"], None))
    out.extend(_formula_candidates(item, rng))
    return out


def _formula_candidates(item: CalcItem, rng: random.Random) -> Made:
    out: Made = []
    for other in C.RELATED.get(item.calculator_id, ()):
        try:
            value = C.compute(other, item.entities)
        except C.Unsupported:
            continue
        out.append((f"calc:{other}", _fmt(value, item), [f"wrong_calculator:{other}"], None))
    if item.calculator_id not in C.FORMULAS:
        return out
    for name in C.numeric_inputs(item.entities):
        sign = rng.choice((1, -1))
        value, unit = item.entities[name]
        changed = dict(item.entities)
        changed[name] = [round(value * (1 + sign * PERTURB), 3), unit]
        try:
            result = C.compute(item.calculator_id, changed)
        except C.Unsupported:
            continue
        out.append(
            (f"input:{name}", _fmt(result, item), [f"perturbed_input:{name}:{sign * PERTURB:+g}"], changed)
        )
    return out


def _dates(item: CalcItem, rng: random.Random) -> Made:
    gold = parse_date(item.answer)
    out: Made = []
    for days in DATE_SHIFTS:
        sign = rng.choice((1, -1))
        shifted = gold + timedelta(days=sign * days)
        out.append((f"date:{days}", shifted.strftime("%m/%d/%Y"), [f"date_shift:{sign * days:+d}d"], None))
    return out


def _ages(item: CalcItem, rng: random.Random) -> Made:
    weeks, days = parse_age(item.answer)
    total = weeks * 7 + days
    out: Made = []
    for shift in AGE_SHIFTS:
        sign = rng.choice((1, -1)) if total - shift >= 0 else 1
        moved = total + sign * shift
        out.append((f"age:{shift}", format_age(*divmod(moved, 7)), [f"age_shift:{sign * shift:+d}d"], None))
    return out


def candidates(item: CalcItem, seed: int) -> list[Candidate]:
    """Gold plus every mutation (seeded signs), ranked by squared error; duplicates of a value kept once."""
    rng = random.Random(f"{seed}:medcalc:{item.item_id}")
    if item.calculator_id in DATE_CALCULATORS:
        made = _dates(item, rng)
    elif item.calculator_id == GESTATIONAL_AGE:
        made = _ages(item, rng)
    else:
        made = _numeric(item, rng)
    out = [_candidate(item, "gold", item.answer, ["gold"], None)]
    seen = {item.answer}
    for cid, answer, operators, inputs in made:
        if answer not in seen:
            seen.add(answer)
            out.append(_candidate(item, cid, answer, operators, inputs))
    return out


def _candidate(
    item: CalcItem, cid: str, answer: str, operators: list[str], inputs: dict[str, object] | None
) -> Candidate:
    return Candidate(
        id=cid,
        text=answer_text(item, answer, inputs),
        answer=answer,
        operators=operators,
        metric=squared_error(item, answer),
        higher_better=False,
        correct=medcalc_correct(item, answer),
    )
