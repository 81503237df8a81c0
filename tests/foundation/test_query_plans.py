"""Every store query the stages issue is answered from an index, not a scan (no timing involved).

The commands of a HealthBench run (import, answer, grade twice, scores twice, leaderboard,
contamination, report) run in-process against a real store while every SQL statement they send is
recorded; each recorded SELECT and DELETE is then explained with its own parameters. SQLite
(`EXPLAIN QUERY PLAN`): no step may `SCAN` a table, except for a whole-table aggregate the command
really needs (listed below with why). PostgreSQL (`EXPLAIN`, with sequential scans priced out, since
on a table this small a scan is cheapest): no `Seq Scan` on `records`, i.e. an index matches every
query, in the plan made with its values and in the generic plan a store's connection runs. The
SQLite plans are taken twice: without statistics (a store never analysed) and with the statistics of
a large store.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from livemed.cli import app
from livemed.records.rows import StoredRow
from livemed.store import Store

from ..conftest import _fresh_postgres, _postgres_url

JUDGE = "offline/lexical"

# Whole-table aggregates some commands print on purpose: they read every row of a kind by design.
WHOLE_TABLE = ("GROUP BY records.kind",)  # `Store.count()`: record counts by kind


def _examples(path: Path, n: int = 12) -> Path:
    lines = []
    for i in range(n):
        rubrics = [
            {"criterion": f"Advises rest and fluids for cough {i} item {k}", "points": k + 1, "tags": []}
            for k in range(3)
        ] + [{"criterion": "Recommends antibiotics without indication", "points": -4, "tags": []}]
        prompt = [{"role": "user", "content": f"I have had a cough for {i + 2} days. What should I do?"}]
        ideal = {"ideal_completion": "Rest, drink fluids; see a doctor if it lasts three weeks."}
        lines.append(
            {
                "prompt_id": f"qp-{i}",
                "prompt": prompt,
                "rubrics": rubrics,
                "example_tags": ["theme:communication"],
                "ideal_completions_data": ideal,
            }
        )
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def _commands(data: Path, out: Path) -> list[list[str]]:
    judge = ["--judge", JUDGE]
    return [
        ["import-healthbench", str(data), "--published", "2025-03-01"],
        ["answer", "-m", "offline/reference"],
        ["answer", "-m", "offline/empty"],
        ["grade", *judge],
        ["grade", *judge],  # nothing to do
        ["scores", *judge],
        ["scores", *judge],  # nothing new
        ["leaderboard", *judge, "--out", str(out / "lb")],
        ["contamination", *judge, "--out", str(out / "ct")],
        ["report", *judge, "--out", str(out / "report.html")],
    ]


def _recorded(
    store: str, data: Path, out: Path, heads: tuple[str, ...] = ("SELECT", "DELETE")
) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        head = statement.lstrip().split(None, 1)[0].upper()
        if not many and head in heads and "sqlite_master" not in statement:
            seen.append((statement, parameters))

    sa.event.listen(Engine, "before_cursor_execute", record)
    try:
        runner = CliRunner()
        for argv in _commands(data, out):
            result = runner.invoke(app, ["--store", store, *argv])
            assert result.exit_code in (0, 1), (argv, result.output)
    finally:
        sa.event.remove(Engine, "before_cursor_execute", record)
    unique: dict[str, tuple[str, Any]] = {}
    for statement, parameters in seen:
        unique.setdefault(statement, (statement, parameters))
    return list(unique.values())


def _whole_table(statement: str) -> bool:
    return any(marker in statement for marker in WHOLE_TABLE)


def _sqlite_scans(path: Path, statements: list[tuple[str, Any]]) -> list[str]:
    bad = []
    conn = sqlite3.connect(path)  # a new connection reads the statistics as they are now
    try:
        for statement, parameters in statements:
            plan = conn.execute("EXPLAIN QUERY PLAN " + statement, parameters).fetchall()
            details = [str(row[-1]) for row in plan]
            scans = [d for d in details if re.match(r"SCAN (records|response_cache|run_state)\b", d)]
            # a search on the kind alone walks every record of the kind: a scan when the query
            # also names a parent, an id or a date that an index could have matched, in its WHERE
            # clause (a column it only reads, as `Store.id_parents` reads parent_id, narrows nothing)
            where = statement.partition("WHERE")[2]
            narrower = re.search(r"records\.(parent_id|published_at) |records\.id (IN|=)", where)
            walks = [d for d in details if d.startswith("SEARCH records") and d.endswith("(kind=?)")]
            if (scans or (walks and narrower)) and not _whole_table(statement):
                bad.append(f"{statement!r}: {details}")
    finally:
        conn.close()
    return bad


# What ANALYZE writes for a store of a million records of 8 kinds (~7 per parent): the statistics
# a large store has, written by hand (SQLite documents sqlite_stat1 as editable for this purpose).
LARGE_STORE_STATS = [
    ("records", "sqlite_autoindex_records_1", "1000000 125000 1"),
    ("records", "ix_records_kind_parent", "1000000 125000 7 1"),
    ("records", "ix_records_kind_published", "1000000 125000 2000"),
    ("run_state", "sqlite_autoindex_run_state_1", "1000 200 1"),
    ("response_cache", "sqlite_autoindex_response_cache_1", "100000 1"),
]


def _set_statistics(path: Path, rows: list[tuple[str, str, str]] | None) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute("ANALYZE")  # creates sqlite_stat1
        conn.execute("DELETE FROM sqlite_stat1")
        conn.executemany("INSERT INTO sqlite_stat1 (tbl, idx, stat) VALUES (?, ?, ?)", rows or [])
        conn.commit()
    finally:
        conn.close()


@pytest.fixture
def workload(tmp_path: Path) -> tuple[Path, Path]:
    out = tmp_path / "out"
    out.mkdir()
    return _examples(tmp_path / "hb.jsonl"), out


def test_every_sqlite_query_uses_an_index_with_and_without_statistics(
    tmp_path: Path, workload: tuple[Path, Path]
) -> None:
    data, out = workload
    path = tmp_path / "store.db"
    statements = _recorded(str(path), data, out)
    assert len(statements) > 12  # the run really issued its queries
    assert any("parent_id IN" in s for s, _ in statements)  # verdicts by answer were among them
    _set_statistics(path, None)  # no statistics: what a store has before any ANALYZE
    assert _sqlite_scans(path, statements) == []
    _set_statistics(path, LARGE_STORE_STATS)
    assert _sqlite_scans(path, statements) == []


def test_the_check_itself_catches_a_scan_and_a_walk_of_a_kind(tmp_path: Path) -> None:
    """The plan check fails a query that no index matches, and a parent's records read through the
    primary key, as SQLite planned them with schema version 2's (kind, parent_id) index."""
    path = tmp_path / "store.db"
    Store(path).close()
    bad = _sqlite_scans(path, [("SELECT id FROM records WHERE payload = ?", ("x",))])
    assert len(bad) == 1
    assert "SCAN records" in bad[0]
    by_parent = (
        "SELECT records.id FROM records WHERE records.kind = ? AND records.parent_id = ? ORDER BY records.id"
    )
    assert _sqlite_scans(path, [(by_parent, ("grade", "a"))]) == []
    with sqlite3.connect(path) as conn:
        conn.execute("DROP INDEX ix_records_kind_parent")
        conn.execute("CREATE INDEX ix_records_kind_parent ON records (kind, parent_id)")
    bad = _sqlite_scans(path, [(by_parent, ("grade", "a"))])
    assert len(bad) == 1
    assert "(kind=?)" in bad[0]


