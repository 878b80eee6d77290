"""Plot a benchmark JSON as a PNG for the README: `python bench/plot_results.py IN.json OUT.png`.

Left: conv2d time of each algorithm relative to cuDNN (log scale, lower is better).
Right: achieved bandwidth of the memory-bound ops as a fraction of the measured copy.
Needs matplotlib (not a project dependency; the script is only for the README figure).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def main(src: Path, dst: Path) -> None:
    report = json.loads(src.read_text())
    rows = {(r["shape"], r["op"], r["impl"]): r for r in report["results"]}
    shapes = list(dict.fromkeys(r["shape"] for r in report["results"] if r["shape"] != "-"))
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.5))
    impls = ["ours:direct", "ours:tiled", "ours:im2col", "ours:implicit_gemm", "torch:unfold+gemm"]
    x = np.arange(len(shapes))
    for i, impl in enumerate(impls):
        ratio = [
            rows[(s, "conv2d", impl)]["median_ms"] / rows[(s, "conv2d", "torch:cudnn")]["median_ms"]
            for s in shapes
        ]
        left.bar(x + (i - 2) * 0.16, ratio, 0.16, label=impl)
    left.axhline(1.0, color="black", lw=1)
    left.axhline(1.5, color="tab:red", ls="--", lw=1, label="target: 1.5x cuDNN")
    left.set_yscale("log")
    left.set_xticks(x, shapes)
    left.set_ylabel("time / cuDNN time (log; lower is better)")
    left.set_title("conv2d vs cuDNN")
    left.legend(fontsize=9)
    ops = [("reflect_pad", "ours"), ("reflect_pad", "torch"), ("unfold", "ours"), ("unfold", "torch"),
           ("fold", "ours:auto"), ("fold", "torch")]  # fmt: skip
    for i, (op, impl) in enumerate(ops):
        frac = [rows[(s, op, impl)].get("fraction_of_copy_bw") or 0 for s in shapes]
        right.bar(x + (i - 2.5) * 0.13, frac, 0.13, label=f"{op} {impl}")
    right.axhline(1.0, color="black", lw=1)
    right.set_xticks(x, shapes)
    right.set_ylabel("achieved GB/s / copy GB/s")
    right.set_title("memory-bound ops vs a device-to-device copy")
    right.legend(fontsize=8, ncol=2)
    device = report["backend"].get("device") or "CPU"
    fig.suptitle(f"{device}: medians of CUDA-event timings, end to end, one run ({src.name})")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
