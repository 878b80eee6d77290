"""Classroom load test: many browser sessions against one Conv Explorer server.

`python bench/browser_load.py --sessions 30 --seconds 60 [--out FILE]` starts the server on
loopback, opens one headless Chromium page (its own session) per student, uploads a different
image in each, then moves the stride slider back and forth for a bounded time. It checks that
every session keeps its own image and settings and shows no error, and reports reruns per
second, rerun latency (p50/p95) and the server's memory before, during and after.
CI runs a reduced size through tests/test_e2e_load.py.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from tests.support.browser import (
    CHROMIUM_ARGS,
    _free_port,
    _png,
    chromium_path,
    start_server,
    upload_file,
    warm_up,
)

ROOT = Path(__file__).resolve().parent.parent


def rss_mib(pid: int) -> float:
    """Resident memory of the server process and its children (MiB)."""
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return round(total / 1024, 1)


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def gpu_memory_mib() -> float | None:
    try:
        import subprocess

        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return float(out.stdout.split()[0]) if out.returncode == 0 else None
    except (OSError, ValueError, IndexError):
        return None


def _idle(page, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    time.sleep(0.15)
    while time.time() < deadline:
        if page.locator('[data-testid="stStatusWidget"]').count() == 0:
            return
        time.sleep(0.05)
    raise TimeoutError("a rerun did not finish")


def run_load(sessions: int, seconds: float, backend: str = "numpy", browser=None) -> dict:
    """Run the load test; `browser` is a Chromium already launched by Playwright (the test
    suite's shared one: one process cannot run two Playwright sync sessions), else one is started."""
    if browser is not None:
        return _run_load(sessions, seconds, backend, browser)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        own = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            return _run_load(sessions, seconds, backend, own)
        finally:
            own.close()


def _run_load(sessions: int, seconds: float, backend: str, browser) -> dict:
    port = _free_port()
    server = start_server(port, env={"CONV_EXPLORER_BACKEND": backend})
    url = f"http://127.0.0.1:{port}/direct"
    report: dict = {"sessions": sessions, "seconds": seconds, "backend": backend}
    try:
        report["rss_mib_before"] = rss_mib(server.pid)
        report["gpu_mib_before"] = gpu_memory_mib()
        warm_up(browser, f"http://127.0.0.1:{port}/")
        pages, sizes, contexts = [], [], []
        try:
            for i in range(sessions):
                ctx = browser.new_context(viewport={"width": 1280, "height": 900})  # own cookies: own session
                contexts.append(ctx)
                page = ctx.new_page()
                page.goto(url)
                w, h = 60 + 2 * i, 40 + i  # every student's image has its own size
                upload_file(page, f"s{i}.png", _png(w, h), wait=_idle)
                page.get_by_text(f"your upload: {w} x {h} px").wait_for(timeout=60000)
                pages.append(page)
                sizes.append((w, h))
            report["rss_mib_after_setup"] = rss_mib(server.pid)
            latencies, errors, leaks, reruns = [], 0, 0, 0
            stride = [1] * sessions
            rss_samples = []
            end = time.time() + seconds
            while time.time() < end:
                started = []
                for i, page in enumerate(pages):  # everyone moves a slider at about the same time
                    key = "ArrowRight" if stride[i] == 1 else "ArrowLeft"
                    stride[i] = 2 if stride[i] == 1 else 1
                    slider = page.get_by_role("slider", name="Stride S")
                    slider.focus()
                    slider.press(key)
                    started.append(time.perf_counter())
                for i, page in enumerate(pages):
                    try:
                        _idle(page)
                    except TimeoutError:
                        errors += 1
                        continue
                    latencies.append(time.perf_counter() - started[i])
                    reruns += 1
                    if page.locator('[data-testid="stException"]').count():
                        errors += 1
                    w, h = sizes[i]
                    ow, oh = -(-w // stride[i]), -(-h // stride[i])  # 3x3, padding 1: ceil(size / stride)
                    if (
                        page.get_by_text(f"your upload: {w} x {h} px").count() == 0
                        or page.get_by_text(f"Output: {ow} x {oh}").count() == 0
                    ):
                        leaks += 1
                rss_samples.append(rss_mib(server.pid))
        finally:
            for ctx in contexts:
                ctx.close()
        time.sleep(2)
        report.update(
            {
                "reruns": reruns,
                "reruns_per_s": round(reruns / seconds, 2),
                "latency_p50_ms": round(statistics.median(latencies) * 1e3, 1) if latencies else None,
                "latency_p95_ms": round(sorted(latencies)[int(0.95 * (len(latencies) - 1))] * 1e3, 1)
                if latencies
                else None,
                "errors": errors,
                "state_mismatches": leaks,
                "rss_mib_during_max": max(rss_samples) if rss_samples else None,
                "rss_mib_during_last": rss_samples[-1] if rss_samples else None,
                "rss_mib_after": rss_mib(server.pid),
                "gpu_mib_after": gpu_memory_mib(),
            }
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--backend", default="numpy", choices=["numpy", "cupy", "auto"])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = run_load(args.sessions, args.seconds, args.backend)
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0 if report["errors"] == 0 and report["state_mismatches"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