@pytest.fixture
def postgres_store() -> Iterator[Store]:
    base = _postgres_url()
    if not base:
        pytest.skip("PostgreSQL not configured (set LIVEMED_TEST_POSTGRES_URL; .ci/run does)")
    yield from _fresh_postgres(base)


def test_every_postgres_query_uses_an_index(postgres_store: Store, workload: tuple[Path, Path]) -> None:
    """Also the claims' statements on `run_state` and the batch upserts (`INSERT … SELECT FROM
    unnest(…) ON CONFLICT`): each conflict is found through the primary key."""
    data, out = workload
    url = postgres_store.engine.url.render_as_string(hide_password=False)
    statements = _recorded(url, data, out, ("SELECT", "DELETE", "INSERT"))
    assert len(statements) > 12
    upserts = [s for s, _ in statements if s.startswith("INSERT") and "unnest(" in s]
    assert any(s.startswith("INSERT INTO records") for s in upserts)
    assert any(s.startswith("INSERT INTO run_state") for s in upserts)  # a batch's claims
    assert any("DELETE FROM run_state" in s for s, _ in statements)  # their release
    bad = []
    with postgres_store.engine.connect() as conn:  # rolled back at the end: the prepared ones ran
        conn.exec_driver_sql("ANALYZE")
        conn.exec_driver_sql("SET enable_seqscan = off")
        for statement, parameters in statements:
            custom = "\n".join(str(r[0]) for r in conn.exec_driver_sql("EXPLAIN " + statement, parameters))
            generic = _prepared_plan(conn, statement, parameters, analyze=False)  # as livemed runs it
            plan = f"{custom}\n{generic}"
            scans = re.search(r"Seq Scan on (records|run_state|response_cache)\b", plan)
            if scans and not _whole_table(statement):
                bad.append(f"{statement!r}:\n{plan}")
            if statement.startswith("INSERT") and not re.search(r"Conflict Arbiter Indexes: \w+_pkey", plan):
                bad.append(f"{statement!r} finds its conflicts without the primary key:\n{plan}")
    assert bad == []


