"""Classroom load: one instructor and N followers (headless clients) against a server or a deployment.

    python3 -m bench.classroom_load --followers 60 --seconds 60 [--workers 2] [--out FILE]

Without --workers it starts one `streamlit run app.py` (rooms in memory); with --workers N it
starts `scripts/serve.py` (N workers, Redis, nginx), whose proxy places each client as it places
a browser (no cookie at first, then the one the proxy sets, naming its worker); --url uses a
running server. The
instructor's session starts a room on the Direct page and moves a slider every --every seconds;
each follower joins through the link (`/?room=CODE`) and polls the room as a browser does (the
app's run_every fragment). For each change it records when each follower's run that shows the
new value finished: the follow delay (median, p95, max), errors (exceptions, closed connections,
followers that did not show the last change within --late seconds or stopped following), and the
servers' memory.

The followers are spread over --procs client processes (each one Python interpreter: at 300
followers one process parsing every rerun's figures would measure itself). Times are
time.perf_counter (CLOCK_MONOTONIC, the same clock in every process of the machine).

--kill-worker-at S (with --workers >= 2): kill a worker the instructor is not on with SIGKILL, S
seconds into the class; its
followers' connections close and they reconnect as browsers do, to the same address (the proxy
sends them to a live worker). Reported: how long each took to follow the room again.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.support.browser import _free_port, start_server
from tests.support.deployment import Deployment
from tests.support.st_client import StClient


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))], 3)


def rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return round(total / 1024, 1)


def follower_proc(spec: dict, ready: mp.Queue, commands: mp.Queue, results: mp.Queue) -> None:
    """One client process: join its followers, then record every full run's (time, value) until
    told to stop; reconnect followers whose worker died (as browsers do)."""
    code, setting, url = spec["code"], spec["setting"], spec["url"]
    seen: dict[int, list[tuple[float, object]]] = {}
    lock = threading.Lock()

    def on_run(client: StClient, run) -> None:
        if run.fragment_ids:
            return
        try:
            value = client.value(setting)
        except Exception:
            return
        with lock:
            seen.setdefault(client.tag, []).append((run.finished_at, value))

    clients: list[StClient] = []
    errors: list[str] = []
    for start in range(0, len(spec["tags"]), 10):  # a class arrives in waves, not in one millisecond
        wave = [
            StClient(
                url,
                "",
                f"room={code}",
                on_run=on_run,
                timeout=180,
                tag=tag,
            )
            for tag in spec["tags"][start : start + 10]
        ]
        for c in wave:
            try:
                c.wait_for(lambda c=c: f"Following room {code}" in c.text() and c.idle, 180, "joining")
            except Exception as exc:
                errors.append(f"follower {c.tag} joining: {exc}")
        clients.extend(wave)
    ready.put(len(clients))
    back: dict[int, float] = {}
    killed_at = None
    while True:
        try:
            cmd = commands.get(timeout=0.2)
        except Exception:
            cmd = None
        if cmd == "stop":
            break
        if isinstance(cmd, tuple) and cmd[0] == "killed":
            killed_at = cmd[1]
        for c in clients:  # a closed socket: the browser reconnects to the same address
            if c.closed:
                try:
                    c.reconnect()
                    c.wait_for(lambda c=c: f"Following room {code}" in c.text() and c.idle, 60, "rejoining")
                    if killed_at is not None:
                        back[c.tag] = time.perf_counter() - killed_at
                except Exception as exc:
                    errors.append(f"follower {c.tag} reconnecting: {exc}")
    final = {}
    for c in clients:
        try:
            following = f"Following room {code}" in c.text()
            final[c.tag] = (following, c.value(setting), c.reconnects, worker_port(c.upstream))
            if not final[c.tag][0]:
                errors.append(f"follower {c.tag} stopped following: {c.text()[:300]!r}")
        except Exception as exc:
            final[c.tag] = (False, None, c.reconnects, None)
            errors.append(f"follower {c.tag}: {exc}")
        errors.extend(f"follower {c.tag}: {e}" for e in c.errors if "connection closed" not in e)
        c.close()
    with lock:
        results.put({"seen": seen, "errors": errors, "final": final, "back": back})


def worker_port(upstream: str) -> int | None:
    """The port of the worker that answered last, from the proxy's X-Conv-Worker header (None
    without the proxy)."""
    last = upstream.split(",")[-1].rsplit(":", 1)[-1].strip()
    return int(last) if last.isdigit() else None


def run_load(
    followers: int,
    seconds: float,
    *,
    every: float = 5.0,
    page: str = "direct",
    setting: str = "Stride S",
    values: tuple = (1, 2),
    cap: str = "256",
    late: float = 10.0,
    url: str | None = None,
    workers: int = 0,
    procs: int = 1,
    backend: str = "numpy",
    kill_worker_at: float | None = None,
    large_workers: int | None = None,
) -> dict:
    env = {"CONV_EXPLORER_BACKEND": backend, "CONV_EXPLORER_MAX_FOLLOWERS": str(max(400, followers))}
    proc = deployment = None
    if url is None and workers:
        deployment = Deployment(
            workers, Path(tempfile.mkdtemp(prefix="ce-serve-")), env=env, large_workers=large_workers
        )
        url = deployment.url
    elif url is None:
        port = _free_port()
        proc = start_server(port, env=env)
        url = f"http://127.0.0.1:{port}"

    def pids() -> list[int]:
        if deployment:
            return [v["pid"] for k, v in deployment.children().items() if k.startswith("worker")]
        return [proc.pid] if proc else []

    report: dict = {
        "followers": followers,
        "seconds": seconds,
        "every_s": every,
        "page": page,
        "setting": setting,
        "working_size": cap,
        "workers": workers or 1,
        "large_workers": deployment.large_workers if deployment else 0,  # a class uses the others
        "client_procs": procs,
        "backend": backend if (proc or deployment) else "remote",
        "cpus": os.cpu_count(),
    }
    errors: list[str] = []
    children: list[mp.Process] = []
    try:
        report["rss_mib_before"] = rss_mib(pids())
        teacher = StClient(url, page, timeout=180)
        teacher.wait_idle()
        teacher.set("Working size (longest side, px)", cap)
        teacher.set(setting, values[0])
        teacher.click("Start a room (instructor)")
        code = re.search(r"Instructing room ([A-Z0-9]{6})", teacher.text()).group(1)
        ready, results = mp.Queue(), mp.Queue()
        commands = [mp.Queue() for _ in range(procs)]
        t_join = time.perf_counter()
        for i in range(procs):
            spec = {
                "code": code,
                "setting": setting,
                "url": url,
                "tags": list(range(i, followers, procs)),
            }
            p = mp.get_context("fork").Process(target=follower_proc, args=(spec, ready, commands[i], results))
            p.start()
            children.append(p)
        joined = sum(ready.get(timeout=900) for _ in children)
        report["join_s"] = round(time.perf_counter() - t_join, 1)
        report["rss_mib_after_join"] = rss_mib(pids())
        time.sleep(3)
        changes: list[tuple[object, float]] = []
        teacher_reruns: list[float] = []
        rss_samples: list[float] = []
        started = time.perf_counter()
        end = started + seconds
        killed_at = None
        k = 0
        while time.perf_counter() < end:
            k += 1
            value = values[k % 2]
            sent = time.perf_counter()
            changes.append((value, sent))
            try:
                teacher_reruns.append(teacher.set(setting, value))
            except TimeoutError as exc:  # an overloaded server: say so, and go on
                errors.append(f"the instructor's change {k}: {exc}")
            while time.perf_counter() < sent + every:
                due = kill_worker_at is not None and time.perf_counter() - started >= kill_worker_at
                if deployment and due and killed_at is None:  # a worker the instructor is not on
                    # the class is on the light pool (followers never move to the large one)
                    light = deployment.light_workers
                    teacher_on = deployment.worker_named(teacher.upstream)
                    deployment.kill_worker((teacher_on + 1) % light)
                    killed_at = time.perf_counter()
                    for q in commands:
                        q.put(("killed", killed_at))
                time.sleep(0.05)
            rss_samples.append(rss_mib(pids()))
        time.sleep(late)
        for q in commands:
            q.put("stop")
        gathered = [results.get(timeout=300) for _ in children]
        for p in children:
            p.join(timeout=60)
        seen: dict[int, list] = {}
        final: dict[int, tuple] = {}
        back: dict[int, float] = {}
        for g in gathered:
            seen.update(g["seen"])
            final.update(g["final"])
            back.update(g["back"])
            errors.extend(g["errors"])
        delays, missed = [], 0
        for value, sent in changes:
            for tag in range(followers):
                hits = [t for t, v in seen.get(tag, []) if v == value and sent <= t <= sent + late]
                if hits:
                    delays.append(min(hits) - sent)
                else:
                    missed += 1
        last_value = changes[-1][0]
        behind = [t for t, (following, v, *_) in final.items() if following and v != last_value]
        per_worker: dict[str, int] = {}
        for *_, port in final.values():
            per_worker[str(port)] = per_worker.get(str(port), 0) + 1
        if behind:
            errors.append(f"{len(behind)} followers still following but not at the last value: {behind[:10]}")
        errors.extend(f"instructor: {e}" for e in teacher.errors)
        report.update(
            {
                "joined": joined,
                "changes": len(changes),
                "updates": len(delays),
                "missed_updates": missed,
                "delay_median_s": _pct(delays, 0.5),
                "delay_p95_s": _pct(delays, 0.95),
                "delay_max_s": _pct(delays, 1.0),
                "followers_per_worker": dict(sorted(per_worker.items())),
                "instructor_rerun_median_s": _pct(teacher_reruns, 0.5),
                "errors": len(errors),
                "error_samples": errors[:8],
                "rss_mib_during_max": max(rss_samples) if rss_samples else None,
                "rss_mib_after": rss_mib(pids()),
                "load_avg_1m": round(os.getloadavg()[0], 1),
            }
        )
        if killed_at is not None:
            report["worker_killed_at_s"] = kill_worker_at
            report["reconnected"] = len(back)
            report["back_following_median_s"] = _pct(list(back.values()), 0.5)
            report["back_following_max_s"] = _pct(list(back.values()), 1.0)
        teacher.close()
    finally:
        for p in children:
            if p.is_alive():
                p.kill()
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
        if deployment:
            deployment.stop()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--followers", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--every", type=float, default=5.0, help="seconds between the instructor's changes")
    parser.add_argument("--page", default="direct", help="url path of the page the class is on")
    parser.add_argument("--setting", default="Stride S", help="label of the slider the instructor moves")
    parser.add_argument("--values", default="1,2", help="the two values it alternates between")
    parser.add_argument("--cap", default="256", help="working size the instructor sets (followers follow it)")
    parser.add_argument("--late", type=float, default=10.0, help="seconds after which an update is missed")
    parser.add_argument("--url", help="a running server instead of starting one here")
    parser.add_argument(
        "--workers", type=int, default=0, help="start scripts/serve.py with this many workers"
    )
    parser.add_argument(
        "--large-workers",
        type=int,
        help="how many of the workers serve only students exploring large images; a class follows "
        "on the others (default: scripts/serve.py's, N // 4 from 4 workers)",
    )
    parser.add_argument("--procs", type=int, default=1, help="client processes the followers are spread over")
    parser.add_argument("--kill-worker-at", type=float, help="seconds into the class to kill a worker")
    parser.add_argument("--backend", default="numpy", choices=["numpy", "cupy", "auto"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    values = tuple(float(v) for v in args.values.split(","))
    report = run_load(
        args.followers,
        args.seconds,
        every=args.every,
        page=args.page,
        setting=args.setting,
        values=values,
        cap=args.cap,
        late=args.late,
        url=args.url,
        workers=args.workers,
        procs=args.procs,
        backend=args.backend,
        kill_worker_at=args.kill_worker_at,
        large_workers=args.large_workers,
    )
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0 if report["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
