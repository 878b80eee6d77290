"""A real deployment for the tests: `scripts/serve.py` with its workers, Redis and nginx.

`Deployment` starts it on free ports with a state folder of its own, finds a sticky-session cookie
for each worker (by asking the proxy which worker answered), and can kill a worker or pause Redis.
Outside CI a machine without nginx or redis-server skips these tests with the reason; in CI that
is an error (.ci/run installs both).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.helpers import IN_CI

ROOT = Path(__file__).resolve().parents[2]


def _free_block(n: int) -> int:
    """A port p with p .. p+n free on loopback (the proxy and its workers)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + n >= 65535:
            continue
        ok = True
        for p in range(base, base + n + 1):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no block of free ports")


def require_programs() -> None:
    missing = [
        name
        for name in ("nginx", "redis-server")
        if not (shutil.which(name) or shutil.which(name, path="/usr/sbin"))
    ]
    if missing:
        if IN_CI:
            raise RuntimeError(f"CI must install {', '.join(missing)} for the deployment tests")
        pytest.skip(f"not installed here: {', '.join(missing)} (apt-get install nginx redis-server)")


class Deployment:
    def __init__(self, workers: int, state: Path, env: dict[str, str] | None = None) -> None:
        require_programs()
        self.workers = workers
        self.state = state
        self.port = _free_block(workers + 1)
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [
            sys.executable,
            str(ROOT / "scripts" / "serve.py"),
            "--workers",
            str(workers),
            "--port",
            str(self.port),
            "--host",
            "127.0.0.1",
            "--state",
            str(state),
        ]
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env={**os.environ, "CONV_EXPLORER_BACKEND": "numpy", **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=(state / "serve.log").open("wb"),
        )
        deadline = time.monotonic() + 120
        while not self._all_answer():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(
                    f"the deployment did not start: {(state / 'serve.log').read_text()[-2000:]}"
                )
            time.sleep(0.3)
        self.cookies = self._cookies()

    def _all_answer(self) -> bool:
        table = self.children()
        if not table:
            return False
        return all(
            self._answers(info["port"]) for name, info in table.items() if name.startswith("worker")
        ) and (self.worker_of(None) is not None)

    @staticmethod
    def _answers(port: int) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def children(self) -> dict:
        try:
            return json.loads((self.state / "children.json").read_text())
        except (OSError, ValueError):
            return {}

    def worker_of(self, cookie: str | None) -> int | None:
        """Which worker the proxy sends a browser with this cookie to (None: no answer)."""
        req = urllib.request.Request(
            self.url + "/_stcore/health", headers={"Cookie": cookie} if cookie else {}
        )
        try:
            with urllib.request.urlopen(req, timeout=3) as r:
                upstream = r.headers.get("X-Conv-Worker", "")
        except OSError:
            return None
        port = int(upstream.split(",")[-1].rsplit(":", 1)[-1])
        return port - self.port - 1

    def _cookies(self) -> dict[int, str]:
        """One sticky cookie per worker."""
        found: dict[int, str] = {}
        for i in range(500):
            cookie = f"ce_worker=test{i}"
            w = self.worker_of(cookie)
            if w is not None:
                found.setdefault(w, cookie)
            if len(found) == self.workers:
                return found
        raise RuntimeError(f"no cookie for every worker: {found}")

    def kill_worker(self, i: int) -> int:
        pid = self.children()[f"worker{i}"]["pid"]
        os.kill(pid, signal.SIGKILL)
        return pid

    def pause_redis(self, paused: bool) -> None:
        os.kill(self.children()["redis"]["pid"], signal.SIGSTOP if paused else signal.SIGCONT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    # every test client comes from 127.0.0.1: one address may run a room per test
    d = Deployment(2, tmp_path_factory.mktemp("serve"), env={"CONV_EXPLORER_MAX_ROOMS_PER_CLIENT": "10"})
    yield d
    d.stop()
