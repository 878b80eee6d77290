"""A classroom server under a hostile mix: heavy sessions beside light ones, no browser needed.

`python3 -m bench.hostile_load [--sessions 30] [--seconds 60] [--heavy 10] [--backend numpy|cupy]
[--light-pause LO HI] [--workers N [--large-workers L]] [--out FILE]` starts the app on loopback
(with --workers N: the deployment of scripts/serve.py, its last L workers the large-image pool
(default: serve's, N // 4 from 4 workers), each session a browser of its own that the proxy places, every
worker warmed by one visit; or drives `--url`), measures a light session alone (the quiet
baseline, 30 reruns), then the light sessions alone for `--crowd-seconds` (default: `--seconds`;
their own quiet value, start-up burst included), then runs every session at once for
`--seconds`, each its own Streamlit session over the websocket (tests/support/st_client.py), and prints a
JSON report. The light sessions' clients run in a process of their own (students' browsers are
other machines: beside the heavy sessions' clients their replies also waited for this process's
interpreter lock).

- light sessions: the Direct page at the default working size, a move, then a pause of
  `--light-pause` seconds (default 2-6: a student looks at the figures before the next move;
  0.5-1.5 is a class moving all the time): toggling the stride between 1 and 2 (`--light
  follow`: a class following the instructor, whose figures the process-wide figure memo serves),
  or moving stride, K, padding or dilation to random values of their own (`--light explore`:
  128 settings, few shared);
- heavy sessions, in turn (`--heavy-kinds`): the Direct page at 1024 px with the largest kernel,
  changing padding and pressing "Compare algorithms"; the Unfold page at 1024 px with K = 9 and
  stride 1 (refused by the budget), changing the dilation with no pause; the Benchmarks page,
  pressing "Run the benchmark" again and again; the Direct page at 1024 px, uploading one
  6-megapixel JPEG after another; the Direct page at 1024 px, moving sliders with no pause (rapid).

Reported: light reruns' p50/p95 quiet (one session; the light crowd alone) and under load
(their ratios: the target is at most 3x; against the crowd alone the ratio is the heavy
sessions' effect and nothing else),
and the same for the reruns that started after the first `--warmup` seconds (all sessions open
the app in the same second: their first runs at once are a start-up burst, reported apart),
heavy reruns' p50/p95, the page's budget refusals (a refusal is the page working as designed),
errors (exceptions, lost connections), the server's resident memory, the GPU's memory used, and
the CPU seconds per second the server and this load generator took (they share the machine).
Under lanes (ui/lanes.py) a session that the page moves to the other pool reconnects as a browser
does (tests/support/st_client.py); `pools` says, per kind, on which pool its sessions ended and
how many moves they made (the pool of the worker its last websocket reached, as the proxy's
X-Conv-Worker header names it).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from bench.browser_load import gpu_memory_mib, rss_mib
from tests.support.browser import _free_port, start_server
from tests.support.deployment import Deployment
from tests.support.st_client import StClient

LANE_COOKIE = "ce_lane"  # scripts/serve.py: "large" sends a browser to the large-image pool
ROOT = Path(__file__).resolve().parent.parent

REFUSED = "would take"  # the words of ui.budget's refusal
# what an exploring student moves on the Direct page: 4 x 4 x 4 x 2 settings, few of them shared
EXPLORE = [
    ("Stride S", [1, 2, 3, 4]),
    ("Size K", [1, 3, 5, 7]),
    ("Padding P", [0, 1, 2, 3]),
    ("Dilation D", [1, 2]),
]


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))], 3)


def summary(latencies: list[float]) -> dict:
    return {
        "reruns": len(latencies),
        "p50_s": percentile(latencies, 0.5),
        "p95_s": percentile(latencies, 0.95),
    }


class Session(threading.Thread):
    """One student: a scenario run in a loop until `stop` is set; latencies and refusals kept."""

    def __init__(
        self, url: str, kind: str, stop: threading.Event, seed: int, pause: tuple[float, float] = (2.0, 6.0)
    ) -> None:
        super().__init__(daemon=True, name=f"{kind}-{seed}")
        self.url, self.kind, self.stop, self.rng = url, kind, stop, random.Random(seed)
        self.cookie = f"ce_worker=s{seed}"  # names no worker: the proxy places it, as a new browser
        self.pause = pause  # a light session's seconds between moves (drawn uniformly)
        self.latencies: list[float] = []
        self.finished_at: list[float] = []  # time.time() when each measured rerun finished
        self.refusals = 0
        self.errors: list[str] = []
        self.late: list[float] = []  # seconds each pause overran: this load generator's own stalls
        self.upstream = ""  # the worker its last websocket reached (the proxy's X-Conv-Worker)
        self.moves = 0  # moves between the pools (ui/lanes.py) it followed

    def _step(self, client: StClient, action, *args) -> None:
        seconds = action(*args)
        if seconds is not None:
            self.latencies.append(seconds)
            self.finished_at.append(time.time())
        if any(REFUSED in t for t in client.texts(main_only=True)):
            self.refusals += 1

    def _pause(self) -> None:
        seconds = self.rng.uniform(*self.pause)
        t0 = time.monotonic()
        if not self.stop.wait(seconds):
            self.late.append(time.monotonic() - t0 - seconds)

    def run(self) -> None:
        page, query = {
            "light": ("direct", ""),
            "explorer": ("direct", ""),
            "direct_heavy": ("direct", "cap=1024&direct_k=15&direct_mode=reflect"),
            "unfold_heavy": ("unfold", "cap=1024&unfold_k=9&unfold_stride=1"),
            "benchmark": ("benchmarks", ""),
            "uploader": ("direct", "cap=1024"),
            "rapid": ("direct", "cap=1024"),
        }[self.kind]
        try:
            with StClient(self.url, page, query, timeout=300, cookie=self.cookie) as c:
                c.wait_idle()
                n = 0
                while not self.stop.is_set():
                    n += 1
                    if self.kind == "light":
                        self._step(c, c.set, "Stride S", 2 if n % 2 else 1)
                        self._pause()
                    elif self.kind == "explorer":  # a light session trying settings of its own
                        label, value = self.rng.choice(EXPLORE)
                        self._step(c, c.set, label, self.rng.choice(value))
                        self._pause()
                    elif self.kind == "rapid":  # hostile: one move after another, no pause, at 1024 px
                        label, value = self.rng.choice(EXPLORE)
                        self._step(c, c.set, label, self.rng.choice(value))
                    elif self.kind == "direct_heavy":
                        self._step(c, c.set, "Padding P", 7 if n % 2 else 1)
                        if "Compare algorithms" in c.labels():
                            self._step(c, c.click, "Compare algorithms")
                    elif self.kind == "unfold_heavy":
                        self._step(c, c.set, "Dilation D", 2 if n % 2 else 1)
                    elif self.kind == "uploader":
                        if n == 1:
                            self._step(c, c.set, "Image source", "Upload")
                        label = next(x for x in c.labels() if x.startswith("Upload an image"))
                        self._step(c, c.upload, label, f"photo{n}.jpg", PHOTOS[n % len(PHOTOS)], "image/jpeg")
                    else:
                        self._step(c, c.click, "Run the benchmark")
                self.errors.extend(c.errors)
                self.upstream, self.moves = c.upstream, c.moves
        except Exception as exc:  # a lost session is a result, not a crash of the load test
            self.errors.append(f"{type(exc).__name__}: {exc}")


@dataclass
class Finished:
    """A session that ran in the light sessions' own process, as the report reads it."""

    name: str
    kind: str
    latencies: list[float]
    finished_at: list[float]
    errors: list[str]
    alive: bool
    refusals: int = 0
    late: list[float] = dataclasses.field(default_factory=list)
    upstream: str = ""
    moves: int = 0

    def is_alive(self) -> bool:
        return self.alive


