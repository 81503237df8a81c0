"""The closed, defined list of evaluation themes of the medical domain (data, one place).

The rubric writer's step 1 assigns a case themes from this list only and drops the facts of the
advice that fall under none of them, so per-theme scores compare across cases; `rubrics.check`
flags a criterion whose theme is not listed. A domain pack can replace `MEDICAL_THEMES` as a whole.
"""

from __future__ import annotations

from collections.abc import Mapping

from livemed.records.grading import canonical_theme

MEDICAL_THEMES: Mapping[str, str] = {
    "emergency referral": "whether the patient needs urgent or emergency care now, and saying so plainly",
    "red flag": "the warning signs that should make the patient seek care, and what to watch for",
    "diagnosis": "the likely cause of the patient's problem, or what it is not",
    "tests and follow-up": "investigations, monitoring, review, or referral to a specialist",
    "treatment": "what to take or do to treat the problem: the drug, procedure or measure itself",
    "medication safety": "doses, interactions, contraindications and side effects of medicines",
    "harm avoidance": "actions the patient should not take because they would harm them",
    "context awareness": "advice that depends on this patient's age, pregnancy, history, medicines or "
    "allergies",
    "lifestyle": "diet, exercise, sleep, smoking, alcohol and other self-care",
    "patient education": "what the condition is, its usual course, and what to expect",
}


def theme_lines(themes: Mapping[str, str] = MEDICAL_THEMES) -> str:
    """The list as the writer's prompt shows it: one `- name: definition` line per theme."""
    return "\n".join(f"- {name}: {definition}" for name, definition in themes.items())


def listed(theme: str, themes: Mapping[str, str] = MEDICAL_THEMES) -> bool:
    """Whether `theme` (in any spelling `canonical_theme` folds) is on the list."""
    return canonical_theme(theme) in {canonical_theme(t) for t in themes}
