"""The `inspect` export: `samples.jsonl` and `livemed_task.py`, an Inspect AI task file, so a release runs
with `inspect eval livemed_task.py --model PROVIDER/MODEL -T grader=PROVIDER/JUDGE`.

The task file is a few lines that call `livemed.releases.exports.inspect_eval.release_task` (livemed
and inspect-ai installed): the candidate gets livemed's own answer prompt, the grader livemed's own
per-criterion prompt, and the sample's score is livemed's case score. A case whose text may not be
exported cannot be run, nor a rubric without a positive criterion be scored: both are left out
(counted).
"""

from __future__ import annotations

import json
from pathlib import Path

from livemed.releases.exports.rows import ROW_FILES, ExportResult, Selection, row_hash

SAMPLES = ROW_FILES["inspect"]
TASK_FILE = "livemed_task.py"

TASK_TEMPLATE = '''"""Inspect AI task for livemed release {name!r} (release hash {hash}).

    inspect eval livemed_task.py --model PROVIDER/MODEL -T grader=PROVIDER/JUDGE

Needs livemed and inspect-ai installed. Without `-T grader=...` the evaluated model grades itself.
"""

from pathlib import Path

from inspect_ai import Task, task

from livemed.releases.exports.inspect_eval import release_task


@task
def livemed_release(grader: str | None = None) -> Task:
    return release_task(Path(__file__).with_name({samples!r}), name={name!r}, grader=grader)
'''


def write_inspect_export(selection: Selection, out: Path) -> ExportResult:
    from livemed.answer.ask import candidate_messages, conversation

    carried, hashes = [], {}
    with (out / SAMPLES).open("w", encoding="utf-8") as handle:
        for item in selection.items:
            if not selection.with_text(item) or not any(c.value > 0 for c in item.rubric.criteria):
                continue  # no text to run, or nothing to score: left out (counted)
            sample = {
                "id": item.case.id,
                "input": candidate_messages(item.case),
                "conversation": conversation(item.case),
                "criteria": [c.model_dump(mode="json") for c in item.rubric.criteria],
                "content_hash": item.content_hash,
            }
            handle.write(json.dumps(sample, ensure_ascii=False) + "\n")
            carried.append(item)
            hashes[item.case.id] = row_hash(sample)
    task = out / TASK_FILE
    release = selection.release
    task.write_text(
        TASK_TEMPLATE.format(name=release.name, hash=release.release_hash, samples=SAMPLES), encoding="utf-8"
    )
    return ExportResult(selection, [out / SAMPLES, task], carried, hashes)
