"""Scale: every step over generated HealthBench-format workloads, on SQLite and PostgreSQL.

Generates N examples (default 1,000 / 10,000 / 100,000; ~6.5 criteria each, with tags and themes and
an ideal completion), then runs the real `livemed` commands, each as its own process with offline
models (no network): `import-healthbench`, `answer` for two candidates (`offline/reference`,
`offline/empty`), `grade --judge offline/lexical`, the same `grade` again (nothing to do), `scores`
twice (the second with nothing new), `leaderboard`, `contamination` and `report`. For each step it
prints wall time, CPU time (user + system), peak RSS (the process's own `ru_maxrss`), the rate, and the
store size after it;
then the growth ratio of each step's time between consecutive sizes (linear = 10× for 10× the work;
the issue's bound is 11×). Prints `uptime` first and last: the machine is shared.

    .venv/bin/python benchmarks/scale.py [--sizes 1000 10000] [--backends sqlite postgresql]
        [--repeat 3] [--once-from 100000] [--steps import answer-1 grade ...] [--against SRC]

With two backends it also prints each step's PostgreSQL ÷ SQLite ratio of median wall and CPU time
(the issue's bound for PostgreSQL: 2×). `--against SRC` runs another checkout's sources (e.g.
`git archive main src | tar -x -C /tmp/base`, then `--against /tmp/base/src`, run with PYTHONPATH) in
turn with this one, run for run, and prints this ÷ that per step.

`--steps` chooses the steps reported; the import, both answers and the first `grade` always run (the
others need them), and `scores` runs when it or an analysis is asked for.

PostgreSQL needs LIVEMED_TEST_POSTGRES_URL (a database is created and dropped per run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bytecode import compile_sources  # benchmarks/ is on the path of a script run

PROGRAM = Path(sys.executable).with_name("livemed")
CANDIDATES = ("offline/reference", "offline/empty")
JUDGE = "offline/lexical"
THEMES = ("emergency_referrals", "context_seeking", "global_health", "hedging", "communication")
AXES = ("accuracy", "completeness", "communication_quality", "context_awareness", "instruction_following")
LINES = (
    "fever cough chest pain breath rash dizziness headache nausea vomiting fatigue swelling",
    "antibiotics ibuprofen paracetamol fluids rest doctor emergency urgent hours days weeks",
    "blood pressure sugar insulin dose allergy asthma inhaler infection wound bleeding",
)
WORDS = " ".join(LINES).split()


def workload(path: Path, n: int) -> Path:
    """N HealthBench examples: 6 or 7 criteria (one negative), axis/level tags, a theme, an ideal answer."""
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            count = 6 + (i % 2)
            items = []
            for k in range(count - 1):
                a, b, c = (WORDS[(i * 7 + k * 3 + j) % len(WORDS)] for j in range(3))
                items.append(
                    {
                        "criterion": f"Advises about {a} and {b}, mentions {c} (item {k})",
                        "points": (k % 5) + 1,
                        "tags": [f"axis:{AXES[k % len(AXES)]}", "level:example"],
                    }
                )
            items.append(
                {
                    "criterion": "Recommends antibiotics without any indication",
                    "points": -5,
                    "tags": ["axis:accuracy", "level:example"],
                }
            )
            w = [WORDS[(i + j) % len(WORDS)] for j in range(6)]
            prompt = [
                {
                    "role": "user",
                    "content": f"I have {w[0]} and {w[1]} for {i % 20 + 1} days (case {i}). What to do?",
                }
            ]
            ideal = f"See a doctor about the {w[0]} and {w[1]}; keep {w[2]} in mind; {w[3]}, {w[4]}, {w[5]}."
            line = {
                "prompt_id": f"scale-{i:07d}",
                "prompt": prompt,
                "rubrics": items,
                "example_tags": [f"theme:{THEMES[i % len(THEMES)]}"],
                "ideal_completions_data": {"ideal_completion": ideal, "ideal_completions_group": "Group 1"},
            }
            handle.write(json.dumps(line) + "\n")
    return path


@dataclass
class Step:
    name: str
    wall_s: float
    cpu_s: float  # user + system time of the process: less sensitive than wall time to a loaded machine
    server_s: float | None  # PostgreSQL: CPU of the server's backends that ended meanwhile (see server_cpu)
    rss_mib: float
    size_mib: float
    units: int  # examples, answers or grades the step handles (for the rate)
    autovacuum: bool = False  # PostgreSQL: an autovacuum worker ran on the store while the step did


def run(
    folder: Path,
    store: str,
    name: str,
    units: int,
    *argv: str,
    allow: tuple[int, ...] = (0,),
    source: str | None = None,
) -> Step:
    env = {**os.environ, "COLUMNS": "160", "LIVEMED_STORE": store}
    server = server_cpu(store)
    if source:  # another checkout's livemed, ahead of this environment's
        env["PYTHONPATH"] = source
    started = time.monotonic()
    with AutovacuumWatch(store) as watch:
        process = subprocess.Popen(
            [str(PROGRAM), *argv], cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        assert process.stderr is not None
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - started
    code = os.waitstatus_to_exitcode(status)
    if code not in allow:
        raise SystemExit(f"livemed {' '.join(argv)} exited {code}: {process.stderr.read().decode()[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    served = None if server is None else (server_cpu(store) or 0.0) - server
    return Step(name, wall, cpu, served, usage.ru_maxrss / 1024, store_size(store), units, watch.seen)


class AutovacuumWatch:
    """Whether PostgreSQL's autovacuum worked on the store's database while a step ran (polled every
    0.25 s from `pg_stat_activity`): its upkeep of an earlier step's writes (the visibility map and
    statistics after `grade`'s 130,000 rows) shares the two cores and counts in the server's CPU."""

    def __init__(self, store: str) -> None:
        self.store, self.seen = store, False
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def __enter__(self) -> AutovacuumWatch:
        if "://" in self.store:
            self.thread = threading.Thread(target=self._poll, daemon=True)
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()

    def _poll(self) -> None:
        import sqlalchemy as sa

        engine = sa.create_engine(self.store, poolclass=sa.pool.NullPool)
        query = sa.text(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE backend_type = 'autovacuum worker' AND datname = current_database()"
        )
        try:
            with engine.connect() as conn:
                while not self.stop.wait(0.25):
                    self.seen = self.seen or bool(conn.execute(query).scalar_one())
                    conn.rollback()
        finally:
            engine.dispose()


def server_cpu(store: str) -> float | None:
    """A local PostgreSQL server's CPU seconds so far in the backends that have ended: the postmaster's
    children's user + system time (`/proc/<pid>/stat` fields 16-17), which grows by a backend's CPU
    when the backend exits. A step's command closes its connections when it ends, so the difference
    over the step is the server's work for it (plus any other client's backends that ended
    meanwhile: the server may be shared). None when the server's files are not readable here."""
    if "://" not in store:
        return None
    import sqlalchemy as sa

    engine = sa.create_engine(store)
    try:
        with engine.connect() as conn:
            folder = conn.execute(sa.text("SHOW data_directory")).scalar_one()
        pid = (Path(folder) / "postmaster.pid").read_text().split()[0]
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (sa.exc.DBAPIError, OSError, IndexError):
        return None
    finally:
        engine.dispose()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def store_size(store: str) -> float:
    if "://" not in store:
        path = Path(store)
        files = [path, path.with_name(path.name + "-wal")]
        return sum(f.stat().st_size for f in files if f.exists()) / 2**20
    import sqlalchemy as sa

    engine = sa.create_engine(store)
    with engine.connect() as conn:
        size = conn.execute(sa.text("SELECT pg_database_size(current_database())")).scalar_one()
    engine.dispose()
    return int(size) / 2**20


