"""Two ways a class broke a freshly started server, each on a server of its own.

- Concurrent first visits: a class follows the projector's link at the same moment. Eight
  sessions open /direct together on a fresh server; every one must finish its first run without
  an exception (a process-wide patch of Plotly made once, unlocked, recursed for all of them).
- A rerun flood: one session asks for reruns as fast as it can while another works. The
  server's thread count stays bounded (Streamlit stops a cancelled run; nothing of ours may make
  it wait) and the working session keeps getting its reruns.

No timing is asserted: the checks are errors, counts and liveness within generous limits.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.conftest import require

FIRST_VISITORS = 8
FLOOD_SECONDS = 8.0
MAX_SERVER_THREADS = 60  # a quiet server has about 20; the flood made thousands
WORKER_RERUNS = 5  # the other session's reruns during the flood


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise AssertionError("no thread count in /proc")


@pytest.fixture
def fresh_server():
    require("streamlit", "the server fault tests")
    from tests.browser import _free_port, start_server

    port = _free_port()
    proc = start_server(port)
    yield f"http://127.0.0.1:{port}", proc
    proc.terminate()
    proc.wait(timeout=20)


def test_eight_first_visits_at_once_all_render(fresh_server) -> None:
    from tests.st_client import StClient

    url, _proc = fresh_server
    clients: list[StClient | None] = [None] * FIRST_VISITORS
    failures: list[str] = []
    go = threading.Barrier(FIRST_VISITORS)

    def visit(i: int) -> None:
        go.wait()
        try:
            clients[i] = StClient(url, "direct", "cap=64", timeout=120)
            clients[i].wait_idle()
        except Exception as exc:  # a connection refused or a run that never ended
            failures.append(f"visitor {i}: {exc!r}")

    threads = [threading.Thread(target=visit, args=(i,)) for i in range(FIRST_VISITORS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    try:
        assert not failures, failures
        for i, c in enumerate(clients):
            assert c is not None
            assert not c.errors, f"visitor {i}: {c.errors}"
            assert any("Direct convolution" in t for t in c.texts(main_only=True)), f"visitor {i}"
        with StClient(url, "direct", "cap=64", timeout=120) as later:  # and the next visitor too
            later.wait_idle()
            assert not later.errors, later.errors
    finally:
        for c in clients:
            if c is not None:
                c.close()


def test_a_rerun_flood_leaves_threads_bounded_and_others_served(fresh_server) -> None:
    from tests.st_client import StClient

    url, proc = fresh_server
    flooder = StClient(url, "direct", "cap=64", timeout=120)
    worker = StClient(url, "reflect", "cap=64", timeout=120)
    stop = threading.Event()
    try:
        flooder.wait_idle()
        worker.wait_idle()

        def flood() -> None:
            while not stop.is_set():
                flooder.rerun(wait=False)
                time.sleep(0.001)

        peak = [_threads(proc.pid)]
        t = threading.Thread(target=flood, daemon=True)
        t.start()
        served = 0
        end = time.monotonic() + FLOOD_SECONDS
        while time.monotonic() < end or served < WORKER_RERUNS:
            worker.set("Left pad", 1 + served % 3)  # raises TimeoutError if the server stalls
            served += 1
            peak.append(_threads(proc.pid))
        stop.set()
        t.join(timeout=10)
        assert max(peak) <= MAX_SERVER_THREADS, f"server threads reached {max(peak)}"
        assert not worker.errors, worker.errors
        flooder.wait_idle(60)  # the flooder itself recovers
        assert not flooder.errors, flooder.errors
    finally:
        stop.set()
        flooder.close()
        worker.close()
