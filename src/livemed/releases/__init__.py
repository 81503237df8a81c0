"""Releases: content-hashed snapshots of cases and rubrics (`manifest`), retirement, diffs and exports.

```python
release = create_release(store, "2026-w48", date(2026, 11, 30))
export_release(store, release, "jsonl", Path("out"), embargo_days=14)
```
"""
