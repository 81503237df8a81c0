"""The closed, defined list of evaluation themes of the medical domain (data, one place).

The rubric writer's step 1 assigns a case themes from this list only and drops the facts of the
advice that fall under none of them, so per-theme scores compare across cases; `rubrics.check`
flags a criterion whose theme is not listed. The list is data in the domain pack (`[[themes]]` of its
`pack.toml`); a pack replaces it as a whole.
"""

from __future__ import annotations

from collections.abc import Mapping

from livemed.domains import DomainPack, medical
from livemed.records.grading import canonical_theme


def pack_themes(pack: DomainPack | None = None) -> Mapping[str, str]:
    """A domain pack's closed theme list (name → definition); default: the medical pack's."""
    return {t.name: t.description for t in (pack or medical()).themes}


MEDICAL_THEMES: Mapping[str, str] = pack_themes()  # the list itself lives in domains/medical/pack.toml


def theme_lines(themes: Mapping[str, str] = MEDICAL_THEMES) -> str:
    """The list as the writer's prompt shows it: one `- name: definition` line per theme."""
    return "\n".join(f"- {name}: {definition}" for name, definition in themes.items())


def listed(theme: str, themes: Mapping[str, str] = MEDICAL_THEMES) -> bool:
    """Whether `theme` (in any spelling `canonical_theme` folds) is on the list."""
    return canonical_theme(theme) in {canonical_theme(t) for t in themes}
