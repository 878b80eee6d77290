"""docs/performance.md from the committed benchmark reports: `python3 -m bench.to_markdown`.

The page is generated, never edited by hand: run this after adding or replacing a report in
bench/results/ (`--check` only says whether the committed page is current; a test runs it).
`python3 -m bench.to_markdown --report FILE.json` prints one report's records as a table instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from bench import reports

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "performance.md"
COMMAND = "python3 -m bench.to_markdown"
VERSIONS = ("python", "numpy", "cupy", "cuda", "torch", "cudnn")


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def per_run(values: Sequence[float | None], spec: str) -> str:
    """One cell holding every run's value: "0.046 / 0.047"."""
    return " / ".join(fmt(v, spec) for v in values)


def row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table(head: Sequence[str], align: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    rule = ["---:" if a == "r" else "---" for a in align]
    return [row(head), row(rule), *(row(r) for r in rows)]


def peer_of(impl: str, peers: Sequence[str]) -> str | None:
    """The peer an implementation is compared with: reduced precision with its like (cuDNN-TF32
    for our TF32 kernels, cuDNN on bf16 / fp16 tensors for our 16-bit ones), everything else
    with the op's first peer."""
    if not peers:
        return None
    precision = reports.precision_of(impl) if reports.is_ours(impl) else "fp32"
    if precision != "fp32":
        return next((p for p in peers if p.endswith("_" + precision)), peers[0])
    return peers[0]


def reports_table(runs: Sequence[reports.Run]) -> list[str]:
    rows = []
    for run in runs:
        versions = [run.versions.get(k) or "-" for k in VERSIONS]
        rows.append(
            [
                f"`{run.name}`",
                run.device,
                run.date(),
                f"`{run.commit or 'unknown'}`",
                *versions,
                str(len(run.records)),
            ]
        )
    return table(
        ["report", "device", "started", "commit", *VERSIONS, "records"],
        ["l", "l", "l", "l", *"l" * len(VERSIONS), "r"],
        rows,
    )


def notes(runs: Sequence[reports.Run]) -> list[str]:
    """The reports' own notes on their fields, one paragraph per distinct note."""
    by_note: dict[str, list[str]] = {}
    for run in runs:
        if run.note:
            by_note.setdefault(run.note, []).append(f"`{run.name}`")
        if run.pinned:  # bench.pin_core: rows of short calls are the host's time
            by_note.setdefault(f"{run.pinned} (bench/pin_core.py).", []).append(f"`{run.name}`")
    return [f"{', '.join(names)}: {note}\n" for note, names in by_note.items()]


def summary(lease: reports.Lease) -> list[str]:
    """Our default (`auto`, or the one kernel) against its peer, per shape and op."""
    runs = list(lease.runs)
    ops = reports.ops(runs)
    shapes = list(dict.fromkeys(r["shape"] for run in runs for r in run.records if r["op"] != reports.COPY))
    cells: dict[tuple[str, str], str] = {}
    for op in ops:
        peers = reports.peers(runs, op)
        for r in reports.compare(runs, op):
            if reports.variant(r.impl) in ("auto", "ours") and reports.is_ours(r.impl):
                peer = peer_of(r.impl, peers)
                if peer in r.vs:
                    cells[(r.shape, op)] = per_run(r.vs[peer], ".2f")
    shown = [op for op in ops if any((s, op) in cells for s in shapes)]
    rows = [
        [s, *(cells.get((s, op), "") for op in shown)]
        for s in shapes
        if any((s, op) in cells for op in shown)
    ]
    return table(["shape", *shown], ["l", *"r" * len(shown)], rows)


def op_table(runs: Sequence[reports.Run], op: str) -> list[str]:
    peers = reports.peers(runs, op)
    rows = []
    for r in reports.compare(runs, op):
        peer = peer_of(r.impl, peers) if reports.is_ours(r.impl) else None
        ratio = per_run(r.vs[peer], ".2f") if peer in r.vs else ""
        rate = per_run(r.tflops, ".2f") if any(r.tflops) else per_run(r.gbps, ".0f") if any(r.gbps) else ""
        unit = " TFLOP/s" if any(r.tflops) else " GB/s" if any(r.gbps) else ""
        rows.append(
            [r.shape, f"`{r.impl}`", per_run(r.ms, ".4f"), rate + unit if rate else "", peer or "", ratio]
        )
    return table(["shape", "implementation", "median ms", "rate", "peer", "speed vs peer"], "llrrlr", rows)


def render(runs: Sequence[reports.Run]) -> str:
    """The whole page, from the reports (newest first, as `reports.load_runs` returns them)."""
    leases = reports.group_leases(runs)
    newest = reports.default_lease(leases)
    out = [
        "# Performance",
        "",
        f"_Generated from the committed reports in `bench/results/` by `{COMMAND}`: edit the reports "
        "or the script, not this page._",
        "",
        "Every report is one run of the benchmark command, `python3 -m bench.suite --out "
        "bench/results/NAME.json`, on the machine named below. Each time is the median of the run's "
        "repeated timings after warm-up (CUDA events on a GPU, `perf_counter` on the CPU), end to end: "
        "the Python call is included, as it is for the PyTorch peers measured in the same run. "
        "**Speed vs peer** is the peer's time divided by ours: above 1 we are faster. Runs of one "
        "machine started within minutes of each other are shown together (run 1 / run 2), so the "
        "spread between them is visible. How the kernels got here, with each change's prediction and "
        "outcome: [bench/NOTES.md](../bench/NOTES.md). The Benchmarks page of the app shows the same "
        "reports as charts and runs the suite on the server it runs on.",
        "",
        "## Reports",
        "",
        *reports_table(runs),
        "",
        *notes(runs),
    ]
    if newest is not None:
        out += [
            f"## Summary: {newest.label()}",
            "",
            "Our default implementation of each operation (`auto`, or the single kernel where there is "
            "one) against its peer: speed vs peer, run 1 / run 2.",
            "",
            *summary(newest),
            "",
        ]
    for lease in leases:
        runs_ = list(lease.runs)
        first = lease.first
        copy = [run.copy_gbps for run in runs_]
        ceiling = f" · copy {per_run(copy, ',.0f')} GB/s (the bandwidth ceiling)" if any(copy) else ""
        out += [f"## {lease.label()}", "", " · ".join(first.labels()) + ceiling, ""]
        for op in reports.ops(runs_):
            out += [f"### {op}", "", *op_table(runs_, op), ""]
    return "\n".join(out).rstrip() + "\n"


def report_table(report: dict) -> str:
    """One report's records as they are, one row each."""
    rows = [
        [
            r["shape"],
            r["op"],
            r["impl"],
            f"{r['median_ms']:.4f}",
            fmt(r.get("gbps"), ".0f"),
            fmt(r.get("tflops"), ".2f"),
            fmt(r.get("speedup_vs_torch"), ".2f"),
            fmt(r.get("fraction_of_copy_bw"), ".2f"),
        ]
        for r in report["results"]
    ]
    head = ["shape", "op", "implementation", "median ms", "GB/s", "TFLOP/s", "speed vs torch", "of copy BW"]
    return "\n".join(table(head, "lllrrrrr", rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/performance.md is not current")
    parser.add_argument("--report", type=Path, help="print this report's records as a table instead")
    args = parser.parse_args(argv)
    if args.report:
        print(report_table(json.loads(args.report.read_text())))
        return 0
    page = render(reports.load_runs())
    if args.check:
        current = PAGE.exists() and PAGE.read_text() == page
        print(f"{PAGE.relative_to(ROOT)} is {'current' if current else f'out of date: run {COMMAND}'}")
        return 0 if current else 1
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(page)
    print(f"wrote {PAGE.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
