"""Reading and writing other benchmarks' formats: HealthBench JSONL, K-QA, human label files, corpora.

- `healthbench.py` — HealthBench JSONL ⇄ Case + Rubric (original points and tags kept)
- `healthbench_results.py` — scores as simple-evals' results JSON
- `kqa.py`         — K-QA questions with physician answers → Case, Must_have as a reference rubric
- `labels.py`      — (response, criterion, label) files and K-QA's NLI annotation CSV
- `chunks.py`      — an imported file read in chunks of lines, parsed in worker processes
- `fields.py`      — checks of imported JSON fields, each error naming its field
- `dates.py`       — how imported cases without publication dates are dated (never silently)
"""