def _prepared_plan(conn: Any, statement: str, parameters: Any, *, analyze: bool = True) -> str:
    """`EXPLAIN [ANALYZE]` of a statement prepared on this connection as psycopg prepares a statement
    it runs often (a named server-side statement; preparing runs it once), planned as the connection's
    settings plan it (a store's: generically, `connect._on_postgres_connect`)."""
    import psycopg  # only where PostgreSQL is configured

    raw = conn.connection.driver_connection
    raw.execute(statement, parameters, prepare=True)
    # the lookup is never prepared itself (psycopg prepares what it ran 5 times), so never the newest
    newest = "SELECT name, parameter_types::text[] FROM pg_prepared_statements ORDER BY prepare_time DESC"
    name, types = raw.execute(newest, prepare=False).fetchone()  # the first row: the newest
    if isinstance(parameters, dict):  # in the order psycopg numbers them: of first appearance
        names = dict.fromkeys(re.findall(r"%\((\w+)\)[sb]", statement))
        values = [parameters[name] for name in names]
    else:
        values = list(parameters or [])
    casts = f"({', '.join(f'%s::{kind}' for kind in types)})" if types else ""
    with psycopg.ClientCursor(raw) as cursor:  # the values as literals: EXECUTE takes no parameters
        cursor.execute(f"EXPLAIN {'ANALYZE ' if analyze else ''}EXECUTE {name}{casts}", values)
        return "\n".join(str(r[0]) for r in cursor.fetchall())


def test_postgres_finds_records_by_parent_through_the_index_when_the_statistics_lag(
    postgres_store: Store,
) -> None:
    """What `grade` does to the statistics: ANALYZE ran when the store held no grade, then 20,000 were
    written. The lookup of grades by answer, planned as a store's connection plans it, still descends
    the parent index once per answer; priced with those statistics and the lookup's values it walked
    every grade of the kind with the answers as a filter (the plan without `force_generic_plan`)."""
    store = postgres_store
    cases = [f"case:{n:04d}" for n in range(100)]  # a store after import and answer: its kinds, parents
    answers = [f"answer:{n:04d}" for n in range(200)]
    store.put_rows(
        [
            *(StoredRow("case", c, c.replace("case:", "doc:"), None, "{}") for c in cases),
            *(StoredRow("rubric", c.replace("case:", "rubric:"), c, None, "{}") for c in cases),
            *(StoredRow("answer", a, cases[n % 100], None, "{}") for n, a in enumerate(answers)),
        ]
    )
    with store.engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE records")
        conn.commit()
    graded = answers[:150]
    store.put_rows(
        [StoredRow("grade", f"grade:{a}:{k:03d}", a, None, "{}") for a in graded for k in range(134)],
        batch_size=5000,
    )
    wanted = answers[140:160]  # ten graded, ten not
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool) -> None:
        seen.append((statement, parameters))

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        found = store.ids_by_parents("grade", wanted)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)
    assert len(found) == 10 * 134
    assert len(seen) == 1
    with store.engine.connect() as conn:
        plan = _prepared_plan(conn, *seen[0])
    assert re.search(r"Index Cond: .*parent_id = ANY", plan), plan
    assert "Rows Removed by Filter" not in plan, plan
