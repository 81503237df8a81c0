"""Answers, grades and scores: run candidate models on cases, judge each criterion, score.

- `answer.py`  — the patient-style prompt and `answer_case` (Answer, or a Rejection on call failure)
- `judge.py`   — per-criterion (default) and batched grading (Grade, or GradeFailure)
- `lexical.py` — the offline lexical grader baseline (negation-aware sentence matching)
- `offline.py` — offline answerer baselines: reference, retrieval (BM25), empty
- `unsafe.py`  — the offline/unsafe baseline: the reference advice plus one contraindicated action
- `score.py`   — pure scoring functions (livemed and HealthBench conventions, bootstrap CIs)
- `agreement.py` — grader agreement with human labels (macro-F1, Cohen's kappa, precision/recall)
"""
