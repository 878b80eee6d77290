"""Print a benchmark JSON (from `python -m gpuops.bench --out`) as a Markdown table."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(report: dict) -> str:
    lines = ["| shape | op | implementation | median ms | GB/s | TFLOP/s | speed vs torch | of copy BW |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]  # fmt: skip
    for r in report["results"]:
        lines.append(f"| {r['shape']} | {r['op']} | {r['impl']} | {r['median_ms']:.4f} | {fmt(r.get('gbps'), '.0f')} | "
                     f"{fmt(r.get('tflops'), '.2f')} | {fmt(r.get('speedup_vs_torch'), '.2f')} | "
                     f"{fmt(r.get('fraction_of_copy_bw'), '.2f')} |")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":
    data = json.loads(Path(sys.argv[1]).read_text())
    b = data["backend"]
    print(
        f"{b.get('device') or 'CPU'}; CuPy {b.get('cupy_version')}; torch {data.get('torch')}; cuDNN {data.get('cudnn')}\n"
    )
    print(table(data))
