"""`livemed cases audit`: are the store's cases and rubrics fair to the candidate?"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from livemed.cli.analysis import OUT, out_dir, wrote
from livemed.cli.context import DOMAIN, console, err_console, state
from livemed.cli.root import app
from livemed.errors import UserError

if TYPE_CHECKING:
    from livemed.analysis.fairness import FairnessAudit

cases_app = typer.Typer(help="Audit the store's cases: are they fair to the candidate?", no_args_is_help=True)
app.add_typer(cases_app, name="cases")


@cases_app.command("audit")
def cases_audit(
    ctx: typer.Context,
    domain: str | None = DOMAIN,
    show: int = typer.Option(
        10, "--show", min=0, metavar="N", help="Cases that miss a target listed with why, e.g. 50 (0: none)."
    ),
    out: Path | None = OUT,
) -> None:
    """Check every case and rubric: criteria rest on facts the candidate sees, no case gives the answer
    away, decisive values are required, no negative restates an omission. Exit 1 when a target is missed."""
    from livemed.analysis.fairness import audit_cases, stored_pairs

    app_state = state(ctx)
    audit = audit_cases(
        stored_pairs(app_state.existing_store),
        app_state.pack(domain),
        max_leak=app_state.config.thresholds.answer_leak,
    )
    if not audit.cases:
        raise UserError("the store holds no cases yet: curate some first (see `livemed curate --help`)")
    table = Table(title=f"{len(audit.cases)} cases, {len(audit.rubrics)} with a rubric")
    for column in ("check", "count", "of", "share", "target", "met"):
        table.add_column(column, justify="left" if column in ("check", "target") else "right")
    for figure in audit.figures():
        share = "–" if figure.share is None else f"{figure.share:.1%}"
        met = {True: "yes", False: "[red]no[/]", None: "–"}[figure.met]
        table.add_row(figure.check, str(figure.count), f"{figure.n} {figure.unit}", share, figure.target, met)
    console.print(table)
    for case in audit.unfair()[:show]:
        why = (
            [f"unseen {u}" for u in case.unseen]
            + case.leaks
            + [f"omission negative {o!r}" for o in case.omissions]
        )
        console.print(f"[bold]{escape(case.case_id)}[/]: " + escape("; ".join(why)))
    wrote(write_audit(audit, out_dir(app_state, out)))
    if missed := audit.missed():
        err_console.print(
            f"[red]{len(missed)} target(s) missed: "
            + "; ".join(f"{f.check}: {f.count} of {f.n}" for f in missed)
            + "[/]"
        )
        raise typer.Exit(1)


def write_audit(audit: FairnessAudit, folder: Path) -> list[Path]:
    """`case-audit.csv/json`: a row per case; the JSON's summary holds the four figures."""
    from livemed.analysis.table_files import write_table

    return write_table(folder, "case-audit", audit.cases, audit.summary())
