"""The Ray executor (`--executor ray`, `[executor] kind = "ray"`; install `livemed[ray]`).

`fan_out(program, argv, settings, store)` connects to Ray (`address`: unset starts a local instance, `"auto"`
joins the one running on this machine, `"ray://HOST:10001"` a remote cluster), starts one `RateActor`
and `workers` tasks, and waits for them. Each task runs `executors.inprocess.run_worker(program,
argv)` (`program`, `livemed.cli.application.run`, is pickled by reference: a worker imports it): the
same command with the in-process executor, against the same PostgreSQL store, where the workers
partition the items by claims. Every model's `requests_per_minute` / `tokens_per_minute` then holds
for all workers together: the task sets `models.limits.SHARED_RATE` to a client of the actor, which
books each request on one schedule per model id (`executors.ratelimit`). A worker whose process
dies is retried by Ray (its claims are taken over); a store that is not PostgreSQL, a cluster that
cannot be reached, or a worker that ends with an error stops the command with one line.
"""

from __future__ import annotations

import asyncio
import os
import socket
from typing import TYPE_CHECKING, Any

from livemed.cli.executors.inprocess import Program, WorkerResult, run_worker
from livemed.cli.executors.ratelimit import Reservations
from livemed.errors import ConfigError, ExecutorError, MissingDependencyError

if TYPE_CHECKING:
    from livemed.config import ExecutorConfig

CONNECT_TIMEOUT_S = 10.0
TASK_RETRIES = 2  # a worker process that dies is run again (its claims are taken over)


class RateActor:
    """The shared schedule of every model's rate limits (one instance per `fan_out`, as a Ray actor)."""

    def __init__(self) -> None:
        self.schedule = Reservations()
        self.booked = 0

    def reserve(self, key: str, rpm: float | None, tpm: float | None, tokens: int) -> float:
        self.booked += 1
        return self.schedule.reserve(key, rpm, tpm, tokens)

    def count(self) -> int:
        return self.booked


class ActorRate:
    """`models.limits.SharedRate` through the actor: one short call per request, then the wait here."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    async def wait(self, key: str, rpm: float | None, tpm: float | None, tokens: int) -> None:
        delay = await self.actor.reserve.remote(key, rpm, tpm, tokens)
        if delay > 0:
            await asyncio.sleep(delay)


def worker(program: Program, argv: list[str], cwd: str, actor: Any) -> WorkerResult:
    """One Ray task: the command, here, with cluster-wide rate limits."""
    from livemed.models import limits

    limits.SHARED_RATE = ActorRate(actor)
    try:
        return run_worker(program, argv, cwd)
    finally:
        limits.SHARED_RATE = None


def fan_out(program: Program, argv: list[str], settings: ExecutorConfig, store: str) -> list[WorkerResult]:
    """Run `program` (`livemed`) with ARGV on `settings.workers` Ray workers; print their output; raise
    if one failed."""
    from livemed.cli.context import console
    from livemed.store import display_url, resolve_url

    if not resolve_url(store).startswith("postgresql"):
        shown = display_url(resolve_url(store))
        raise ConfigError(
            f"the Ray executor needs a PostgreSQL store that every worker can reach, not {shown} "
            '(set store = "postgresql+psycopg://…" in livemed.toml, or --store)'
        )
    ray = _connect(settings)
    try:
        actor = ray.remote(num_cpus=0)(RateActor).remote()
        task = ray.remote(num_cpus=settings.cpus_per_worker, max_retries=TASK_RETRIES)(worker)
        refs = [task.remote(program, argv, os.getcwd(), actor) for _ in range(settings.workers)]
        try:
            results: list[WorkerResult] = ray.get(refs)
        except ray.exceptions.RayError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ExecutorError(
                f"a Ray worker failed: {first[:300]}; its claims expire and the next run takes them over"
            ) from None
        booked = ray.get(actor.count.remote())
    finally:
        ray.shutdown()
    _print(console, results, booked, settings)
    failed = [r for r in results if r.exit_code != 0]
    if failed:
        worst = max(failed, key=lambda r: r.exit_code)
        error = ExecutorError(f"{len(failed)} of {len(results)} Ray workers failed; first: {worst.last_line}")
        error.exit_code = worst.exit_code
        raise error
    return results


def _connect(settings: ExecutorConfig) -> Any:
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("ray", "ray") from None
    where = settings.address or "a new local instance"
    _reachable(settings.address)
    try:
        ray.init(
            address=settings.address,
            ignore_reinit_error=True,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ExecutorError(f"cannot reach the Ray cluster at {where}: {first[:300]}") from None
    return ray


def _reachable(address: str | None) -> None:
    """A cluster address that does not answer is one line at once (Ray itself would retry for minutes)."""
    if address is None or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except ValueError:
        shape = '"auto", "HOST:PORT" or "ray://HOST:PORT"'
        raise ConfigError(f"[executor] address must be {shape}, got {address!r}") from None
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise ExecutorError(f"cannot reach the Ray cluster at {address}: {reason.lower()}") from None


def _print(console: Any, results: list[WorkerResult], booked: int, settings: ExecutorConfig) -> None:
    where = settings.address or "local instance"
    console.print(f"ray ({where}): {len(results)} worker(s); {booked} request(s) booked on the shared rate")
    for n, result in enumerate(results, 1):
        where = f"pid {result.pid} on {result.host}, {result.seconds:.1f} s, {result.cpu_s:.1f} s CPU"
        where += f", exit {result.exit_code}"
        console.print(f"--- worker {n} ({where})", markup=False)
        console.print(result.stdout.rstrip(), markup=False, highlight=False)


__all__ = ["ActorRate", "RateActor", "fan_out", "worker"]