def light_crowd(
    url: str, kind: str, seeds: list[int], pause: tuple[float, float], start_at: float, seconds: float
) -> tuple[list[Finished], float]:
    """The light sessions, run in a process of their own (as students' browsers are other
    machines): in one process with the heavy sessions' clients, their replies waited for that
    process's interpreter lock too. Returns the sessions and this process's CPU seconds."""
    stop = threading.Event()
    crowd = [Session(url, kind, stop, seed, pause) for seed in seeds]
    time.sleep(max(0.0, start_at - time.time()))
    cpu = time.process_time()
    for s in crowd:
        s.start()
    time.sleep(max(0.0, start_at + seconds - time.time()))
    cpu = time.process_time() - cpu
    stop.set()
    for s in crowd:
        s.join(timeout=600)
    finished = [
        Finished(s.name, s.kind, s.latencies, s.finished_at, s.errors, s.is_alive(), s.refusals, s.late)
        for s in crowd
    ]
    for f, s in zip(finished, crowd, strict=True):
        f.upstream, f.moves = s.upstream, s.moves
    return finished, cpu


def light_crowd_main() -> None:
    """The light sessions' process: arguments as JSON on stdin, the sessions as JSON on stdout."""
    a = json.loads(sys.stdin.read())
    finished, cpu = light_crowd(
        a["url"], a["kind"], a["seeds"], tuple(a["pause"]), a["start_at"], a["seconds"]
    )
    print(json.dumps({"sessions": [dataclasses.asdict(f) for f in finished], "cpu_s": cpu}))


