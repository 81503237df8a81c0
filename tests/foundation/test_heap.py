"""The collector settings of a livemed run (livemed.common.heap): frozen while it works, restored after."""

from __future__ import annotations

import gc

import pytest

from livemed.common.heap import GC_YOUNG, fewer_collections


def test_nested_blocks_freeze_what_exists_when_each_starts_and_the_outermost_restores() -> None:
    before = gc.get_threshold()
    with fewer_collections():
        outer_frozen = gc.get_freeze_count()
        assert gc.get_threshold()[0] == max(GC_YOUNG, before[0])
        made = [[i] for i in range(1_000)]  # a plan made after the outer block started
        with fewer_collections():
            assert gc.get_freeze_count() >= outer_frozen + len(made)  # the inner block froze it
            assert gc.get_threshold()[0] == max(GC_YOUNG, before[0])
        assert gc.get_freeze_count() > 0  # still frozen: the outer block is under way
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_failing_block_still_restores_the_collector() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("boom")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_the_livemed_program_runs_its_command_with_fewer_collections(monkeypatch: pytest.MonkeyPatch) -> None:
    from livemed import cli
    from livemed.cli import application

    seen: list[tuple[int, int]] = []

    def command(argv: list[str] | None = None) -> None:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        raise SystemExit(0)

    before = gc.get_threshold()
    monkeypatch.setattr(application, "run", command)
    with pytest.raises(SystemExit):
        cli.main(["stats"])
    assert len(seen) == 1
    assert seen[0][0] > 0
    assert seen[0][1] == max(GC_YOUNG, before[0])
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
