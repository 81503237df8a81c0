"""Scores: stored verdicts become rubric scores, overall and per axis, theme and tag."""
