"""A real deployment for the tests: `scripts/serve.py` with its workers, Redis and nginx.

`Deployment` starts it on free ports with a state folder of its own, builds the sticky-session
cookie of each worker (ce_worker names its port; for a worker of the large-image pool with
`ce_lane=large` beside it; each checked by asking the proxy which worker answered), and can kill a
worker or pause Redis. nginx and redis-server come
from CONV_EXPLORER_NGINX / CONV_EXPLORER_REDIS_SERVER when set (e.g. Debian's packages unpacked
with `dpkg -x` on a machine without root), else from PATH or /usr/sbin. Outside CI a machine
without them skips these tests with the reason; in CI that is an error (.ci/run installs both).
"""

from __future__ import annotations

import importlib.util
import json
import os
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


def _serve_module():
    """scripts/serve.py as a module (where it finds its programs, its default pools)."""
    spec = importlib.util.spec_from_file_location("conv_explorer_serve", ROOT / "scripts" / "serve.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


serve = _serve_module()
LARGE_COOKIE = f"{serve.LANE_COOKIE}=large"


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
    missing = [name for name in ("nginx", "redis-server") if not serve.program(name)]
    if missing:
        if IN_CI:
            raise RuntimeError(f"CI must install {', '.join(missing)} for the deployment tests")
        named = ", ".join(serve.PROGRAM_ENV[m] for m in missing)
        how = f"apt-get install nginx redis-server, or set {named}"
        pytest.skip(f"not installed here: {', '.join(missing)} ({how})")


class Deployment:
    def __init__(
        self,
        workers: int,
        state: Path,
        env: dict[str, str] | None = None,
        *,
        large_workers: int | None = None,
    ) -> None:
        """large_workers: how many of the workers form the large-image pool (None: serve's default)."""
        require_programs()
        self.workers = workers
        self.large_workers = serve.default_large_workers(workers) if large_workers is None else large_workers
        self.light_workers = workers - self.large_workers  # workers 0 .. light-1; the others are large
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
            "--large-workers",
            str(self.large_workers),
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
        return self.worker_named(upstream)

    def worker_named(self, upstream: str) -> int:
        """The worker an X-Conv-Worker header names last ("127.0.0.1:8503, 127.0.0.1:8502" when the
        first did not answer; "large : 127.0.0.1:8502" when nginx went on to the other pool)."""
        port = int(upstream.split(",")[-1].rsplit(":", 1)[-1])
        return port - self.port - 1

    def is_large(self, worker: int) -> bool:
        return worker >= self.light_workers

    def _cookies(self) -> dict[int, str]:
        """The cookies that send a browser to each worker: ce_worker names its port (as the proxy
        sets it), and for a worker of the large-image pool the lane cookie comes too; each one
        checked against the proxy."""
        found = {
            i: f"{serve.COOKIE}={self.port + 1 + i}" + (f"; {LARGE_COOKIE}" if self.is_large(i) else "")
            for i in range(self.workers)
        }
        wrong = {i: self.worker_of(c) for i, c in found.items() if self.worker_of(c) != i}
        if wrong:
            raise RuntimeError(f"the proxy does not send these cookies to their workers: {wrong}")
        return found

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
    # every test client comes from 127.0.0.1: one address may run a room per test. Worker 0 serves
    # the light pool, worker 1 the large-image pool (ui/lanes.py): the lanes are tested on the way
    d = Deployment(
        2,
        tmp_path_factory.mktemp("serve"),
        env={"CONV_EXPLORER_MAX_ROOMS_PER_CLIENT": "10"},
        large_workers=1,
    )
    yield d
    d.stop()
