"""Rubrics: decompose a case's expert advice into weighted bipolar criteria, then check them.

- `write.py` — the three-step LLM writer (themes → criteria → weights), one repair or reject
- `check.py` — deterministic lint (findings stored on `Rubric.findings`)
- `rules.py` — the rule-based writer baseline `offline/rules`
- `coverage.py`, `decisive.py`, `alternatives.py`, `hazards.py`, `phrasing.py` — shared by lints and writers
- `stage.py` — `write_rubrics`, the stage over the store (the CLI and `update` both call it)
"""