class Backend:
    """A fresh store per run: a SQLite file in the run's folder, or a new PostgreSQL database."""

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind, self.folder, self.database = kind, folder, ""

    def __enter__(self) -> str:
        if self.kind == "sqlite":
            return str(self.folder / "livemed.db")
        import sqlalchemy as sa

        base = os.environ.get("LIVEMED_TEST_POSTGRES_URL")
        if not base:
            raise SystemExit("postgresql: set LIVEMED_TEST_POSTGRES_URL")
        self.base = base
        self.database = f"livemed_scale_{uuid.uuid4().hex[:10]}"
        engine = sa.create_engine(base, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {self.database}"))
        engine.dispose()
        return str(sa.make_url(base).set(database=self.database).render_as_string(hide_password=False))

    def __exit__(self, *exc: object) -> None:
        if self.database:
            import sqlalchemy as sa

            engine = sa.create_engine(self.base, isolation_level="AUTOCOMMIT")
            with engine.connect() as conn:
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)"))
            engine.dispose()


STEPS = (
    "import",
    "answer-1",
    "answer-2",
    "grade",
    "grade-again",
    "scores",
    "scores-again",
    "leaderboard",
    "contamination",
    "report",
)


def measure(
    backend: str, data: Path, n: int, steps: tuple[str, ...], source: str | None = None
) -> list[Step]:
    criteria = sum(6 + (i % 2) for i in range(n))
    answers, grades = n * len(CANDIDATES), criteria * len(CANDIDATES)
    judge = ["--judge", JUDGE]
    out: list[Step] = []
    with tempfile.TemporaryDirectory(prefix="livemed-scale-") as tmp, Backend(backend, Path(tmp)) as store:
        folder = Path(tmp)
        plan: list[tuple[str, int, list[str], tuple[int, ...]]] = [
            ("import", n, ["import-healthbench", str(data), "--published", "2025-03-01"], (0,)),
            *((f"answer-{k + 1}", n, ["answer", "-m", m], (0,)) for k, m in enumerate(CANDIDATES)),
            ("grade", grades, ["grade", *judge], (0,)),
            ("grade-again", grades, ["grade", *judge], (0,)),
            ("scores", grades, ["scores", *judge], (0,)),
            ("scores-again", grades, ["scores", *judge], (0,)),
            ("leaderboard", answers, ["leaderboard", *judge, "--out", str(folder / "lb")], (0,)),
            ("contamination", answers, ["contamination", *judge, "--out", str(folder / "ct")], (0, 1)),
            ("report", answers, ["report", *judge, "--out", str(folder / "report.html")], (0, 1)),
        ]
        needed = {"import", "answer-1", "answer-2", "grade"}  # every later step needs these
        if steps_after("scores", steps):
            needed.add("scores")
        for name, units, argv, allow in plan:
            if name in steps or name in needed:
                step = run(folder, store, name, units, *argv, allow=allow, source=source)
                if name in steps:
                    out.append(step)
                served = "" if step.server_s is None else f"server {step.server_s:6.2f} s  "
                served += "autovacuum  " if step.autovacuum else ""
                print(
                    f"  {label(source):8} {backend:10} n={n:>7} {name:14} {step.wall_s:8.2f} s  "
                    f"cpu {step.cpu_s:7.2f} s  {served}"
                    f"{step.rss_mib:7.0f} MiB  "
                    f"{units / step.wall_s:10.0f} /s  store {step.size_mib:8.1f} MiB",
                    flush=True,
                )
    return out


