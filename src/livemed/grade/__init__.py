"""Grades: a grader (an LLM, or an offline baseline) judges each rubric criterion against an answer."""
