"""MedCalc formulas livemed implements, over a row's `Relevant Entities` (value, unit) pairs.

Used to make candidates "recomputed from perturbed inputs" and "the value of a related but wrong
calculator". Each formula is checked against rows of MedCalc-Bench v1.0 in the tests; a row whose
inputs are missing or in a unit not converted here raises `Unsupported` (no candidate is made).
Calcium and lipids in mmol/L are not converted: the benchmark's answers for those rows follow no
conversion livemed reproduces."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Entities = dict[str, Any]


class Unsupported(ValueError):
    """The row lacks an input, or gives it in a unit this module does not convert."""


_TO_STANDARD: dict[tuple[str, str], float] = {
    ("height", "cm"): 1.0,
    ("height", "m"): 100.0,
    ("height", "in"): 2.54,
    ("height", "ft"): 30.48,
    ("weight", "kg"): 1.0,
    ("weight", "g"): 0.001,
    ("weight", "lbs"): 0.453592,
    ("weight", "lb"): 0.453592,
    ("mmhg", "mm hg"): 1.0,
    ("mmhg", "mmhg"): 1.0,
    ("mmol", "mmol/l"): 1.0,
    ("mmol", "meq/l"): 1.0,
    ("glucose", "mg/dl"): 1.0,
    ("glucose", "mmol/l"): 18.0156,
    ("bun", "mg/dl"): 1.0,
    ("bun", "mmol/l"): 2.8,
    ("calcium", "mg/dl"): 1.0,
    ("albumin", "g/dl"): 1.0,
    ("albumin", "g/l"): 0.1,
    ("lipid", "mg/dl"): 1.0,
    ("bpm", "beats per minute"): 1.0,
    ("msec", "msec"): 1.0,
    ("bmi", "kg/m^2"): 1.0,
}


def get(entities: Entities, name: str, kind: str) -> float:
    """The entity's value in livemed's standard unit for `kind` (cm, kg, mmHg, mg/dL, …)."""
    if name not in entities:
        raise Unsupported(f"no {name!r}")
    raw = entities[name]
    if not isinstance(raw, list | tuple) or len(raw) != 2:
        raise Unsupported(f"{name!r} has no unit")
    value, unit = raw
    factor = _TO_STANDARD.get((kind, str(unit).lower()))
    if factor is None:
        raise Unsupported(f"{name!r} in {unit!r}")
    return float(value) * factor


def _male(entities: Entities) -> bool:
    sex = str(entities.get("sex", "")).lower()
    if sex not in ("male", "female"):
        raise Unsupported("no sex")
    return sex == "male"


def _rr(e: Entities) -> float:
    return 60.0 / get(e, "Heart Rate or Pulse", "bpm")


def _qt(e: Entities) -> float:
    return get(e, "QT interval", "msec")


def mean_arterial_pressure(e: Entities) -> float:
    sbp, dbp = get(e, "Systolic Blood Pressure", "mmhg"), get(e, "Diastolic Blood Pressure", "mmhg")
    return (2 * dbp + sbp) / 3


def bmi(e: Entities) -> float:
    return get(e, "weight", "weight") / (get(e, "height", "height") / 100) ** 2


def ideal_body_weight(e: Entities) -> float:
    inches = get(e, "height", "height") / 2.54
    return (50.0 if _male(e) else 45.5) + 2.3 * (inches - 60)


def adjusted_body_weight(e: Entities) -> float:
    ibw = ideal_body_weight(e)
    return ibw + 0.4 * (get(e, "weight", "weight") - ibw)


def body_surface_area(e: Entities) -> float:
    return math.sqrt(get(e, "weight", "weight") * get(e, "height", "height") / 3600)


def target_weight(e: Entities) -> float:
    return get(e, "Body Mass Index (BMI)", "bmi") * (get(e, "height", "height") / 100) ** 2


def anion_gap(e: Entities) -> float:
    return get(e, "Sodium", "mmol") - (get(e, "Chloride", "mmol") + get(e, "Bicarbonate", "mmol"))


def serum_osmolality(e: Entities) -> float:
    bun = get(e, "Blood Urea Nitrogen (BUN)", "bun")
    return 2 * get(e, "Sodium", "mmol") + bun / 2.8 + get(e, "Glucose", "glucose") / 18


def calcium_correction(e: Entities) -> float:
    return get(e, "Calcium", "calcium") + 0.8 * (4.0 - get(e, "Albumin", "albumin"))


def ldl(e: Entities) -> float:
    total = get(e, "Total cholesterol", "lipid")
    hdl = get(e, "high-density lipoprotein cholesterol", "lipid")
    return total - hdl - get(e, "Triglycerides", "lipid") / 5


def qtc_bazett(e: Entities) -> float:
    return _qt(e) / math.sqrt(_rr(e))


def qtc_fridericia(e: Entities) -> float:
    return _qt(e) / math.pow(_rr(e), 1 / 3)


def qtc_framingham(e: Entities) -> float:
    return _qt(e) + 154 * (1 - _rr(e))


def qtc_hodges(e: Entities) -> float:
    return _qt(e) + 1.75 * (get(e, "Heart Rate or Pulse", "bpm") - 60)


def qtc_rautaharju(e: Entities) -> float:
    return _qt(e) * (120 + get(e, "Heart Rate or Pulse", "bpm")) / 180


Formula = Callable[[Entities], float]
FORMULAS: dict[int, Formula] = {
    5: mean_arterial_pressure,
    6: bmi,
    7: calcium_correction,
    10: ideal_body_weight,
    11: qtc_bazett,
    30: serum_osmolality,
    39: anion_gap,
    44: ldl,
    56: qtc_fridericia,
    57: qtc_framingham,
    58: qtc_hodges,
    59: qtc_rautaharju,
    60: body_surface_area,
    61: target_weight,
    62: adjusted_body_weight,
}
# Related calculators a confused model might apply instead (same inputs, a different formula).
RELATED: dict[int, tuple[int, ...]] = {
    11: (56, 57, 58, 59),
    56: (11, 57, 58, 59),
    57: (11, 56, 58, 59),
    58: (11, 56, 57, 59),
    59: (11, 56, 57, 58),
    10: (62,),
    62: (10,),
}
NAMES: dict[int, str] = {
    5: "Mean Arterial Pressure (MAP)",
    6: "Body Mass Index (BMI)",
    7: "Calcium Correction for Hypoalbuminemia",
    10: "Ideal Body Weight",
    11: "QTc Bazett Calculator",
    30: "Serum Osmolality",
    39: "Anion Gap",
    44: "LDL Calculated",
    56: "QTc Fridericia Calculator",
    57: "QTc Framingham Calculator",
    58: "QTc Hodges Calculator",
    59: "QTc Rautaharju Calculator",
    60: "Body Surface Area Calculator",
    61: "Target weight",
    62: "Adjusted Body Weight",
}


def compute(calculator_id: int, entities: Entities) -> float:
    """The calculator's value for these entities; `Unsupported` when it is not implemented or the
    inputs cannot be read."""
    formula = FORMULAS.get(calculator_id)
    if formula is None:
        raise Unsupported(f"calculator {calculator_id} is not implemented")
    return float(formula(entities))


def numeric_inputs(entities: Entities) -> list[str]:
    """Names of the entities with a numeric (value, unit) pair, in a stable order."""
    return sorted(
        name
        for name, value in entities.items()
        if isinstance(value, list | tuple) and len(value) == 2 and isinstance(value[0], int | float)
    )
