"""Clinician review: the audit sample, reviewers' queues and labels, and the review web app.

`sample.py` draws one grader's verdicts for blind review; `queues.py` gives a reviewer the next items
of each queue; `labels.py` writes, exports and imports `Label` records; `tokens.py` invites reviewers;
`app.py` is `livemed review serve` (Starlette). What it writes is labels and rubric versions only.
"""
