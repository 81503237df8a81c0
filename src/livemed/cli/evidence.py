"""`livemed evidence fetch medquad`: download and convert a public evidence corpus into the cache."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from livemed.cli.context import console, err_console
from livemed.cli.root import app

evidence_app = typer.Typer(help="Download public evidence corpora into the cache.", no_args_is_help=True)
app.add_typer(evidence_app, name="evidence")

CORPORA = ("medquad",)


@evidence_app.command("fetch")
def fetch(
    name: str = typer.Argument(..., metavar="medquad", help="Corpus to fetch."),
    url: str | None = typer.Option(
        None,
        "--url",
        metavar="URL",
        help="Archive to download, e.g. a mirror's https://host/MedQuAD.zip (default: the pinned commit).",
    ),
    cache_dir: Path | None = typer.Option(
        None,
        "--cache-dir",
        metavar="DIR",
        help="Cache folder, e.g. /data/cache (default: $LIVEMED_CACHE_DIR or ~/.cache/livemed).",
    ),
    force: bool = typer.Option(False, "--force", help="Download and convert again even if present."),
    retries: int = typer.Option(
        3, "--retries", min=0, metavar="N", help="Retries on 429/5xx and connection errors."
    ),
) -> None:
    """Download MedQuAD at a pinned commit and convert it to JSONL for `--evidence medquad`."""
    from livemed.evidence.medquad import (
        ATTRIBUTION,
        MEDQUAD_URL,
        fetch_medquad,
        is_current,
        medquad_path,
    )

    if name not in CORPORA:
        from livemed.errors import UnknownNameError

        raise UnknownNameError("evidence corpus", name, CORPORA)
    path = medquad_path(cache_dir)
    if path.exists() and not force:
        if is_current(cache_dir):
            console.print(f"{path} is already there (use --force to fetch it again)")
            return
        console.print(f"{path} was converted by an older livemed (other evidence ids): converting again")
    source = url or MEDQUAD_URL
    console.print(f"[dim]fetching {escape(source)}[/]")
    result = fetch_medquad(url=source, cache_dir=cache_dir, force=True, max_retries=retries)
    conversion = result.conversion
    assert conversion is not None
    for bad in conversion.bad_files:
        err_console.print(f"[yellow]skipped[/] malformed XML {escape(bad)}", highlight=False)
    console.print(f"wrote {result.path}")
    console.print(
        f"{conversion.pairs} QA pairs from {conversion.files} XML files; {conversion.empty_answers} empty "
        f"answer(s) dropped, {len(conversion.bad_files)} malformed file(s) skipped"
    )
    for collection, count in conversion.per_collection.items():
        console.print(f"  {collection}: {count}")
    console.print(f"archive sha256 {result.sha256}")
    console.print(f"[dim]{escape(ATTRIBUTION)}[/]")
    if result.path == medquad_path():
        console.print("use it with: livemed curate --evidence medquad")
    else:  # `--evidence medquad` looks in the default cache folder
        console.print(
            f"use it with: livemed curate --evidence {result.path} "
            f"(or set LIVEMED_CACHE_DIR={cache_dir} and use --evidence medquad)"
        )
