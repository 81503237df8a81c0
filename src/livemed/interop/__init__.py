"""Reading and writing other benchmarks' formats: HealthBench JSONL, K-QA, human label files, corpora.

- `healthbench.py` — HealthBench JSONL ⇄ Case + Rubric (original points and tags kept)
- `kqa.py`         — K-QA questions with physician answers → Case, Must_have as a reference rubric
- `labels.py`      — (response, criterion, label) files and K-QA's NLI annotation CSV
- `evidence.py`    — passages for the offline retrieval answerer
- `dates.py`       — how imported cases without publication dates are dated (never silently)
"""
