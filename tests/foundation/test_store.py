from __future__ import annotations

import json
import multiprocessing
import random
import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from pydantic import TypeAdapter

from livemed.errors import ConfigError, StoreLockedError, StoreVersionError
from livemed.records import Case, Doc, Grade, Record, Rejection
from livemed.store import Store, StoredRow, display_url, maintenance, resolve_url, stored_row
from tests.foundation.factories import doc, every_record


def test_round_trip_of_every_record_type(any_store: Store) -> None:
    records = every_record()
    assert any_store.put(records) == len(records)
    for record in records:
        assert any_store.get(type(record), record.id) == record
    assert sum(any_store.count().values()) == len(records)


def test_reinsert_is_idempotent_and_updates_in_place(any_store: Store) -> None:
    any_store.put([doc("1"), doc("2")])
    any_store.put([doc("1", title="edited"), doc("2")])
    any_store.put([doc("1", title="edited again"), doc("1", title="last wins")])
    assert any_store.count() == {"doc": 2}
    stored = any_store.get(Doc, "demo:1")
    assert stored is not None
    assert stored.title == "last wins"


def test_has_ids_and_delete(any_store: Store) -> None:
    any_store.put([doc(str(i)) for i in range(5)])
    assert any_store.has("doc", ["demo:1", "demo:9"]) == {"demo:1"}
    assert sorted(any_store.ids("doc")) == [f"demo:{i}" for i in range(5)]
    assert any_store.delete("doc", ["demo:1", "demo:2"]) == 2
    assert any_store.has("doc", ["demo:1", "demo:3"]) == {"demo:3"}


def test_iter_filters_by_parent_and_publication_date(any_store: Store) -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    any_store.put([doc(str(i), published=start + timedelta(days=i)) for i in range(10)])
    since = start + timedelta(days=4)
    until = start + timedelta(days=7)
    got = [d.source_id for d in any_store.iter(Doc, since=since, until=until)]
    assert sorted(got) == ["5", "6", "7"]
    records = every_record()
    any_store.put(records)
    grades = list(any_store.iter(Grade, parent_id="answer:case:demo:1:fake/m:0"))
    assert [g.met for g in grades] == [True]


def test_non_utc_dates_compare_in_utc(any_store: Store) -> None:
    from datetime import timezone

    plus_two = timezone(timedelta(hours=2))
    any_store.put([doc("a", published=datetime(2025, 1, 1, 1, 0, tzinfo=plus_two))])  # 2024-12-31 23:00 UTC
    assert list(any_store.iter(Doc, since=datetime(2025, 1, 1, tzinfo=UTC))) == []
    assert len(list(any_store.iter(Doc, since=datetime(2024, 12, 31, 22, tzinfo=UTC)))) == 1


