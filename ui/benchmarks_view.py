"""What the Benchmarks page computes, kept out of the page script: the shapes it offers, which
of them fit this server, a rough run-time estimate, the benchmark on a worker thread with a
progress bar, the sweep's budget verdicts and the sentences that describe a run."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import pandas as pd
import streamlit as st

import gpuops
from bench import reports, suite
from ui import budget, shared, tables
from ui.common import shown_errors
from viz.benchmarks import RatioRow
from viz.precision import LadderRow, precision_label

INFO = gpuops.backend_info()
GROUPS = {"standard": "the standard shapes", "classes": "the workload classes"}
PARTS = tuple(getattr(suite, "PARTS", ()))  # forward / backward, where the benchmark offers them
SWEEP_SIZES = [64, 128, 256, 512, 1024, 2048] if INFO.gpu else [64, 128, 256, 512, 1024]


def shape_choices() -> dict[str, list[suite.Shape]]:
    """The shape groups and every single shape the benchmark knows (read afresh: tests add shapes)."""
    return {
        "standard": list(suite.STANDARD_SHAPES),
        **({"classes": list(suite.CLASS_SHAPES)} if getattr(suite, "CLASS_SHAPES", ()) else {}),
        **{name: [s] for name, s in suite.ALL_SHAPES.items()},
    }


def shape_text(name: str) -> str:
    """A shape group with its shapes, or one shape with the dimensions that differ from the defaults."""
    if name in GROUPS:
        return f"{GROUPS[name]} (" + ", ".join(s.name for s in shape_choices()[name]) + ")"
    shape = suite.ALL_SHAPES[name]
    dims = [
        f"{f.name}={getattr(shape, f.name)}"
        for f in dataclasses.fields(shape)
        if f.name != "name" and getattr(shape, f.name) != f.default
    ]
    return f"{name} ({', '.join(dims)})"


def conv_plan(s: suite.Shape) -> gpuops.ConvPlan:
    """The forward convolution of a benchmark shape, planned (checked) without running it."""
    groups = getattr(s, "groups", 1)
    x, w = (s.N, s.C, s.H, s.W), (s.M, s.C // groups, s.K, s.K)
    return gpuops.plan_conv2d(x, w, stride=s.stride, padding=s.pad, groups=groups)


def memory_refusal(shape: suite.Shape) -> str | None:
    """Why this shape cannot run here (the largest extra memory is im2col's X_unroll), or None."""
    try:
        cost = budget.conv2d_cost(conv_plan(shape).problem, "im2col")
        budget.check(
            budget.bytes_cost(cost.bytes), f"{shape.name} (im2col's X_unroll)", "Choose a smaller shape."
        )
    except (ValueError, AttributeError) as exc:  # over budget, or a shape this page cannot plan
        return str(exc)
    return None


def estimate_seconds(shapes: list[suite.Shape], repeat: int) -> float:
    """A rough upper estimate of the run (the budget's slow-end CPU rates; ~1.5 s a shape on a GPU)."""
    if INFO.gpu:
        return 1.5 * len(shapes) + 1
    total = 2.0
    for s in shapes:
        problem = conv_plan(s).problem
        for a in (*gpuops.ALGORITHMS, "auto", "torch", "torch", "torch"):
            t = budget.conv2d_cost(problem, a).seconds
            total += 5 * t + min(repeat * t, 5 + t)  # the suite's 5 warm-ups, then repeats within 5 s
    return total


def with_progress(
    job: Callable[[Callable[[float, str], None]], Any], bar: Any, estimate_s: float, what: str
) -> Any:
    """Run job(progress) on a worker thread while this script thread moves the bar: by the
    benchmark's own progress (between shapes) and by the time elapsed against the estimate."""
    latest = [0.0, "starting"]
    shown = 0.0

    def progress(fraction: float, text: str) -> None:
        latest[:] = [fraction, text]

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench") as pool:
        future = pool.submit(job, progress)
        t0 = time.monotonic()
        while not future.done():
            elapsed = time.monotonic() - t0
            shown = max(shown, latest[0], min(0.97, elapsed / max(estimate_s, 1.0)))
            bar.progress(
                shown,
                text=f"{what}: {latest[1]} · {elapsed:.0f} s (about {estimate_s:.0f} s on a quiet machine)",
            )
            wait([future], timeout=0.25)
        return future.result()


def sweep_refusal(size: int, algorithm: str) -> str | None:
    """The compute budget's verdict on one call of the sweep (None: it may run)."""
    x_shape, w_shape = reports.sweep_shapes(size)
    plan = gpuops.plan_conv2d(x_shape, w_shape, padding=reports.SWEEP_PAD)
    try:
        budget.check(budget.conv2d_cost(plan.problem, algorithm), f"{algorithm} at {size} px", "")
    except budget.OverBudgetError as exc:
        return str(exc).strip()
    return None


def calls_text(sweep: reports.Sweep) -> str:
    """How many calls each sweep point's runs took (more for fast points)."""
    calls = sorted({p.calls for a in sweep.algorithms for p in sweep.points[a] if p is not None})
    if not calls:
        return ""
    span = str(calls[0]) if len(calls) == 1 else f"{calls[0]}-{calls[-1]}"
    return f"A run is the median of {span} call(s) ({sweep.clock}; more calls for fast points)."


def fitting(name: str) -> tuple[list[suite.Shape], list[str]]:
    """The shapes of `name` that fit this server's memory budget, and why the others do not."""
    shapes, refused = [], []
    for s in shape_choices()[name]:
        why = memory_refusal(s)
        (refused if why else shapes).append(why or s)
    return shapes, refused


def sweep_series(sweep: reports.Sweep) -> dict[str, list[tuple[float, float, float, int, bool] | None]]:
    """Each algorithm's points as (median, fastest, slowest, runs, noisy), None where not measured."""
    return {
        a: [p and (p.median, p.lo, p.hi, p.n, p.noisy) for p in sweep.points[a]] for a in sweep.algorithms
    }


def measured(sweep: reports.Sweep) -> int:
    """How many points the sweep measured."""
    return sum(p is not None for a in sweep.algorithms for p in sweep.points[a])


AUTO_COMPARES = (
    "`ours:auto` runs the fastest of our **fp32** algorithms ({fp32}; on an H100 / H200 also "
    "pipelined_3xtf32 and pixel_rows_3xtf32, fp32 values as pairs of TF32 values on the tensor cores, "
    "as accurate as fp32), timed once per shape on the GPU (cuDNN's benchmark mode); by design it "
    "never runs implicit_gemm_tf32, pixel_rows_tf32 or the pipelined tensor-core kernels (TF32, bf16, "
    "fp16), which round the "
    "operands and are opt-in, as PyTorch's allow_tf32 is. The ✓ / ✗ compare it with those fp32 candidates."
)


def auto_compares(op: str) -> str:
    """What `ours:auto` of op compares, said once per op."""
    if op == "conv2d":
        return AUTO_COMPARES.format(fp32=", ".join(gpuops.ALGORITHMS))
    return f"`ours:auto` of {op} runs the fastest of our {op} algorithms; the ✓ / ✗ compare it with them."


def auto_notes(checks: list[reports.AutoCheck], op: str, runs: list[reports.Run]) -> list[tuple[str, str]]:
    """What to say about `ours:auto` of op, each thing once: ("warning" | "caption", text). What
    conv2d's auto compares is said at the top of the page (auto_compares), the other ops' here."""
    notes = [] if op == "conv2d" else [("caption", auto_compares(op))]
    wrong = [c for c in checks if c.agrees is False]
    unknown = [c for c in checks if c.agrees is None]
    by_name = {r.name: r for r in runs}
    if wrong:
        missed = "; ".join(
            f"{c.shape} ({c.run.removesuffix('.json')}): ran {c.chose}"
            + (f", {c.chosen_ms / c.fastest_ms:.2f}x the time of {c.fastest}" if c.chosen_ms else "")
            for c in wrong
        )
        why = reports.auto_why(by_name[wrong[0].run], wrong[0].chose or "") if wrong[0].run in by_name else ""
        notes.append(
            (
                "warning",
                f"**auto did not run the fastest measured algorithm** in {len(wrong)} of {len(checks)} "
                f"measurements (✗ in the table): {missed}. {why}",
            )
        )
    elif unknown:
        notes.append(("caption", f"{unknown[0].reason}; the table shows the fastest measured variant."))
    else:
        notes.append(
            ("caption", f"auto ran the fastest of its candidates in every run shown ({len(checks)}).")
        )
    slow = [c for c in checks if c.chosen_ms and c.auto_ms > 1.3 * c.chosen_ms]
    if slow:
        listed = ", ".join(
            f"{c.shape} ({c.run.removesuffix('.json')}): {c.auto_ms / c.chosen_ms:.2f}x" for c in slow
        )
        notes.append(
            (
                "caption",
                f"auto's own median was over 1.3x that of the algorithm it runs in {listed}: the same "
                "kernel, measured twice in one run. Compare the spread between runs.",
            )
        )
    return notes


def auto_frame(checks: list[reports.AutoCheck], runs: list[reports.Run]) -> pd.DataFrame:
    """auto's choices as a table (no run column when there is one run)."""
    frame = pd.DataFrame(reports.auto_rows(checks))
    return frame.drop(columns=["run"]) if len(runs) == 1 else frame


def has_auto(runs: list[reports.Run], op: str) -> bool:
    return any(r["op"] == op and r["impl"] == "ours:auto" for run in runs for r in run.records)


def ratio_rows(runs: list[reports.Run], op: str, ref: str) -> list[RatioRow]:
    """Every (shape, impl) of op but the reference, with the reference's time over its own, per run."""
    return [
        RatioRow(r.shape, r.impl, r.vs[ref])
        for r in reports.compare(runs, op)
        if r.impl != ref and ref in r.vs
    ]


def ratio_caption(runs: list[reports.Run], peers: list[str]) -> str:
    """The ratio figure's caption: the reference (the first peer), the other peers, the spread."""
    gpu, (ref, *others) = runs[0].gpu, peers
    text = (
        f"Reference: {reports.describe_peer(ref, gpu)}, measured in the same run; "
        f"right of the dashed line is faster."
    )
    if others:
        text += " Other peers: " + ", ".join(reports.describe_peer(p, gpu) for p in others) + "."
    if len(runs) > 1:
        text += " One marker per run; the grey line is the spread between the runs."
    return text


def copy_caption(runs: list[reports.Run]) -> str:
    """What "of copy" means in the table, with each run's device-copy rate ("" without one)."""
    copy = [r.copy_gbps for r in runs if r.copy_gbps]
    if not copy:
        return ""
    rates = ", ".join(f"{g:,.0f} GB/s" for g in copy)
    return (
        f"“of copy”: achieved GB/s over the run's device copy ({rates}), the "
        f"ceiling of a memory-bound kernel."
    )


def runs_caption(group: reports.Lease) -> str:
    """What the committed runs of one device session are and how each value was measured."""
    first = group.first
    clock = "CUDA events" if first.gpu else "perf_counter"
    runs = "; ".join(
        f"run {k + 1} = `{r.name}` ({r.started:%H:%M:%S} UTC)" if r.started else f"run {k + 1} = `{r.name}`"
        for k, r in enumerate(group.runs)
    )
    text = (
        f"Our kernels (`ours…`) next to the peers measured **in the same run**, as ratios. {runs}. Each "
        f"value: median of {first.repeat or 'several'} timed runs after warm-up ({clock})"
    )
    if first.rounds:
        ops = ", ".join(f"`{op}`" for op in first.rounds["ops"])
        text += (
            f"; {ops}: every implementation in {first.rounds['count']} interleaved rounds, each "
            "keeping its best one"
        )
        if first.rounds.get("fill_ms"):
            short = first.rounds.get("short_rounds")
            text += (
                f" (after the first, a short call runs enough times to fill {first.rounds['fill_ms']:g} ms"
                + (f", in {short} rounds)" if short else ")")
            )
    if first.pinned:
        text += f"; the command ran {first.pinned}"
    if len(group.runs) > 1:
        text += (
            f"; {len(group.runs)} runs on the same device within minutes of each other: their spread is "
            "the run-to-run noise."
        )
    else:
        text += "."
    if not first.gpu:
        text += " **CPU numbers**: compare them with the CPU peers of the same run only."
    return text


SWEEP_TEXT = (
    f"{reports.SWEEP_K} x {reports.SWEEP_K} convolution of a {reports.SWEEP_C}-channel image into "
    f"{reports.SWEEP_M} maps, stride 1, padding {reports.SWEEP_PAD}, each algorithm, at "
    f"{', '.join(map(str, SWEEP_SIZES))} px. Every point is measured several times, round-robin over the "
    "points, so a burst of load on a shared machine shows as spread."
)


def noise_text(sweep: reports.Sweep) -> str:
    """The sweep's noisy points, the worst first, and what they mean."""
    noisy = sorted(sweep.noisy(), key=lambda n: -n[2].relative)
    where = "this CPU" if sweep.clock == "perf_counter" else "the GPU"
    worst = ", ".join(f"{a} at {s} px ({p.relative:.0%})" for a, s, p in noisy[:4])
    return (
        f"**Noisy measurements on {where}**: {len(noisy)} of {measured(sweep)} points spread over "
        f"{reports.NOISY:.0%} of their median; the worst: {worst}. Other sessions or programs were using the "
        "machine: trust those medians less, or run again."
    )


def run_line(run: reports.Run) -> str:
    """One line naming the device, the versions and how this run measured."""
    clock = "CUDA events" if run.gpu else "perf_counter"
    labels = " · ".join(run.labels()[1:])
    return f"**{run.device}** · {labels} · run {run.date()} · median of {run.repeat} timed runs ({clock})"


def records_frame(report: dict) -> pd.DataFrame:
    """Every record of a run as a table (extra fields as JSON text), for showing and CSV."""
    rows = pd.DataFrame(report["results"])
    rows["extra"] = rows["extra"].map(lambda e: json.dumps(e) if e else "")
    return rows


# ---- tables as shown ------------------------------------------------------------------------------------
MISSING = tables.MISSING
FORMATS = (  # column name start -> number format
    ("ms", "{:.4f}"),
    ("its ms", "{:.4f}"),
    ("fastest ms", "{:.4f}"),
    ("auto's own ms", "{:.4f}"),
    ("cuDNN ms", "{:.4f}"),
    ("spread", "{:.1f}"),
    ("TFLOP/s", "{:.1f}"),
    ("cuDNN TFLOP/s", "{:.1f}"),
    ("GB/s", "{:.0f}"),
    ("of copy", "{:.2f}"),
    ("vs ", "{:.2f}"),
    ("ours ÷ cuDNN", "{:.2f}"),
    ("error", "{:.1e}"),
    ("cuDNN error", "{:.1e}"),
)


def styled(frame: pd.DataFrame) -> Any:
    """A table as the page shows it: numbers at a precision that suits each column, and "—"
    where a run has no value (never "None")."""
    return tables.styled(frame, FORMATS)


def short_label(column: str) -> str:
    """A table header short enough for the page's width: "vs torch:cudnn · run 2" -> "vs cudnn (2)",
    "ms · run 1" -> "ms (1)", "spread between runs %" -> "spread %"."""
    if column.startswith("spread"):
        return "spread %"
    name, _, run = column.partition(" · run ")
    name = name.replace("torch:", "")
    return f"{name} ({run})" if run else name


def column_config(frame: pd.DataFrame) -> dict[str, Any]:
    """Narrow number columns with short headers (the full name on hover), so a table of two runs
    and their ratios fits a 1366 px screen beside the sidebar."""
    import streamlit as st

    return {
        c: st.column_config.Column(short_label(c), help=c, width="small")
        for c in frame.columns
        if frame[c].dtype.kind in "fiO" and c not in ("shape", "impl")
    }


# ---- the precision ladder of a committed run -------------------------------------------------------------
def ladder_of(runs: list[reports.Run]) -> tuple[reports.Run, list[reports.Rung]] | None:
    """The newest run of the group that measured the tensor-core kernels, and its ladder."""
    for run in reversed(runs):
        rungs = reports.precision_ladder(run)
        if rungs:
            return run, rungs
    return None


def ladder_rows(rungs: list[reports.Rung]) -> list[LadderRow]:
    return [LadderRow(r.shape, r.precision, r.tflops, r.peer_tflops, r.error, r.peer_error) for r in rungs]


def ladder_table(rungs: list[reports.Rung]) -> pd.DataFrame:
    """One row per shape and precision: ours (the kernel the run recorded, else what ran: auto's
    choice), its time, rate and error, cuDNN's in the
    same precision, and the ratio of the times."""
    return pd.DataFrame(
        [
            {
                "shape": r.shape,
                "precision": precision_label(r.precision),
                "ours (kernel)": r.kernel or r.ours,
                "ms": r.ms,
                "TFLOP/s": r.tflops,
                "error": r.error,
                "cuDNN ms": r.peer_ms,
                "cuDNN error": r.peer_error,
                "ours ÷ cuDNN": r.ms / r.peer_ms if r.ms and r.peer_ms else None,
            }
            for r in rungs
        ]
    )


def ladder_caption(run: reports.Run) -> str:
    return (
        f"From `{run.name}`: median of {run.repeat or 'several'} timed runs after warm-up (CUDA events). "
        "fp32: what `ours:auto` ran (its choice named) against cuDNN with TF32 off; TF32, bf16, fp16: our "
        "pipelined tensor-core kernels (the kernel the run recorded) against cuDNN in the same precision "
        "(allow_tf32; bf16 / fp16 tensors). Error: ||y − y64|| / ||y64|| against PyTorch in float64, where "
        "the run recorded it (— where not). ours ÷ cuDNN: > 1 means cuDNN is faster."
    )


# ---- measuring on this server ---------------------------------------------------------------------
BUSY = (
    "Another session is measuring on this server (one benchmark or sweep at a time); try again in a moment."
)


def parts_arg(parts: str | None) -> dict[str, Any]:
    """suite.run's `parts` for the page's "Operations" choice (None: the suite's default)."""
    return {} if parts is None else {"parts": PARTS if parts == "all" else (parts,)}


def measure(key: str, run: Callable[[Callable], Any], estimate: float) -> None:
    """Run the benchmark with a progress bar, one measurement at a time across the server's
    workers (ui.shared.measuring); the report goes to session_state[key]."""
    with shared.measuring() as ours:
        if not ours:
            st.warning(BUSY, icon=":material/hourglass_top:")
            return
        bar = st.progress(0.0, text="starting")
        with shown_errors("The benchmark"):  # students' millisecond kernels run beside it
            st.session_state[key] = with_progress(run, bar, estimate, "measuring")
        bar.empty()


def sweep_now(key: str, repeats: int) -> None:
    """Time every algorithm at the sweep's sizes (one measurement at a time across workers)."""
    with shared.measuring() as ours:
        if not ours:
            st.warning(BUSY, icon=":material/hourglass_top:")
            return
        bar = st.progress(0.0, text="sweeping")
        with shown_errors("The size sweep"):
            st.session_state[key] = reports.size_sweep(
                SWEEP_SIZES,
                list(gpuops.ALGORITHMS),
                repeats,
                refuse=sweep_refusal,
                progress=lambda f, text: bar.progress(f, text=text),
            )
        bar.empty()


def downloads(report: dict, rows: pd.DataFrame) -> None:
    """This session's run as CSV and JSON files."""
    d1, d2 = st.columns(2)
    icon = ":material/download:"
    d1.download_button(
        "Download CSV", rows.to_csv(index=False), "conv_explorer_bench.csv", "text/csv", icon=icon
    )
    report_json = json.dumps(report, indent=1)
    d2.download_button(
        "Download JSON", report_json, "conv_explorer_bench.json", "application/json", icon=icon
    )
