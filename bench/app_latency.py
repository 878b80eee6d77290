"""Server time per rerun on every page, at the largest image and kernels a student can choose.

`python3 -m bench.app_latency [--cap 1024] [--out FILE]` drives each page with streamlit's AppTest:
opens it, then applies the page's heaviest settings and picks one step at a time (as a slider move
or a click leaves them), then presses its Compare button. Each step is one rerun, timed end to end
(compute, figures, serialisation; not the browser's drawing). A step the compute budget refuses is
reported as refused with the page's message: a refusal is the page working as designed.
Runs on whatever backend gpuops picks (CONV_EXPLORER_BACKEND=numpy forces the CPU).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import gpuops
from tests.support.apptest import AppTest  # every run through app.py, as on a running server
from ui.state import Cell

ROOT = Path(__file__).resolve().parent.parent

# page -> steps; each step is the session state a widget or a click leaves behind
STEPS: dict[str, list[dict]] = {
    "pages/direct.py": [
        {"dc_k": 15},
        {"dc_pick": Cell("out", 700, 300)},
        {"dc_dil": 2},
        {"dc_mode": "reflect"},
        {"dc_mix": True},
        {"dc_pick": Cell("in", 10, 1000)},
        {"dc_stride": 2},
        {"dc_preset": "Gaussian"},
    ],
    "pages/im2col.py": [
        {"im_img_k": 7},
        {"im_c": 3, "im_h": 6, "im_w": 6, "im_k": 4, "im_m": 3},
        {"im_pick": Cell("col", 0, 5)},
        {"im_pick": Cell("in", 2, 3)},
    ],
    "pages/unfold.py": [
        {"uf_k": 9},
        {"uf_stride": 1},
        {"uf_stride": 3},
        {"uf_pick": Cell("px", 600, 400)},
        {"uf_dil": 4},
        {"uf_pick": Cell("patch", 5, 7)},
    ],
    "pages/reflect.py": [
        {"rp_img_pad": 1000},
        {"rp_blur": 15},
        {"rp_img_pick": Cell("pad", 10, 2500)},
        {"rp_h": 8, "rp_w": 8, "rp_left": 7, "rp_right": 7, "rp_top": 7, "rp_bottom": 7},
        {"rp_pick": Cell("pad", 0, 0)},
    ],
    "pages/backward.py": [
        {"bw_h": 10, "bw_w": 10, "bw_k": 5, "bw_stride": 1, "bw_pad": 3, "bw_dil": 1},
        {"bw_nums": "image"},
        {"bw_pick": Cell("dy", 2, 2)},
        {"bw_wpick": Cell("x", 4, 4)},
        {"bw_alg": "scatter"},
    ],
    "pages/benchmarks.py": [],
}


def timed_run(at: AppTest) -> float:
    t0 = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - t0
    assert not at.exception, [e.value for e in at.exception]
    return elapsed


def outcome(at: AppTest) -> str:
    """'ok', or the first error / budget message the page showed."""
    messages = [e.value for e in at.error] + [w.value for w in at.warning if "budget" in w.value.lower()]
    return messages[0][:160] if messages else "ok"


def measure_page(page: str, cap: int) -> dict:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.session_state["cap"] = cap
    at.session_state["sample"] = "shapes"  # 1024 x 1024 RGB in assets/
    at.run()
    at.switch_page(page)
    steps = [{"step": "open", "s": round(timed_run(at), 3), "outcome": outcome(at)}]
    for change in STEPS[page]:
        for key, value in change.items():
            at.session_state[key] = value
        seconds = timed_run(at)
        steps.append(
            {
                "step": ", ".join(f"{k}={v}" for k, v in change.items()),
                "s": round(seconds, 3),
                "outcome": outcome(at),
            }
        )
    compare = [b for b in at.button if b.label.startswith("Compare")]
    if compare:
        compare[0].click()
        steps.append(
            {"step": f"press {compare[0].label!r}", "s": round(timed_run(at), 3), "outcome": outcome(at)}
        )
    reruns = [s["s"] for s in steps[1:]] or [steps[0]["s"]]
    slowest = max(steps, key=lambda s: s["s"])
    return {"steps": steps, "median_rerun_s": round(statistics.median(reruns), 3), "slowest": slowest}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=int, default=1024, help="working size (longest side, px)")
    parser.add_argument("--pages", default=",".join(STEPS), help="comma-separated page files")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report = {"backend": gpuops.backend_info().label(), "cap": args.cap, "pages": {}}
    for page in args.pages.split(","):
        report["pages"][page] = result = measure_page(page, args.cap)
        slow = result["slowest"]
        print(
            f"{page}: median rerun {result['median_rerun_s']} s, slowest {slow['s']} s ({slow['step']}: "
            f"{slow['outcome']})",
            flush=True,
        )
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
