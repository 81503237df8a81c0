"""`livemed import-healthbench`, `livemed export-healthbench`, `livemed import-kqa`."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from livemed.cli.context import console, err_console, state
from livemed.cli.root import app

if TYPE_CHECKING:
    from livemed.interop.chunks import Lines
    from livemed.interop.healthbench import Prepared
    from livemed.store import Store

PUBLISHED = typer.Option(
    None,
    "--published",
    metavar="YYYY-MM-DD",
    help="Date for the imported cases, e.g. 2025-06-30 (default: the file's modification time).",
)


REPLACE = typer.Option(
    False,
    "--replace",
    help="Overwrite cases already in the store (their dates and texts); default: keep them.",
)


def _stored(store: Store, case_id: str, replace: bool) -> bool:
    """True when the case is already stored and must be kept (re-imports never re-date cases silently)."""
    return not replace and bool(store.has("case", [case_id]))


def _date_note(basis: str, published: object) -> None:
    if basis == "file_mtime":
        err_console.print(
            f"[yellow]note:[/] the file has no publication dates; cases are dated by its modification time "
            f"({published}); pass --published YYYY-MM-DD to set it"
        )


def _kept_note(kept: int) -> None:
    if kept:
        console.print(f"{kept} already in the store, kept (pass --replace to overwrite them)")


MAX_RECORD_BYTES = typer.Option(
    None,
    "--max-record-bytes",
    min=1_000,
    metavar="BYTES",
    help="Refuse a longer line, e.g. 20000000 (default: \\[import] max_record_bytes).",
)
MAX_CRITERIA = typer.Option(
    None,
    "--max-criteria",
    min=1,
    metavar="N",
    help="Refuse more rubric items or statements, e.g. 1000 (default: \\[import] max_criteria).",
)


def _limits(ctx: typer.Context, max_record_bytes: int | None, max_criteria: int | None) -> tuple[int, int]:
    limits = state(ctx).config.imports
    return max_record_bytes or limits.max_record_bytes, max_criteria or limits.max_criteria


def _skipped(item: object) -> None:
    err_console.print(f"[yellow]skipped[/] {escape(str(item))}", highlight=False)


@dataclass
class _Findings:
    """Mapping findings by kind: how many, and the first example that had one."""

    counts: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, findings: list[str], example_id: str) -> None:
        from livemed.interop.healthbench import finding_kind

        for text in findings:
            kind = finding_kind(text)
            self.counts[kind] += 1
            self.examples.setdefault(kind, example_id)

    def report(self) -> None:
        from livemed.interop.healthbench import FINDING_NO_POSITIVE

        for kind, count in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])):
            console.print(f"  {count} × {escape(kind)} (e.g. {escape(self.examples[kind])})", highlight=False)
        if unscorable := self.counts[FINDING_NO_POSITIVE]:
            err_console.print(
                f"[yellow]note:[/] {unscorable} example(s) have no positive points and can never be scored "
                f"(e.g. {escape(self.examples[FINDING_NO_POSITIVE])})",
                highlight=False,
            )


@app.command("import-healthbench")
def import_healthbench(
    ctx: typer.Context,
    file: Path = typer.Argument(
        ...,
        metavar="FILE",
        help="HealthBench JSONL (openai/simple-evals format), e.g. 2025-05-07-06-14-12_oss_eval.jsonl.",
    ),
    published: str | None = PUBLISHED,
    replace: bool = REPLACE,
    max_record_bytes: int | None = MAX_RECORD_BYTES,
    max_criteria: int | None = MAX_CRITERIA,
    workers: int | None = typer.Option(
        None,
        "--workers",
        min=0,
        metavar="N",
        help="Processes that parse the file while this one writes, e.g. 2 (0: parse here; "
        "default: one per core, at most 4; none for a file under 1 MiB).",
    ),
) -> None:
    """Import HealthBench examples as cases and rubrics (original points and tags kept)."""
    if load_healthbench(ctx, file, published, replace, max_record_bytes, max_criteria, workers).bad:
        raise typer.Exit(code=1)


@dataclass
class Imported:
    """What an import read: the ids of the file's cases (written or already stored), bad lines."""

    case_ids: list[str] = field(default_factory=list)
    bad: int = 0