def steps_after(name: str, steps: tuple[str, ...]) -> bool:
    """Whether `name` or a step after it is asked for (the analyses read what `scores` wrote)."""
    return any(STEPS.index(step) >= STEPS.index(name) for step in steps)


def label(source: str | None) -> str:
    return "against" if source else "this"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument("--repeat", type=int, default=3, help="runs per size below --once-from")
    parser.add_argument("--once-from", type=int, default=100_000, help="sizes from this one run once")
    parser.add_argument("--steps", nargs="+", default=list(STEPS), choices=STEPS)
    parser.add_argument("--against", help="another checkout's src folder, run in turn with this one")
    args = parser.parse_args()
    sources = [None, str(Path(args.against).resolve())] if args.against else [None]
    compile_sources(*(s for s in sources if s))  # time the start-up an install has (bytecode.py)
    print(f"load before: {uptime()}")
    results: dict[tuple[str, str, int], dict[str, list[Step]]] = {}
    with tempfile.TemporaryDirectory(prefix="livemed-scale-data-") as tmp:
        for n in args.sizes:
            data = workload(Path(tmp) / f"healthbench-{n}.jsonl", n)
            repeat = 1 if n >= args.once_from else args.repeat
            for _ in range(repeat):  # interleaved: each run of every backend and source in turn
                for backend in args.backends:
                    for source in sources:
                        cell = results.setdefault((label(source), backend, n), {})
                        for step in measure(backend, data, n, tuple(args.steps), source):
                            cell.setdefault(step.name, []).append(step)
                print(f"  load: {uptime()}", flush=True)
    print(f"load after: {uptime()}")
    summary(results, args)
    ratios(results, args)


