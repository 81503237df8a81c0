"""Read-only commands in a folder without a store say so; they never create a stray livemed.db."""

from __future__ import annotations

from pathlib import Path

import pytest

from livemed.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ("leaderboard",),
        ("store", "info"),
        ("funnel",),
        ("scores", "--judge", "offline/lexical"),
        ("trends",),
        ("contamination",),
        ("taxonomy",),
        ("report",),
        ("export", "out.jsonl"),
    ],
)
def test_a_read_command_in_an_empty_folder_creates_no_store(
    argv: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LIVEMED_STORE", raising=False)
    monkeypatch.setenv("COLUMNS", "200")  # else main() widens the shared console for the tests after this
    code, err = run(capsys, *argv)
    assert code == 2
    assert "no store at" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "livemed.db").exists()
    assert list(tmp_path.iterdir()) == []