def test_reads_stream_in_pages(any_store: Store) -> None:
    sqlite_store = any_store
    sqlite_store.put((doc(str(i)) for i in range(1050)), batch_size=400)
    statements: list[str] = []
    sa.event.listen(sqlite_store.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    stream = sqlite_store.iter(Doc, batch_size=100)
    first = next(stream)
    assert first.source_id == "0"
    assert len([s for s in statements if "FROM records" in s]) == 1
    rest = list(stream)
    assert len(rest) == 1049
    assert len([s for s in statements if "FROM records" in s]) == 12  # 11 pages and one empty page


def test_lookups_of_every_size_find_each_stored_row_once(any_store: Store) -> None:
    """The batched lookups (by id, by parent, the write times, run state's keys) run one compiled
    statement per size: SQLite pads the values to a power of two with the last one (see
    `Store._lookup`). Every size, with missing and repeated values, finds exactly the stored rows,
    each once, with its own payload, value or write time (a naive UTC datetime)."""
    rows = [
        StoredRow("probe", f"probe:{i:05d}", f"parent:{i // 2:05d}", None, json.dumps({"n": i}))
        for i in range(1300)
    ]
    any_store.put_rows(rows)
    any_store.state_set_many("probe", {r.id: {"n": i} for i, r in enumerate(rows)})
    any_store.state_set_many("other", {r.id: {"n": -1} for r in rows[:10]})
    written = any_store.updated_at("probe", [r.id for r in rows])
    view = TypeAdapter(dict[str, int])
    rng = random.Random(7)
    for size in (1, 2, 3, 255, 256, 257, 499, 500, 501, 1001, 1300):
        chosen = rng.sample(range(1300), size)
        ids = [f"probe:{i:05d}" for i in chosen]
        asked = [*ids, "probe:missing", ids[0]]
        assert any_store.has("probe", asked) == set(ids)
        found = list(any_store.fields_many("probe", asked, view))
        assert sorted(found) == sorted((f"probe:{i:05d}", {"n": i}) for i in chosen)
        assert any_store.state_many("probe", asked) == {f"probe:{i:05d}": {"n": i} for i in chosen}
        assert any_store.updated_at("probe", asked) == {one: written[one] for one in ids}
        parents = sorted({f"parent:{i // 2:05d}" for i in chosen})
        children = any_store.ids_by_parents("probe", [*parents, "parent:missing", parents[-1]])
        assert sorted(children) == sorted(r.id for r in rows if r.parent_id in set(parents))
        latest = any_store.updated_at("probe", [*parents, "parent:missing"], by_parent=True)
        assert latest == {p: max(written[r.id] for r in rows if r.parent_id == p) for p in parents}
    assert all(isinstance(moment, datetime) and moment.tzinfo is None for moment in written.values())


def test_state_and_cache(any_store: Store) -> None:
    assert any_store.state_get("watermark", "pubmed") is None
    any_store.state_set("watermark", "pubmed", "2025-02-01")
    any_store.state_set("watermark", "pubmed", "2025-03-01")
    assert any_store.state_items("watermark") == {"pubmed": "2025-03-01"}
    any_store.cache_put("k", "fake/m", {"text": "hello"})
    assert any_store.cache_get("k") == {"text": "hello"}
    assert any_store.cache_get("missing") is None
    assert any_store.cache_count() == 1


def test_schema_version_is_recorded(any_store: Store) -> None:
    assert any_store.schema_version == maintenance.SCHEMA_VERSION


def test_newer_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE livemed_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreVersionError, match="schema version 99"):
        Store(path)


def test_migrations_run_in_order_on_an_older_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.db"
    Store(path).close()
    applied: list[int] = []
    now = maintenance.SCHEMA_VERSION
    monkeypatch.setattr(maintenance, "SCHEMA_VERSION", now + 2)
    monkeypatch.setitem(maintenance.MIGRATIONS, now, lambda conn: applied.append(now))
    monkeypatch.setitem(maintenance.MIGRATIONS, now + 1, lambda conn: applied.append(now + 1))
    reopened = Store(path)
    assert applied == [now, now + 1]
    assert reopened.schema_version == now + 2