Results = dict[tuple[str, str, int], dict[str, list[Step]]]  # (source label, backend, size) → steps


def summary(results: Results, args: Any) -> None:
    print(
        "\nmedian wall s [min–max] · median CPU s [min–max] · peak RSS MiB (max) · rate /s (wall) · store MiB"
    )
    for (code, backend, n), cell in results.items():
        for name, steps in cell.items():
            walls, cpus = [s.wall_s for s in steps], [s.cpu_s for s in steps]
            med = statistics.median(walls)
            print(
                f"{code:8} {backend:10} n={n:>7} {name:14} {med:8.2f} [{min(walls):.2f}–{max(walls):.2f}]  "
                f"cpu {statistics.median(cpus):7.2f} [{min(cpus):.2f}–{max(cpus):.2f}]  "
                f"{max(s.rss_mib for s in steps):7.0f} MiB  {steps[0].units / med:10.0f} /s  "
                f"{steps[-1].size_mib:8.1f} MiB{served(steps)}"
            )
    print("\ngrowth of median wall (and CPU) time between sizes (work grows by the size ratio; bound 1.1×)")
    for backend in args.backends:
        for small, large in zip(args.sizes, args.sizes[1:], strict=False):
            a, b = results.get(("this", backend, small), {}), results.get(("this", backend, large), {})
            for name in args.steps:
                if name in a and name in b:
                    ta = statistics.median(s.wall_s for s in a[name])
                    tb = statistics.median(s.wall_s for s in b[name])
                    ca = statistics.median(s.cpu_s for s in a[name])
                    cb = statistics.median(s.cpu_s for s in b[name])
                    ratio, work = tb / ta, large / small
                    print(
                        f"{backend:10} {name:14} {small}→{large}: ×{ratio:.1f} (CPU ×{cb / ca:.1f}) "
                        f"(work ×{work:g}; wall ratio to bound {ratio / (1.1 * work):.2f})"
                    )


def ratios(results: Results, args: Any) -> None:
    """PostgreSQL ÷ SQLite per step (each source), and this ÷ the `--against` source per step."""
    pairs = []
    if {"sqlite", "postgresql"} <= set(args.backends):
        pairs += [
            (f"{code}: postgresql ÷ sqlite", (code, "postgresql", n), (code, "sqlite", n))
            for code in ("this", "against")
            for n in args.sizes
        ]
    if args.against:
        pairs += [
            (f"{backend}: this ÷ against", ("this", backend, n), ("against", backend, n))
            for backend in args.backends
            for n in args.sizes
        ]
    for title, top, bottom in pairs:
        a, b = results.get(top), results.get(bottom)
        if not a or not b:
            continue
        print(f"\n{title}, n={top[2]} (median wall, median CPU)")
        for name in args.steps:
            if name in a and name in b:
                wall = statistics.median(s.wall_s for s in a[name]) / statistics.median(
                    s.wall_s for s in b[name]
                )
                cpu = statistics.median(s.cpu_s for s in a[name]) / statistics.median(
                    s.cpu_s for s in b[name]
                )
                total = statistics.median(s.cpu_s + (s.server_s or 0) for s in a[name]) / statistics.median(
                    s.cpu_s + (s.server_s or 0) for s in b[name]
                )
                print(f"  {name:14} wall ×{wall:.2f}  CPU ×{cpu:.2f}  CPU with the server's ×{total:.2f}")


def served(steps: list[Step]) -> str:
    """The median server CPU of PostgreSQL steps [min–max], when it was measured."""
    times = [s.server_s for s in steps if s.server_s is not None]
    if not times:
        return ""
    vacuumed = sum(s.autovacuum for s in steps)
    seen = f", autovacuum in {vacuumed} of {len(steps)}" if vacuumed else ""
    return f"  server cpu {statistics.median(times):.2f} [{min(times):.2f}–{max(times):.2f}]{seen}"


if __name__ == "__main__":
    main()
