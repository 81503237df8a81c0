"""The review tests' stores: a copy of `livemed demo`'s store with an audit sample, and a tiny hostile one."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from livemed.records import Grade
from livemed.review.sample import draw_sample
from livemed.review.tokens import invite
from livemed.store import Store
from tests.builders import make_answer, make_case, make_rubric
from tests.shell_docs import program_env, run_shell, tail

JUDGE = "offline/lexical"
HOSTILE = "<script>document.documentElement.dataset.pwned = '1'</script><b>bold?</b> & <i>"


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store `livemed demo` builds (graded by offline/lexical); copy it before writing."""
    root = tmp_path_factory.mktemp("review-demo")
    done = run_shell("livemed demo --out project", root, program_env(root / "cache"))
    assert done.returncode == 0, tail(done)
    return root / "project" / "livemed.db"


@pytest.fixture
def review_store(tmp_path: Path, demo_db: Path) -> Iterator[Store]:
    """A copy of the demo store with offline/lexical's audit sample (40 verdicts, a quarter double)."""
    shutil.copy(demo_db, tmp_path / "review.db")
    store = Store(tmp_path / "review.db")
    store.put([draw_sample(store, JUDGE, 40, seed=5, double_share=0.25)])
    yield store
    store.close()


def hostile_store(store: Store) -> list[Grade]:
    """One case whose complaint, question and answer carry markup and a script, every criterion graded
    and all of it in the audit sample; its grades."""
    case = make_case("demo:hostile", query=f"Is this safe? {HOSTILE}")
    case = case.model_copy(
        update={"narrative": case.narrative.model_copy(update={"chief_complaint": [HOSTILE]})}
    )
    rubric = make_rubric(case)
    answer = make_answer(case, f"My answer {HOSTILE}", "fake/candidate")
    grades = [
        Grade(answer_id=answer.id, case_id=case.id, criterion_id=c.id, judge=JUDGE, met=i % 2 == 0)
        for i, c in enumerate(rubric.criteria)
    ]
    store.put([case, rubric, answer, *grades])
    store.put([draw_sample(store, JUDGE, 100, seed=1, double_share=0.0)])
    return grades


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "no CSRF field in the page"
    return found.group(1)


def logged_in(client: TestClient, store: Store, name: str) -> str:
    """Invite `name`, open the link in `client`; the session's CSRF token."""
    response = client.get(f"/login?token={invite(store, name)}")
    assert response.status_code == 200, response.text
    return csrf_of(response.text)
