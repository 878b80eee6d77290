"""Classroom load test: one instructor and N followers (headless clients) against one server.

`python3 tests/classroom_load.py --followers 60 --seconds 60 [--out FILE]` starts the app on
loopback (CPU backend unless --backend says otherwise), or uses `--url` (a running server, e.g. a
GPU machine's), opens the instructor's session with tests/st_client.py, starts a room, opens every
follower through the join link (`/?room=CODE`: each lands on the instructor's page), then the
instructor moves a slider every --every seconds. For each change it records when each follower's
run that shows the new value finished. It prints a JSON report: errors (exceptions on any page,
closed connections, followers that did not update within --late seconds or stopped following),
the delay from the instructor's change to each follower's update (median, p95, max), the server's
memory (RSS) before, after the class joined and at the end, and the polling traffic.

The followers poll the room through the app's run_every fragment: the client re-requests it
every second as a browser does, so the load is the real one. CI runs a small size (6 followers)
through tests/test_classroom_load_small.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import tests.conftest  # noqa: E402, F401 (tests.browser imports it first)
from tests.browser import _free_port, start_server  # noqa: E402
from tests.load_test import rss_mib  # noqa: E402
from tests.st_client import StClient  # noqa: E402


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))], 3)


class Change:
    """One instructor change: when it was sent and when each follower showed it."""

    def __init__(self, value: float, sent: float) -> None:
        self.value, self.sent = value, sent
        self.seen: dict[int, float] = {}


def run_load(followers: int, seconds: float, *, every: float = 5.0, page: str = "direct",
             setting: str = "Stride S", values: tuple = (1, 2), cap: str = "64",
             late: float = 10.0, url: str | None = None, backend: str = "numpy") -> dict:  # fmt: skip
    proc = None
    if url is None:
        port = _free_port()
        proc = start_server(port, env={"CONV_EXPLORER_BACKEND": backend,
                                       "CONV_EXPLORER_MAX_FOLLOWERS": str(max(100, followers))})  # fmt: skip
        url = f"http://127.0.0.1:{port}"
    report: dict = {"followers": followers, "seconds": seconds, "every_s": every, "page": page,
                    "setting": setting, "working_size": cap, "backend": backend if proc else "remote"}  # fmt: skip
    load_start = round(os.getloadavg()[0], 1)  # a shared machine: other work slows everything
    clients: list[StClient] = []
    changes: list[Change] = []
    lock = threading.Lock()
    errors: list[str] = []
    try:
        if proc:
            report["rss_mib_before"] = rss_mib(proc.pid)
        with StClient(url, "") as warm:  # a fresh server learns its pages on its first run
            warm.wait_idle()
        teacher = StClient(url, page)
        teacher.wait_idle()
        clients.append(teacher)
        teacher.set("Working size (longest side, px)", cap)
        teacher.set(setting, values[0])
        teacher.click("Start a room (instructor)")
        code = re.search(r"Instructing room ([A-Z0-9]{6})", teacher.text()).group(1)

        def on_run(client: StClient, run) -> None:
            if run.fragment_ids:
                return
            i = client.tag
            try:
                value = client.value(setting)
            except Exception:
                return
            with lock:  # the latest change only: the values alternate, so an older one would match too
                change = changes[-1] if changes else None
                if change is not None and value == change.value and i not in change.seen:
                    change.seen[i] = run.finished_at - change.sent

        t_join = time.perf_counter()
        batch = 10
        for start in range(0, followers, batch):  # a class arrives in waves, not in one millisecond
            wave = []
            for i in range(start, min(followers, start + batch)):
                wave.append(StClient(url, "", f"room={code}", on_run=on_run, timeout=120, tag=i))
            for c in wave:
                c.wait_for(lambda c=c: f"Following room {code}" in c.text() and c.idle
                           and c.value(setting) == values[0], 120, "joining")  # fmt: skip
            clients.extend(wave)
        report["join_s"] = round(time.perf_counter() - t_join, 1)
        if proc:
            report["rss_mib_after_join"] = rss_mib(proc.pid)
        time.sleep(2)
        polls0, t_polls = sum(c.stats.fragment_runs for c in clients[1:]), time.perf_counter()
        full0 = sum(c.stats.full_runs for c in clients[1:])
        teacher_reruns: list[float] = []
        rss_samples: list[float] = []
        end = time.perf_counter() + seconds
        k = 0
        while time.perf_counter() < end:
            k += 1
            value = values[k % 2]
            change = Change(value, time.perf_counter())
            with lock:
                changes.append(change)
            try:
                teacher_reruns.append(teacher.set(setting, value))
            except TimeoutError as exc:  # an overloaded server: say so, and go on
                errors.append(f"the instructor's change {k}: {exc}")
            wake = change.sent + every
            while time.perf_counter() < wake:
                time.sleep(0.1)
            if proc:
                rss_samples.append(rss_mib(proc.pid))
        polls = (sum(c.stats.fragment_runs for c in clients[1:]) - polls0) / (time.perf_counter() - t_polls)
        full_runs = sum(c.stats.full_runs for c in clients[1:]) - full0
        per_follower = sorted(c.stats.fragment_runs for c in clients[1:])
        last = changes[-1]
        try:  # every follower must show the last change within `late` seconds
            for c in clients[1:]:
                c.wait_for(lambda c=c: c.value(setting) == last.value and c.idle,
                           max(0.1, last.sent + late - time.perf_counter()), "the last change")  # fmt: skip
        except TimeoutError:
            pass
        time.sleep(0.5)
        delays = [d for ch in changes for d in ch.seen.values()]
        superseded = sum(followers - len(ch.seen) for ch in changes[:-1])  # the next change came first
        behind = followers - len(last.seen)
        if behind:
            errors.append(f"{behind} followers did not show the last change within {late:g} s")
        too_late = sum(1 for d in delays if d > late)
        for c in clients[1:]:
            text = c.text()
            if f"Following room {code}" not in text:
                errors.append(f"follower {c.tag} no longer follows: {text[:200]!r}")
        for c in clients:
            errors.extend(f"client {c.tag if c.tag is not None else 'teacher'}: {e}" for e in c.errors)
        report.update({
            "changes": len(changes),
            "updates": len(delays),
            "superseded_updates": superseded,  # a follower still busy when the next change came
            "updates_later_than_s": {str(late): too_late},
            "delay_median_s": _pct(delays, 0.5),
            "delay_p95_s": _pct(delays, 0.95),
            "delay_max_s": _pct(delays, 1.0),
            "instructor_rerun_median_s": _pct(teacher_reruns, 0.5),
            "follower_polls_per_s": round(polls, 1),  # fragment runs the server answered
            "follower_full_runs_per_change": round(full_runs / max(1, followers * len(changes)), 2),
            "polls_per_follower_min_median_max": [per_follower[0], per_follower[len(per_follower) // 2], per_follower[-1]],
            "errors": len(errors),
            "error_samples": errors[:5],
            "rss_mib_during_max": max(rss_samples) if rss_samples else None,
            "rss_mib_after": rss_mib(proc.pid) if proc else None,
            "machine_load_avg_1m": [load_start, round(os.getloadavg()[0], 1)],
        })  # fmt: skip
    finally:
        for c in clients:
            c.close()
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--followers", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--every", type=float, default=5.0, help="seconds between the instructor's changes")
    parser.add_argument("--page", default="direct", help="url path of the page the class is on")
    parser.add_argument(
        "--setting", default="Stride S", help="label of the slider or toggle the instructor moves"
    )
    parser.add_argument(
        "--values", default="1,2", help="the two values it alternates between (true/false for a toggle)"
    )
    parser.add_argument("--cap", default="64", help="working size the instructor sets (followers follow it)")
    parser.add_argument(
        "--late", type=float, default=10.0, help="seconds after which an update counts as late"
    )
    parser.add_argument("--url", help="a running server instead of starting one here")
    parser.add_argument("--backend", default="numpy", choices=["numpy", "cupy", "auto"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    words = {"true": True, "false": False}
    values = tuple(words[v.strip().lower()] if v.strip().lower() in words else float(v)
                   for v in args.values.split(","))  # fmt: skip
    report = run_load(args.followers, args.seconds, every=args.every, page=args.page, setting=args.setting, late=args.late,
                      values=values, cap=args.cap, url=args.url, backend=args.backend)  # fmt: skip
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0 if report["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
