"""A real Redis for the tests: Debian's redis-server on a free loopback port, no persistence.

`redis_url`: one server for the whole session (tests flush their database first).
`redis_server`: a server of the test's own, with stop() and start() on the same port.
Outside CI a machine without redis-server skips these tests with the reason; in CI it is an error
(.ci/run installs the package).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

from tests.support.helpers import IN_CI


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_binary() -> str:
    path = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if shutil.which("/usr/bin/redis-server") else None
    )
    if path is None:
        if IN_CI:
            raise RuntimeError("CI must install Debian's redis-server for the classroom store tests")
        pytest.skip("redis-server is not installed here (apt-get install redis-server)")
    return path


def start_redis(port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"redis-server did not answer on port {port} within 10 s")


@pytest.fixture(scope="session")
def redis_url():
    port = _free_port()
    proc = start_redis(port)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def redis_server():
    """(url, stop, start): stop() shuts the server down keeping its data (SHUTDOWN with a dump is
    off here, so the data goes: start() brings it back from a copy taken just before stopping)."""
    port = _free_port()
    url = f"redis://127.0.0.1:{port}/0"
    state = {"proc": start_redis(port), "dump": []}

    def stop() -> None:
        import redis

        client = redis.Redis.from_url(url)
        state["dump"] = [(k, client.dump(k), client.pttl(k)) for k in client.keys("*")]
        client.close()
        state["proc"].terminate()
        state["proc"].wait(timeout=10)

    def start() -> None:
        import redis

        state["proc"] = start_redis(port)
        client = redis.Redis.from_url(url)
        for key, value, ttl in state["dump"]:
            client.restore(key, max(ttl, 0), value, replace=True)
        client.close()

    yield url, stop, start
    state["proc"].terminate()
    state["proc"].wait(timeout=10)
