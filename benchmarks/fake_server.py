"""The local fake OpenAI-compatible server (`tests/fakes/openai_server.py`) in a process of its own, for
the benchmarks: it answers every prompt, grading prompts with valid verdicts, after `latency` seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


class Server:
    """Start it, read its base URL, count its requests, measure its CPU, stop it."""

    def __init__(self, latency: float) -> None:
        command = [sys.executable, "-m", "tests.fakes.openai_server", "--judge", "--latency", str(latency)]
        self.process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().split()[1]

    def _call(self, path: str, method: str = "GET") -> dict[str, Any]:
        request = urllib.request.Request(self.base_url.removesuffix("/v1") + path, method=method)
        with urllib.request.urlopen(request) as response:
            data: dict[str, Any] = json.load(response)
            return data

    def stats(self) -> dict[str, Any]:
        return self._call("/_stats")

    def requests(self) -> int:
        return int(self.stats()["requests"])

    def reset(self) -> None:
        self._call("/_reset", "POST")

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)