def _new_store(ctx: typer.Context) -> bool:
    """Whether the store is a SQLite file not created yet (it can hold no case): then the workers parse
    while this process imports SQLAlchemy and creates it (`parsed_chunks(overlap=True)`)."""
    location = state(ctx).store_location
    return "://" not in location and not Path(location).expanduser().exists()


def load_healthbench(
    ctx: typer.Context,
    file: Path,
    published: str | None = None,
    replace: bool = False,
    max_record_bytes: int | None = None,
    max_criteria: int | None = None,
    workers: int | None = None,
) -> Imported:
    """`import-healthbench` without the exit: prints what it did, returns the file's case ids."""
    from livemed.errors import InputFileError
    from livemed.interop.chunks import default_workers, parsed_chunks
    from livemed.interop.dates import resolve_published
    from livemed.interop.healthbench import ExampleChunks, Kept, Prepared, stored_lines
    from livemed.jsonl import check_text

    check_text(file)  # a binary file is one line, before any note about its dates
    date, basis = resolve_published(published, file)
    _date_note(basis, date.date())
    max_bytes, max_items = _limits(ctx, max_record_bytes, max_criteria)
    counts = Counter[str]()
    out = Imported()
    findings = _Findings()
    parse = ExampleChunks(file, date, basis, max_bytes, max_items)
    processes = default_workers(file) if workers is None else workers
    opened: list[Store] = []  # the store, opened once the workers parse (`parsed_chunks`' ready)
    held = False  # whether the store held a case when the import began
    written_ids: set[str] = set()

    # A store that held no case holds only the cases this import wrote: none of the file's lines need
    # be looked up before it is parsed, nor its cases in the store when they are written.
    def already(ids: list[str]) -> set[str]:  # which of these cases the store holds
        return set() if replace else opened[0].has("case", ids) if held else written_ids.intersection(ids)

    def stored(lines: Lines) -> frozenset[int]:  # stored examples are not parsed again
        return stored_lines(lines, already)

    def ready() -> Callable[[Lines], frozenset[int]] | None:
        nonlocal held
        opened.append(state(ctx).store)
        held = next(opened[0].ids("case", batch_size=1), None) is not None
        return stored if held and not replace else None

    batch: list[Prepared] = []
    chunks = parsed_chunks(
        file, parse, max_bytes=max_bytes, workers=processes, ready=ready, overlap=_new_store(ctx)
    )
    for chunk in chunks:
        for item in chunk:
            if isinstance(item, Prepared):
                out.case_ids.append(item.case_id)
                batch.append(item)
            elif item.case_id is not None and (isinstance(item, Kept) or already([item.case_id])):
                out.case_ids.append(item.case_id)  # a stored case's line is not parsed, or its faults told
                counts["kept"] += 1
            else:
                _skipped(InputFileError(file, item.detail, item.line))
                out.bad += 1
        if len(batch) >= WRITE_BATCH:
            written_ids.update(_put_examples(opened[0], batch, already, findings, counts))
            batch = []
    _put_examples(opened[0], batch, already, findings, counts)
    written, kept = counts["written"], counts["kept"]
    total = sum(findings.counts.values())
    console.print(
        f"{file}: imported {written} case(s) with rubrics; {out.bad} bad line(s); {total} mapping finding(s)"
        + (":" if total else "")
    )
    findings.report()
    _kept_note(kept)
    return out


