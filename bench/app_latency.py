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
        {"direct_k": 15},
        {"direct_pick": Cell("out", 700, 300)},
        {"direct_dil": 2},
        {"direct_mode": "reflect"},
        {"direct_mix": True},
        {"direct_pick": Cell("in", 10, 1000)},
        {"direct_stride": 2},
        {"direct_preset": "Gaussian"},
    ],
    "pages/im2col.py": [
        {"im2col_img_k": 7},
        {"im2col_c": 3, "im2col_h": 6, "im2col_w": 6, "im2col_k": 4, "im2col_m": 3},
        {"im2col_pick": Cell("col", 0, 5)},
        {"im2col_pick": Cell("in", 2, 3)},
    ],
    "pages/unfold.py": [
        {"unfold_k": 9},
        {"unfold_stride": 1},
        {"unfold_stride": 3},
        {"unfold_pick": Cell("px", 600, 400)},
        {"unfold_dil": 4},
        {"unfold_pick": Cell("patch", 5, 7)},
    ],
    "pages/reflect.py": [
        {"reflect_img_pad": 1000},
        {"reflect_blur": 15},
        {"reflect_img_pick": Cell("pad", 10, 2500)},
        {
            "reflect_h": 8,
            "reflect_w": 8,
            "reflect_left": 7,
            "reflect_right": 7,
            "reflect_top": 7,
            "reflect_bottom": 7,
        },
        {"reflect_pick": Cell("pad", 0, 0)},
    ],
    "pages/backward.py": [
        {
            "backward_h": 10,
            "backward_w": 10,
            "backward_k": 5,
            "backward_stride": 1,
            "backward_pad": 3,
            "backward_dil": 1,
        },
        {"backward_nums": "image"},
        {"backward_pick": Cell("dy", 2, 2)},
        {"backward_wpick": Cell("x", 4, 4)},
        {"backward_alg": "scatter"},
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
