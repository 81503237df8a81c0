"""models.http.connection_room: a pool of connections fits the process's limit on open files."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX limits on open files")

SCRIPT = """
import asyncio, resource, sys
soft, hard = (int(v) for v in sys.argv[1:3])
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
from livemed.models.http import Transport

def pool():
    return Transport("http://127.0.0.1:9/v1/chat/completions", {}, concurrency=512, timeout_s=1).start()

async def main():
    first = await pool()
    second = await pool()
    print(first.connections, second.connections, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    await first.close()
    third = await pool()
    print(third.connections)
    await second.close()
    await third.close()

asyncio.run(main())
"""


def run(soft: int, hard: int) -> list[list[int]]:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(soft), str(hard)], capture_output=True, text=True, check=True
    ).stdout
    return [[int(v) for v in line.split()] for line in out.splitlines()]


def test_the_soft_limit_is_raised_to_hold_every_pool() -> None:
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 2000:
        pytest.skip(f"hard limit on open files {hard}: too low to raise the soft one to 1,280")
    assert run(256, hard) == [[512, 512, 1280], [512]]  # 2 × 512 + 256 spare


def test_a_pool_gets_the_files_left_under_a_low_hard_limit() -> None:
    (first, second, soft), (third,) = run(300, 900)
    assert (first, second, soft) == (512, 132, 900)  # the second pool: 900 - 512 - 256 spare
    assert third == 512  # the first pool's connections were given back when it closed