def test_ids_longer_than_512_characters_are_kept_on_every_backend(any_store: Store) -> None:
    """Version 1 had VARCHAR(512) ids, which PostgreSQL enforces; version 2 migrates them to TEXT."""
    if any_store.dialect == "postgresql":  # put a PostgreSQL store back the way version 1 made it
        with any_store.engine.begin() as conn:
            for table, column in maintenance._UNBOUNDED:
                conn.execute(sa.text(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE VARCHAR(512)"))
            conn.execute(sa.text("UPDATE livemed_meta SET value = '1' WHERE key = 'schema_version'"))
    with Store(any_store.url) as store:
        assert store.schema_version == maintenance.SCHEMA_VERSION
        long_doc = doc("x" * 500, source="s" * 60)
        long_id = f"case:{long_doc.id}:" * 2  # derived ids (answers, grades) grow past 512 characters
        store.put([long_doc, Rejection(stage="screener", reason="r", record_kind="doc", record_id=long_id)])
        assert [len(i) for i in store.ids("rejection")] == [len(long_id) + len("screener:")]


def _write_many(path: str, prefix: str, n: int) -> None:
    target = Store(path, lock_timeout=30)
    for i in range(n):
        target.put([doc(f"{prefix}{i % 20}"), doc(f"shared{i % 5}")])
    target.close()


def test_two_processes_writing_one_sqlite_store(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    Store(path).close()
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_write_many, args=(path, p, 60)) for p in ("a", "b")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    with Store(path) as reopened:
        assert reopened.count() == {"doc": 45}  # 20 + 20 + 5 shared, nothing duplicated
        with reopened.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"


def test_a_new_sqlite_store_has_large_pages_and_an_existing_one_keeps_its_own(tmp_path: Path) -> None:
    from livemed.store.connect import SQLITE_PAGE_SIZE

    def page_size(path: Path) -> int:
        with sqlite3.connect(path) as conn:
            return int(conn.execute("PRAGMA page_size").fetchone()[0])

    with Store(tmp_path / "new.db") as made:
        made.put([doc("1")])
    assert page_size(tmp_path / "new.db") == SQLITE_PAGE_SIZE != 4096
    older = tmp_path / "older.db"  # a store made with SQLite's default pages, as livemed made them before
    with sqlite3.connect(older) as conn:
        conn.execute("PRAGMA page_size=4096")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE kept (x)")
    with Store(older) as reopened:
        reopened.put([doc(str(n)) for n in range(50)])
        assert reopened.count() == {"doc": 50}
    assert page_size(older) == 4096
    with sqlite3.connect(older) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_second_writer_waits_then_fails_clearly_when_the_lock_is_held(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    waiter = Store(path, lock_timeout=0.3)
    with pytest.raises(StoreLockedError, match=r"locked by another process; waited 0\.3 s"):
        waiter.put([doc("1")])
    holder.execute("ROLLBACK")
    holder.close()
    waiter.put([doc("1")])
    assert waiter.count() == {"doc": 1}


def test_second_writer_succeeds_when_the_lock_is_released_in_time(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store(path).close()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    threading.Timer(0.3, lambda: holder.execute("COMMIT")).start()
    Store(path, lock_timeout=10).put([doc("1")])
    holder.close()
    assert Store(path).count() == {"doc": 1}


def test_concurrent_threads_upserting_overlapping_ids(any_store: Store) -> None:
    def work(offset: int) -> None:
        for i in range(30):
            any_store.put([doc(str((i + offset) % 40))])

    threads = [threading.Thread(target=work, args=(k * 10,)) for k in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert any_store.count() == {"doc": 40}


def test_urls_are_resolved_and_passwords_hidden(tmp_path: Path) -> None:
    assert resolve_url(tmp_path / "x.db") == f"sqlite:///{tmp_path / 'x.db'}"
    assert resolve_url("postgresql://u:p@h/db") == "postgresql+psycopg://u:p@h/db"
    assert "secret" not in display_url("postgresql+psycopg://u:secret@h/db")
    with pytest.raises(ConfigError, match="unsupported store URL"):
        Store("mysql://u:secret@h/db")


def test_put_refuses_a_non_record() -> None:
    class Stray(Record):
        kind = "stray"

        @property
        def id(self) -> str:
            return "x"

    with pytest.raises(TypeError, match="not a stored record type"):
        stored_row(Stray())


def test_cases_round_trip_with_nested_validation(any_store: Store) -> None:
    case = every_record()[2]
    any_store.put([case])
    again = any_store.get(Case, case.id)
    assert again is not None
    assert again.validation is not None
    assert again.validation.advice_checks[0].evidence[0].id == "ev1"


def test_a_stored_record_that_no_longer_validates_is_a_one_line_error(sqlite_store: Store) -> None:
    from livemed.errors import StoreRecordError

    sqlite_store.put([doc("1")])
    with sqlite_store.engine.begin() as conn:  # as if an older livemed had written a longer id
        payload = conn.execute(sa.text("SELECT payload FROM records WHERE kind = 'doc'")).scalar_one()
        long = payload.replace('"source_id":"1"', '"source_id":"' + "x" * 600 + '"')
        conn.execute(sa.text("UPDATE records SET payload = :p WHERE kind = 'doc'"), {"p": long})
    with pytest.raises(StoreRecordError, match=r"stored doc 'demo:1' does not validate .*source_id"):
        list(sqlite_store.iter(Doc))
    with pytest.raises(StoreRecordError):
        sqlite_store.get(Doc, "demo:1")
