"""One exception tree for livemed.

```
LivemedError                      root: anything livemed raises on purpose
├── UserError                     the user can fix it; the CLI prints one line, exit code 2
│   ├── ConfigError               a bad livemed.toml, option or environment variable
│   ├── UnknownNameError          a registry miss ("did you mean …")
│   ├── MissingDependencyError    an optional extra is not installed (carries the pip hint)
│   ├── InputFileError            a bad input file (carries path and line number)
│   ├── OutputError               a file or folder that cannot be written (read-only, full disk, …)
│   ├── StoreOpenError            the store cannot be opened (not a database, unreachable server)
│   ├── StoreVersionError         the store was written by a newer livemed
│   ├── StoreLockedError          another process holds the SQLite write lock
│   └── StageBusyError            another live process runs the same stage and model on this store
└── RunError                      the run itself failed; the CLI prints one line, exit code 1
    ├── ModelError                an LLM call failed (raised by models, caught by the engine)
    │   ├── FatalModelError       400/401/403/404, a bad configuration: retrying would not help
    │   │   └── NotSentError      found before any request left (a missing API key): nothing was sent
    │   ├── TransientModelError   429, 5xx, timeouts, connection errors: worth a retry
    │   └── NoTextError           the endpoint answered with no usable text (truncated, or none)
    ├── StoreRecordError          a stored record does not validate (written by another livemed version)
    ├── SourceError               a data source failed for this run
    ├── RetrievalError            an evidence search failed (not the same as finding nothing)
    ├── BudgetExceededError       --max-cost would be exceeded
    ├── CallsFailedError          items ended as call failures (stored; the next run retries them)
    └── ExecutorError             the executor could not run the command (unreachable cluster, failed worker)

The engine turns model errors into `CallFailure` values after its retries, and the Validator turns a
`RetrievalError` into a retryable `retrieval_failed` rejection, so neither normally reaches the CLI.
The model errors are defined in `livemed.models.base`, the rest here.
```

Outside the tree are internal signals, each caught inside livemed: `Truncated` and `Unreachable`
(`models.http`; `models.openai` turns them into a TransientModelError), `_Disabled` (`models.engine`),
`StepFailed` (`rubrics.write`) and `Unsupported` (`judges.calculators`, a ValueError); and
`UnreadableVerdicts` (`releases.exports.inspect_eval`, a RuntimeError) is raised to Inspect, which
records the sample as an error. `Terminated` (`cli.signals`) is SIGTERM as a KeyboardInterrupt: the
run unwinds as on Ctrl-C and the CLI exits 143.

Per-item failures (a bad record, an unparsable verdict) are *data*, not exceptions: they become
`Rejection` or `GradeFailure` records and the run goes on. Messages never contain API keys.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path


class LivemedError(Exception):
    """Root of every error livemed raises on purpose."""

    exit_code = 1


class UserError(LivemedError):
    """Something the user can fix; shown as one line without a traceback."""

    exit_code = 2


class ConfigError(UserError):
    """A bad configuration file, option or environment variable."""


class UnknownNameError(UserError):
    """A name that is not in a registry."""

    def __init__(self, what: str, name: str, known: Iterable[str]) -> None:
        known = sorted(known)
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        listing = f" (known: {', '.join(known)})" if known and not close else ""
        super().__init__(f"unknown {what} {name!r}{hint}{listing}")
        self.name = name
        self.suggestions = close


class MissingDependencyError(UserError):
    """An optional dependency is missing."""

    def __init__(self, package: str, extra: str) -> None:
        super().__init__(f"{package} is not installed; run: pip install 'livemed[{extra}]'")
        self.package = package
        self.extra = extra


class InputFileError(UserError):
    """A bad input file; names the file and, where known, the line."""

    def __init__(self, path: str | Path, message: str, line: int | None = None) -> None:
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line = line
        self.detail = message


class OutputError(UserError):
    """A file or folder that cannot be written: a read-only folder, a full disk, a file in the way."""


class StoreOpenError(UserError):
    """The store cannot be opened: not a database, a folder, or a server that does not answer."""


class StoreVersionError(UserError):
    """The store's schema is newer than this livemed understands."""


class StoreLockedError(UserError):
    """Another process holds the store's write lock for too long."""


class StageBusyError(UserError):
    """Another live process already runs this stage with this model on the store (see `store.leases`)."""


class RunError(LivemedError):
    """The run itself failed."""


class ModelError(RunError):
    """An LLM call failed (see `livemed.models.base` for its kinds)."""


class StoreRecordError(RunError):
    """A stored record that does not validate with this livemed version."""


class SourceError(RunError):
    """A data source failed for this run."""


class RetrievalError(RunError):
    """An evidence search that failed (not the same as finding nothing)."""


class BudgetExceededError(RunError):
    """Going on would exceed the cost budget."""


class CallsFailedError(RunError):
    """Items ended as call failures: stored as such and retried by the next run; the command exits 1."""


class ExecutorError(RunError):
    """The executor could not run the command: a cluster that cannot be reached, a worker that failed."""
