"""Tables that fit the terminal (rich's `Console.width`): ids wrap at their separators, low-priority
columns give way from the right, and one line says which were left out and where to see them.

```python
columns = [Column("model", keep=True, wrap=True), Column("mean", keep=True), Column("harm")]
console.print(fitted(console, "leaderboard", columns, rows, elsewhere="leaderboard.json"))
```
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

ID_WIDTH = 28  # a longer id (model name) wraps at its separators
MIN_ID_WIDTH = 12  # the narrowest an id column gets when even the kept columns do not fit
_PIECES = re.compile(r"[^/\-_:]*[/\-_:]*")  # an id's pieces: each ends after its separators

Cell = str | Text  # str: rich markup written by livemed; Text: data shown as it is (a model name)


@dataclass(frozen=True)
class Column:
    name: str
    keep: bool = False  # never left out
    wrap: bool = (
        False  # an id column: its cells wrap at separators (never mid-piece unless a piece is longer)
    )
    left: bool = False  # left-justified text; other columns are right-justified numbers


def wrap_id(text: str, width: int) -> str:
    """`text` in lines of at most `width` cells, broken after `/`, `-`, `_` or `:` (a piece longer
    than `width` is cut). Joined back without the line breaks it is `text`."""
    lines = [""]
    for piece in (p for p in _PIECES.findall(text) if p):
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines.append("")
        lines[-1] += piece
        while len(lines[-1]) > width:  # a piece longer than a line is cut
            lines[-1], rest = lines[-1][:width], lines[-1][width:]
            lines.append(rest)
    return "\n".join(line for line in lines if line)


def fitted(
    out: Console, title: str, columns: Sequence[Column], rows: Sequence[Sequence[Cell]], *, elsewhere: str
) -> RenderableType:
    """The table in `out.width` columns: whole when it fits; else its id columns wrapped at `ID_WIDTH`,
    then the columns not kept left out from the right until it fits, then the id columns narrowed (down
    to `MIN_ID_WIDTH`).

    With columns left out, a note under the table names them, says where they are (`elsewhere`) and
    how wide a terminal shows them all."""
    shown = list(columns)
    table = _table(title, shown, columns, rows, 10**6)
    if _width(out, table) <= out.width:
        return table
    id_width = ID_WIDTH
    table = _table(title, shown, columns, rows, id_width)
    while _width(out, table) > out.width and (droppable := [c for c in shown if not c.keep]):
        shown.remove(droppable[-1])
        table = _table(title, shown, columns, rows, id_width)
    while _width(out, table) > out.width and id_width > MIN_ID_WIDTH:
        id_width -= 1
        table = _table(title, shown, columns, rows, id_width)
    left_out = [c.name for c in columns if c not in shown]
    if not left_out:
        return table
    full = _width(out, _table(title, list(columns), columns, rows, 10**6))
    shown_at = f"not shown at {out.width} columns: {', '.join(left_out)}"
    note = f"{shown_at} (see {elsewhere}; every column fits in {full})"
    return Group(table, Text(textwrap.fill(note, out.width), style="dim"))


def _table(
    title: str,
    shown: Sequence[Column],
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    id_width: int,
) -> Table:
    table = Table(title=title)
    for column in shown:
        table.add_column(column.name, justify="left" if column.left or column.wrap else "right", no_wrap=True)
    at = [columns.index(c) for c in shown]
    for row in rows:
        table.add_row(*(_cell(row[i], columns[i], id_width) for i in at))
    return table


def _cell(value: Cell, column: Column, id_width: int) -> Cell:
    if not column.wrap:
        return value
    text = value.plain if isinstance(value, Text) else value
    return Text(wrap_id(text, id_width))


def _width(out: Console, table: Table) -> int:
    return Measurement.get(out, out.options.update_width(10**6), table).maximum
