"""The server's CPU per light rerun: what one student moving a slider costs the classroom server.

`python -m bench.rerun_cpu [--pages direct backward] [--reruns 40] [--size 256] [--url URL]` starts
the app on loopback (CPU backend; --url: a server already running, e.g. under py-spy), opens one
session per page over the websocket (tests/support/st_client.py), toggles the stride between 1 and
2 a few times to warm up (at the --size working size, if given), then `--reruns` times more, and
prints the server process's CPU seconds per rerun (from /proc, Linux) and the median rerun latency.
For A/B comparisons run it on both versions of the code on the same machine, alternately.
"""

from __future__ import annotations

import argparse
import os
import statistics
from pathlib import Path

from tests.support.browser import _free_port, start_server
from tests.support.st_client import StClient

ROOT = Path(__file__).resolve().parent.parent


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", nargs="+", default=["direct", "backward"])
    ap.add_argument("--reruns", type=int, default=40)
    ap.add_argument("--size", help="the working size to set first (longest side, px)")
    ap.add_argument("--url", help="measure this server instead of starting one (its CPU is not read)")
    args = ap.parse_args()
    proc = None
    url = args.url
    if url is None:
        port = _free_port()
        proc = start_server(port)
        url = f"http://127.0.0.1:{port}"
    try:
        with StClient(url, "", timeout=300) as warm:  # a fresh server learns its pages on its first run
            warm.wait_idle()
        for page in args.pages:
            with StClient(url, page, timeout=300) as client:
                client.wait_idle()
                if args.size:
                    client.set("Working size (longest side, px)", args.size)
                for i in range(6):
                    client.set("Stride S", 2 if i % 2 == 0 else 1)
                cpu0 = process_cpu_s(proc.pid) if proc else 0.0
                latencies = [client.set("Stride S", 2 if i % 2 == 0 else 1) for i in range(args.reruns)]
                per_rerun = (process_cpu_s(proc.pid) - cpu0) / args.reruns if proc else float("nan")
                print(
                    f"{page}: server CPU per rerun {per_rerun:.4f} s, median rerun "
                    f"{statistics.median(latencies):.4f} s ({args.reruns} reruns)",
                    flush=True,
                )
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=20)


if __name__ == "__main__":
    main()