def start_light_crowd(
    url: str, kind: str, seeds: list[int], pause: tuple[float, float], start_at: float, seconds: float
) -> subprocess.Popen:
    """Start the light sessions' process (a fresh interpreter, not a fork of this one)."""
    code = "from bench.hostile_load import light_crowd_main; light_crowd_main()"  # run in ROOT
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    args = {
        "url": url,
        "kind": kind,
        "seeds": seeds,
        "pause": list(pause),
        "start_at": start_at,
        "seconds": seconds,
    }
    proc.stdin.write(json.dumps(args))
    proc.stdin.close()
    return proc


def light_crowd_result(proc: subprocess.Popen) -> tuple[list[Finished], float]:
    out = proc.stdout.read()
    proc.wait(timeout=900)
    result = json.loads(out.strip().splitlines()[-1])
    return [Finished(**f) for f in result["sessions"]], result["cpu_s"]


def photo(seed: int, width: int = 3000, height: int = 2000) -> bytes:
    """A 6-megapixel JPEG as a phone takes it (smooth colour with noise), a few MB."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.stack([x / width, y / height, 0.5 + 0.5 * np.sin((x + y) / 300 + seed)], axis=-1) * 200
    pixels = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "JPEG", quality=90)
    return buf.getvalue()


PHOTOS: list[bytes] = []


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc), all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def warm_workers(url: str, cookies: list[str]) -> None:
    """Every worker runs the Direct page once (its CUDA context, kernels and imports), as a
    lecture's workers have after its first minute: the mix measures sharing, not cold starts."""

    def visit(cookie: str) -> None:
        query = "cap=1024" if LANE_COOKIE + "=large" in cookie else ""  # what that pool serves: it stays
        with StClient(url, "direct", query, timeout=300, cookie=cookie) as c:
            c.wait_idle()

    threads = [threading.Thread(target=visit, args=(c,)) for c in cookies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def quiet_baseline(url: str, light: str, reruns: int = 30) -> list[float]:
    """The light scenario alone on the server: what 'no worse than 3x' is measured against."""
    rng = random.Random(1000)
    with StClient(url, "direct", timeout=300, cookie="ce_worker=quiet") as c:
        c.wait_idle()
        if light == "follow":
            return [c.set("Stride S", 2 if i % 2 == 0 else 1) for i in range(reruns)]
        moves = [rng.choice(EXPLORE) for _ in range(reruns)]
        return [c.set(label, rng.choice(values)) for label, values in moves]


def crowd_baseline(
    url: str, kind: str, seeds: list[int], pause: tuple[float, float], seconds: float, warmup: float
) -> tuple[list[float], list[float]]:
    """The light sessions alone, as the mix runs them (opening the app in the same second, then
    moving every few seconds), for `seconds`: the quiet value of the light sessions themselves,
    start-up burst included. Returns every rerun's seconds and those started after `warmup`."""
    started = time.time() + 4  # the light sessions' process starts meanwhile (about 2 s)
    finished, _ = light_crowd_result(start_light_crowd(url, kind, seeds, pause, started, seconds))
    reruns = [(x, t - x) for s in finished for x, t in zip(s.latencies, s.finished_at, strict=True)]
    return [x for x, _ in reruns], [x for x, t in reruns if t >= started + warmup]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--heavy", type=int, default=10, help="how many of the sessions are heavy")
    parser.add_argument(
        "--light",
        choices=["follow", "explore"],
        default="follow",
        help="light sessions toggle the stride between 1 and 2 as a class following the "
        "instructor does (follow), or each tries settings of its own (explore)",
    )
    parser.add_argument(
        "--light-pause",
        type=float,
        nargs=2,
        default=(2.0, 6.0),
        metavar=("LO", "HI"),
        help="a light session's pause between moves, drawn from LO..HI seconds",
    )
    parser.add_argument("--heavy-kinds", nargs="+", default=list(HEAVY_KINDS), choices=HEAVY_KINDS)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument(
        "--crowd-seconds",
        type=float,
        help="before the mix, run the light sessions alone for this long (default: --seconds; 0 "
        "skips): their quiet value with their own start-up burst, the heavy sessions' effect alone",
    )
    parser.add_argument(
        "--warmup",
        type=float,
        default=10.0,
        help="seconds after which light reruns are also reported apart (light_after_warmup)",
    )
    parser.add_argument("--backend", default="numpy", choices=["numpy", "cupy", "auto"])
    parser.add_argument("--url", help="drive a running server instead of starting one")
    parser.add_argument(
        "--workers", type=int, default=0, help="start scripts/serve.py with this many workers"
    )
    parser.add_argument(
        "--large-workers",
        type=int,
        help="how many of them serve large images (scripts/serve.py's default: N // 4 from 4 workers)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = load(
        args.sessions,
        args.seconds,
        args.heavy,
        args.url,
        args.backend,
        args.light,
        tuple(args.heavy_kinds),
        light_pause=tuple(args.light_pause),
        warmup=args.warmup,
        workers=args.workers,
        large_workers=args.large_workers,
        crowd_seconds=args.seconds if args.crowd_seconds is None else args.crowd_seconds,
    )
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0 if report["errors"] == 0 else 1


HEAVY_KINDS = ("direct_heavy", "unfold_heavy", "benchmark", "uploader", "rapid")


def load(
    sessions: int,
    seconds: float,
    heavy: int,
    url: str | None,
    backend: str,
    light: str = "follow",
    heavy_kinds: tuple[str, ...] = HEAVY_KINDS,
    photo_px: tuple[int, int] = (3000, 2000),
    light_pause: tuple[float, float] = (2.0, 6.0),
    warmup: float = 10.0,
    quiet_reruns: int = 30,
    workers: int = 0,
    large_workers: int | None = None,
    crowd_seconds: float = 0.0,
) -> dict:
    """Run the mix and return the report (CI runs a small one: tests/server/test_hostile_small.py)."""
    proc = deployment = None
    if url is None and workers:
        deployment = Deployment(
            workers,
            Path(tempfile.mkdtemp(prefix="ce-serve-")),
            env={"CONV_EXPLORER_BACKEND": backend},
            large_workers=large_workers,
        )
        url = deployment.url
    elif url is None:
        port = _free_port()
        proc = start_server(port, env={"CONV_EXPLORER_BACKEND": backend})
        url = f"http://127.0.0.1:{port}"
    report: dict = {
        "sessions": sessions,
        "heavy": heavy,
        "seconds": seconds,
        "backend": backend if proc else "remote",
        "light": light,
        "workers": workers or 1,
        "large_workers": deployment.large_workers if deployment else 0,
        "cpus": os.cpu_count(),
        "light_pause_s": list(light_pause),
        "heavy_kinds": list(heavy_kinds),
    }
    try:
        with StClient(url, "") as warm:  # a fresh server learns its pages on its first run
            warm.wait_idle()
        if deployment:
            warm_workers(url, list(deployment.cookies.values()))
        if proc:
            report["rss_mib_before"] = rss_mib(proc.pid)
        report["gpu_mib_before"] = gpu_memory_mib()
        quiet = quiet_baseline(url, light, quiet_reruns)
        report["light_quiet"] = summary(quiet)
        PHOTOS[:] = [photo(seed, *photo_px) for seed in range(3)]
        light_kind = "light" if light == "follow" else "explorer"
        crowd_quiet = crowd_steady = []
        if crowd_seconds > 0:
            crowd_quiet, crowd_steady = crowd_baseline(
                url, light_kind, list(range(heavy, sessions)), light_pause, crowd_seconds, warmup
            )
            report["light_crowd_quiet"] = summary(crowd_quiet)
            report["light_crowd_quiet_after_warmup"] = summary(crowd_steady)
            report["crowd_seconds"] = crowd_seconds
        stop = threading.Event()
        crowd: list = [Session(url, heavy_kinds[i % len(heavy_kinds)], stop, i) for i in range(heavy)]
        started = time.time() + 4  # the light sessions' process starts meanwhile (about 2 s)
        light_proc = start_light_crowd(
            url, light_kind, list(range(heavy, sessions)), light_pause, started, seconds
        )
        rss, gpu = [], []
        time.sleep(max(0.0, started - time.time()))
        cpu_before = (cpu_seconds(proc.pid) if proc else None, time.process_time())
        for s in crowd:
            s.start()
        while time.time() - started < seconds:
            time.sleep(1)
            if proc:
                rss.append(rss_mib(proc.pid))
            g = gpu_memory_mib()
            if g is not None:
                gpu.append(g)
        if proc:  # where the machine's cores went: the server, and this load generator beside it
            report["server_cpu_s_per_s"] = round((cpu_seconds(proc.pid) - cpu_before[0]) / seconds, 2)
        client_cpu = time.process_time() - cpu_before[1]
        stop.set()
        for s in crowd:
            s.join(timeout=600)
        finished, light_cpu = light_crowd_result(light_proc)
        crowd += finished
        report["client_cpu_s_per_s"] = round((client_cpu + light_cpu) / seconds, 2)
        lights = [x for s in crowd if s.kind == light_kind for x in s.latencies]
        report["light_under_load"] = summary(lights)
        # the same after the first `warmup` seconds: thirty sessions opening the app in one second
        # (every first run at once) is reported above, the class at work here
        steady = [
            x
            for s in crowd
            if s.kind == light_kind
            for x, t in zip(s.latencies, s.finished_at, strict=True)
            if t - x >= started + warmup
        ]
        report["warmup_s"] = warmup
        report["started_at"] = round(started, 3)  # time.time() when the mix began
        # every light rerun as (time.time() it was asked for, seconds to its end), to set beside
        # the server's own log of each run (CONV_EXPLORER_TURNS_LOG)
        report["light_reruns"] = sorted(
            (round(t - x, 3), round(x, 4))
            for s in crowd
            if s.kind == light_kind
            for x, t in zip(s.latencies, s.finished_at, strict=True)
        )
        windows: dict[int, list[float]] = {}  # the light reruns by the 10 s window they started in
        for s in crowd:
            if s.kind == light_kind:
                for x, t in zip(s.latencies, s.finished_at, strict=True):
                    windows.setdefault(int((t - x - started) // 10), []).append(x)
        report["light_p95_by_10s"] = [
            percentile(windows.get(w, []), 0.95) for w in range(int(seconds // 10) + 1)
        ]
        report["light_after_warmup"] = summary(steady)
        late = [x for s in crowd if s.kind == light_kind for x in getattr(s, "late", [])]
        report["light_pause_late_s"] = {
            "p50": percentile(late, 0.5),
            "p95": percentile(late, 0.95),
            "max": round(max(late), 3) if late else None,
        }
        if quiet and lights:
            report["light_p95_ratio"] = round(percentile(lights, 0.95) / percentile(quiet, 0.95), 2)
        if quiet and steady:
            report["light_p95_ratio_after_warmup"] = round(
                percentile(steady, 0.95) / percentile(quiet, 0.95), 2
            )
        # the heavy sessions' effect alone: the light sessions under load against themselves alone
        if crowd_quiet and lights:
            report["light_p95_ratio_to_crowd"] = round(
                percentile(lights, 0.95) / percentile(crowd_quiet, 0.95), 2
            )
        if crowd_steady and steady:
            report["light_p95_ratio_to_crowd_after_warmup"] = round(
                percentile(steady, 0.95) / percentile(crowd_steady, 0.95), 2
            )
        for kind in heavy_kinds:
            mine = [s for s in crowd if s.kind == kind]
            if mine:
                report[kind] = {
                    **summary([x for s in mine for x in s.latencies]),
                    "sessions": len(mine),
                    "refusals": sum(s.refusals for s in mine),
                }
        if deployment:
            pools: dict[str, dict[str, int]] = {}
            for s in crowd:
                mine = pools.setdefault(s.kind, {"light": 0, "large": 0, "unknown": 0, "moves": 0})
                pool = "unknown"
                if s.upstream:
                    pool = "large" if deployment.is_large(deployment.worker_named(s.upstream)) else "light"
                mine[pool] += 1
                mine["moves"] += s.moves
            report["pools"] = pools
        errors = [f"{s.name}: {e}" for s in crowd for e in s.errors]
        report.update(
            {
                "errors": len(errors),
                "error_samples": errors[:5],
                "stuck_sessions": sum(s.is_alive() for s in crowd),
                "rss_mib_max": max(rss) if rss else None,
                "rss_mib_last": rss[-1] if rss else None,
                "gpu_mib_max": max(gpu) if gpu else None,
            }
        )
        if proc:
            time.sleep(2)
            report["rss_mib_after"] = rss_mib(proc.pid)
        report["gpu_mib_after"] = gpu_memory_mib()
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
        if deployment:
            deployment.stop()
    return report


if __name__ == "__main__":
    sys.exit(main())
