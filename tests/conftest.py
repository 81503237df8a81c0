"""Shared fixtures: a fresh store per test (SQLite; PostgreSQL when configured) and the real data folder."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from livemed.store import Store

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_data_dir() -> Path:
    """`$LIVEMED_SHARED_DATA`, else `../shared/data` beside the repository."""
    return Path(os.environ.get("LIVEMED_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture
def shared_data() -> Path:
    """The folder of real public data sets; tests using it skip when it is absent."""
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"real data folder {path} is absent (set LIVEMED_SHARED_DATA)")
    return path


@pytest.fixture
def kqa_store(tmp_path: Path, shared_data: Path) -> Path:
    """A store with 6 K-QA cases imported through the CLI (the answer/grade command tests start from it)."""
    from tests.cli.test_stage_commands import run

    store = tmp_path / "s.db"
    out = run(
        store,
        "import-kqa",
        str(shared_data / "k-qa" / "questions_w_answers.jsonl"),
        "--published",
        "2024-01-01",
        "--limit",
        "6",
    )
    assert "imported 6 case(s)" in out
    return store


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "store.db")
    yield store
    store.close()


def _postgres_url() -> str | None:
    return os.environ.get("LIVEMED_TEST_POSTGRES_URL")


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh store on SQLite, and on PostgreSQL when LIVEMED_TEST_POSTGRES_URL is set (CI sets it)."""
    if request.param == "sqlite":
        store = Store(tmp_path / "store.db")
        yield store
        store.close()
        return
    base = _postgres_url()
    if not base:
        pytest.skip("PostgreSQL not configured (set LIVEMED_TEST_POSTGRES_URL; .ci/run does)")
    yield from _fresh_postgres(base)


def _fresh_postgres(base: str) -> Iterator[Store]:
    import sqlalchemy as sa

    from livemed.store import resolve_url

    name = f"livemed_test_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(resolve_url(base), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    url = sa.make_url(resolve_url(base)).set(database=name).render_as_string(hide_password=False)
    store = Store(url)
    try:
        yield store
    finally:
        store.close()
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()
