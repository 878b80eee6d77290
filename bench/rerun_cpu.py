"""The server's CPU per light rerun and per follower poll: what a student costs the classroom server.

`python -m bench.rerun_cpu [--pages direct backward] [--reruns 40] [--size 256] [--backend numpy]
[--followers 10] [--url URL]` starts the app on loopback (--url: a server already running, e.g.
under py-spy, whose CPU is not read), opens one session per page over the websocket
(tests/support/st_client.py), toggles the stride between 1 and 2 a few times to warm up (at the
--size working size, if given), then `--reruns` times more, and prints the server process's CPU
seconds per rerun (from /proc, Linux) and the median rerun latency. With --followers N it then
starts a room on the first page and lets N followers poll it for 20 s with nothing changing: the
server's CPU per poll (ui/classroom_ui.py POLL_S). For A/B comparisons run it on both versions
of the code on the same machine, alternately.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import time
from pathlib import Path

from tests.support.browser import _free_port, start_server
from tests.support.st_client import StClient

ROOT = Path(__file__).resolve().parent.parent
IDLE_S = 20.0
SIZE_LABEL = "Working size (longest side, px)"


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_now(proc) -> float:
    return process_cpu_s(proc.pid) if proc else float("nan")


def reruns(url: str, page: str, proc, args: argparse.Namespace) -> None:
    with StClient(url, page, timeout=300) as client:
        client.wait_idle()
        if args.size:
            client.set(SIZE_LABEL, args.size)
        for i in range(6):
            client.set("Stride S", 2 if i % 2 == 0 else 1)
        cpu0 = cpu_now(proc)
        latencies = [client.set("Stride S", 2 if i % 2 == 0 else 1) for i in range(args.reruns)]
        per_rerun = (cpu_now(proc) - cpu0) / args.reruns
        print(
            f"{page}: server CPU per rerun {per_rerun:.4f} s, median rerun "
            f"{statistics.median(latencies):.4f} s ({args.reruns} reruns)",
            flush=True,
        )


def idle_polls(url: str, page: str, proc, followers: int, size: str | None) -> None:
    teacher = StClient(url, page, timeout=300)
    clients = [teacher]
    try:
        teacher.wait_idle()
        if size:
            teacher.set(SIZE_LABEL, size)
        teacher.click("Start a room (instructor)")
        code = re.search(r"Instructing room ([A-Z0-9]{6})", teacher.text()).group(1)
        for _ in range(followers):
            clients.append(StClient(url, "", f"room={code}", timeout=300))
            clients[-1].wait_idle()
        time.sleep(5)
        cpu0, t0 = cpu_now(proc), time.perf_counter()
        time.sleep(IDLE_S)
        per_s = (cpu_now(proc) - cpu0) / (time.perf_counter() - t0)
        poll_ms = per_s / followers * 1000
        print(f"{page}, {followers} idle followers: server CPU {per_s:.3f} s/s, per poll {poll_ms:.2f} ms")
    finally:
        for c in clients:
            c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", nargs="+", default=["direct", "backward"])
    ap.add_argument("--reruns", type=int, default=40)
    ap.add_argument("--size", help="the working size to set first (longest side, px)")
    ap.add_argument("--url", help="measure this server instead of starting one (its CPU is not read)")
    ap.add_argument("--backend", default="numpy", choices=["numpy", "cupy", "auto"])
    ap.add_argument("--followers", type=int, default=0, help="then: CPU per idle poll of this many followers")
    args = ap.parse_args()
    proc = None
    url = args.url
    if url is None:
        port = _free_port()
        env = {"CONV_EXPLORER_BACKEND": args.backend, "CONV_EXPLORER_MAX_FOLLOWERS": "400"}
        proc = start_server(port, env=env)
        url = f"http://127.0.0.1:{port}"
    try:
        with StClient(url, "", timeout=300) as warm:  # a fresh server learns its pages on its first run
            warm.wait_idle()
        for page in args.pages:
            reruns(url, page, proc, args)
        if args.followers:
            idle_polls(url, args.pages[0], proc, args.followers, args.size)
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=20)


if __name__ == "__main__":
    main()