@app.command("export-healthbench")
def export_healthbench(
    ctx: typer.Context,
    file: Path = typer.Argument(
        ..., metavar="FILE", help="Where to write the HealthBench JSONL, e.g. cases.jsonl."
    ),
    source: str | None = typer.Option(
        None, "--source", metavar="SOURCE", help="Only cases from this source, e.g. europepmc."
    ),
) -> None:
    """Export every case that has a rubric in HealthBench's JSONL format."""
    from livemed.answer.ask import conversation
    from livemed.common.atomic import writing_text
    from livemed.interop.healthbench import to_healthbench
    from livemed.records import Case, Rubric

    store = state(ctx).existing_store
    count = 0
    with writing_text(file) as handle:  # the whole file, or none
        for rubric in store.iter(Rubric):
            case = store.get(Case, rubric.case_id)
            if case is None or (source and case.source != source):
                continue
            prompt = [{"role": m["role"], "content": m["content"]} for m in conversation(case)]
            handle.write(json.dumps(to_healthbench(case, rubric, prompt), ensure_ascii=False) + "\n")
            count += 1
    console.print(f"exported {count} example(s) to {file}")


@app.command("import-kqa")
def import_kqa(
    ctx: typer.Context,
    file: Path = typer.Argument(..., metavar="FILE", help="K-QA's questions_w_answers.jsonl."),
    published: str | None = PUBLISHED,
    limit: int | None = typer.Option(
        None, "--limit", min=1, metavar="N", help="Import at most this many cases, e.g. 100."
    ),
    replace: bool = REPLACE,
    max_record_bytes: int | None = MAX_RECORD_BYTES,
    max_criteria: int | None = MAX_CRITERIA,
) -> None:
    """Import K-QA questions with physician answers as cases; Must_have kept as a reference rubric."""
    if load_kqa(ctx, file, published, limit, replace, max_record_bytes, max_criteria).bad:
        raise typer.Exit(code=1)


WRITE_BATCH = 1000  # examples written in one transaction (2,000 rows): the last one is written alone


def _put_examples(
    store: Store,
    batch: list[Prepared],
    already: Callable[[list[str]], set[str]],
    findings: _Findings,
    counts: Counter[str],
) -> list[str]:
    """Write a batch of parsed examples in one transaction (those `already` stored are kept); returns
    the ids of the cases written."""
    stored = already([example.case_id for example in batch])
    fresh = [example for example in batch if example.case_id not in stored]
    store.put_rows([row for example in fresh for row in example.rows], batch_size=2 * WRITE_BATCH)
    for example in fresh:
        findings.add(example.findings, example.source_id)
    counts["written"] += len(fresh)
    counts["kept"] += len(batch) - len(fresh)
    return [example.case_id for example in fresh]


def load_kqa(
    ctx: typer.Context,
    file: Path,
    published: str | None = None,
    limit: int | None = None,
    replace: bool = False,
    max_record_bytes: int | None = None,
    max_criteria: int | None = None,
) -> Imported:
    """`import-kqa` without the exit: prints what it did, returns the file's case ids."""
    from livemed.errors import InputFileError
    from livemed.interop.dates import resolve_published
    from livemed.interop.kqa import REFERENCE_NAMESPACE, read_kqa
    from livemed.jsonl import check_text

    check_text(file)  # a binary file is one line, before any note about its dates
    date, basis = resolve_published(published, file)
    _date_note(basis, date.date())
    store = state(ctx).store
    max_bytes, max_items = _limits(ctx, max_record_bytes, max_criteria)
    written = statements = kept = 0
    out = Imported()
    for item in read_kqa(
        file, published=date, date_field=basis, max_record_bytes=max_bytes, max_statements=max_items
    ):
        if isinstance(item, InputFileError):
            _skipped(item)
            out.bad += 1
            continue
        if limit is not None and written + kept >= limit:
            break
        out.case_ids.append(item.case.id)
        if _stored(store, item.case.id, replace):
            kept += 1
            continue
        store.put([item.case])
        store.state_set(REFERENCE_NAMESPACE, item.case.id, item.reference())
        written += 1
        statements += len(item.must_have)
    console.print(
        f"{file}: imported {written} case(s) with {statements} Must_have reference statement(s); "
        f"{out.bad} bad line(s)"
    )
    _kept_note(kept)
    return out
