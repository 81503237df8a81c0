from __future__ import annotations

from livemed.errors import (
    ConfigError,
    InputFileError,
    LivemedError,
    MissingDependencyError,
    ModelError,
    RetrievalError,
    RunError,
    UnknownNameError,
    UserError,
)


def test_tree_and_exit_codes() -> None:
    assert issubclass(ConfigError, UserError)
    from livemed.models import FatalModelError, TransientModelError

    assert issubclass(FatalModelError, ModelError)
    assert issubclass(TransientModelError, ModelError)
    assert issubclass(ModelError, RunError)
    assert issubclass(RetrievalError, RunError)
    assert issubclass(UserError, LivemedError)
    assert UserError("x").exit_code == 2
    assert RunError("x").exit_code == 1


def test_unknown_name_suggests_close_matches_or_lists_known() -> None:
    error = UnknownNameError("source", "pubmd", ["pubmed", "europepmc", "files"])
    assert "did you mean 'pubmed'" in str(error)
    far = UnknownNameError("source", "zzz", ["pubmed", "files"])
    assert "known: files, pubmed" in str(far)


def test_input_and_dependency_errors_say_where_and_how() -> None:
    assert str(InputFileError("a.jsonl", "bad", line=3)) == "a.jsonl:3: bad"
    assert "pip install 'livemed[postgres]'" in str(MissingDependencyError("psycopg", "postgres"))
