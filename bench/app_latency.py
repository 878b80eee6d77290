"""Page rerun latency after a slider move, measured with streamlit's AppTest.

`python bench/app_latency.py [--size 1024] [--moves 6] [--out FILE]`: opens the Direct
convolution page on a size x size RGB image, moves the stride / padding / kernel sliders one
step at a time, and reports the wall time of each rerun (end to end: compute, timings,
figures), on whatever backend gpuops picks.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

import gpuops  # noqa: E402

MOVES = [("dc_stride", 2), ("dc_pad", 2), ("dc_k", 5), ("dc_stride", 1), ("dc_pad", 1), ("dc_k", 3),
         ("dc_dil", 2), ("dc_dil", 1)]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--moves", type=int, default=len(MOVES))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.session_state["cap"] = args.size
    at.session_state["sample"] = "shapes"  # 1024 x 1024 RGB in assets/
    at.run()
    at.switch_page("pages/direct_convolution.py")
    t0 = time.perf_counter()
    at.run()
    first = time.perf_counter() - t0
    assert not at.exception, [e.value for e in at.exception]
    times = []
    for key, value in MOVES[: args.moves]:
        at.slider(key=f"w_{key}").set_value(value)
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
        assert not at.exception, [e.value for e in at.exception]
        assert not at.error, [e.value for e in at.error]
    page_times = {}
    for page in ("im2col_gemm", "unfold_fold", "reflect_padding", "benchmarks", "home"):
        at.switch_page(f"pages/{page}.py")
        t0 = time.perf_counter()
        at.run()
        page_times[page] = round(time.perf_counter() - t0, 3)
        assert not at.exception, (page, [e.value for e in at.exception])
    report = {
        "backend": gpuops.backend_info().label(),
        "image": f"{args.size} x {args.size} x 3",
        "first_run_s": round(first, 3),
        "rerun_s": [round(t, 3) for t in times],
        "rerun_median_ms": round(statistics.median(times) * 1e3, 1),
        "rerun_max_ms": round(max(times) * 1e3, 1),
        "other_pages_first_run_s": page_times,
    }
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
