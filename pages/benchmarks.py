"""Benchmarks: the committed H100 runs at once, next to a run of the benchmark on this machine, and
conv2d time vs image size with the spread of repeated runs."""

import dataclasses
import json
import time
from concurrent.futures import ThreadPoolExecutor, wait

import pandas as pd
import streamlit as st

import gpuops
from bench import reports, suite
from ui import budget, navigation, shared, state
from ui.common import backend_name, figure, shown_errors, style
from ui.state import Param
from viz import benchmarks as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

INFO = gpuops.backend_info()
LEASES = {lease.id: lease for lease in reports.group_leases(reports.load_runs())}
NEWEST_GPU = reports.default_lease(list(LEASES.values()))
GROUPS = {"standard": "the standard shapes", "classes": "the workload classes"}
SHAPES = {
    "standard": list(suite.STANDARD_SHAPES),
    **({"classes": list(suite.CLASS_SHAPES)} if getattr(suite, "CLASS_SHAPES", ()) else {}),
    **{name: [s] for name, s in suite.ALL_SHAPES.items()},
}
PARTS = tuple(getattr(suite, "PARTS", ()))  # forward / backward, where the benchmark offers them
SWEEP_SIZES = [64, 128, 256, 512, 1024, 2048] if INFO.gpu else [64, 128, 256, 512, 1024]

RUN = Param(
    "bm_run",
    NEWEST_GPU.id if NEWEST_GPU else "",
    "Committed results (newest first)",
    "select",
    choices=tuple(LEASES),
    pinned=True,  # in the link even as the default: the newest run changes as results are committed
)
SHAPE = Param(
    "bm_shape",
    "standard" if INFO.gpu else suite.CPU_SHAPES[0].name,
    "Shapes",
    "select",
    choices=tuple(SHAPES),
)
WHICH = Param(
    "bm_parts", "all" if INFO.gpu else (PARTS or ("all",))[0], "Operations", "select", choices=("all", *PARTS)
)
REPEAT = Param("bm_repeat", 20 if INFO.gpu else 5, "Timed runs per measurement", "slider", lo=3, hi=50)
SWEEP_REPEATS = Param(
    "bm_reps",
    5,
    "Repeats per size",
    "slider",
    lo=3,
    hi=9,
    help="Each point is the median of these runs; its bar goes from the fastest to the slowest.",
)
PARAMS = [RUN, SHAPE, REPEAT, SWEEP_REPEATS, *([WHICH] if PARTS else [])]
REPORT, SWEEP = "bench_report", "bm_sweep_result"  # session_state: this session's measurements
MS = st.column_config.NumberColumn(format="%.4f")

state.use(PARAMS)
sty = style()

st.title("Benchmarks")


def section_auto(runs: list[reports.Run], op: str) -> None:
    """Which algorithm 'auto' ran, next to the fastest one measured in the same run."""
    checks = reports.auto_checks(runs, op)
    if not checks:
        return
    st.dataframe(
        pd.DataFrame(reports.auto_rows(checks)),
        hide_index=True,
        column_config={k: MS for k in ("its ms", "fastest ms", "auto's own ms")},
    )
    wrong = [c for c in checks if c.agrees is False]
    unknown = [c for c in checks if c.agrees is None]
    if wrong:
        st.warning(
            "**auto did not run the fastest measured algorithm** — "
            + "; ".join(
                f"{c.shape} ({c.run.removesuffix('.json')}): ran {c.chose}, fastest {c.fastest}. {c.reason}"
                for c in wrong
            )
        )
    elif unknown:
        st.caption(f"`ours:auto` of {op}: {unknown[0].reason}; the table shows the fastest measured variant.")
    else:
        st.caption(
            f"`ours:auto` ran the fastest of our measured algorithms in every run shown ({len(checks)})."
        )
    slow = [c for c in checks if c.chosen_ms and c.auto_ms > 1.3 * c.chosen_ms]
    for c in slow:
        st.caption(
            f"{c.shape} ({c.run.removesuffix('.json')}): auto's own median {c.auto_ms:.3f} ms is "
            f"{c.auto_ms / c.chosen_ms:.2f}x that of {c.chose} ({c.chosen_ms:.3f} ms), which it runs: the "
            "same kernel, measured twice in one run. Compare the spread between runs."
        )


def section_op(runs: list[reports.Run], op: str, key: str) -> None:
    """One operation: speed relative to its first peer (chart), auto's choice, and the full table."""
    peers = reports.peers(runs, op)
    rows = reports.compare(runs, op)
    gpu = runs[0].gpu
    if peers:
        ref = peers[0]
        shown = [r for r in rows if r.impl != ref and ref in r.vs]
        fig = viz.ratio_figure(
            [r.shape for r in shown],
            [r.impl for r in shown],
            [r.vs[ref] for r in shown],
            ref,
            reports.run_labels(runs),
            f"{op}: speed relative to {ref}, per shape",
            sty,
        )
        others = [p for p in peers if p != ref]
        caption = (
            f"Reference: {reports.describe_peer(ref, gpu)}, measured in the same run; right of the dashed line is "
            "faster."
            + (
                " Other peers: " + ", ".join(reports.describe_peer(p, gpu) for p in others) + "."
                if others
                else ""
            )
            + (" One marker per run; the grey line is the spread between the runs." if len(runs) > 1 else "")
        )
        figure(fig, f"bench_{key}_{op}", caption)
    else:
        st.info(
            f"No peer was measured for {op} in this run (PyTorch did not import): times only, in the table."
        )
    section_auto(runs, op)
    with st.expander(
        f"Table: {op}, median ms, rates and every ratio (peer time ÷ this time)", expanded=not peers
    ):
        table = pd.DataFrame(reports.table_rows(runs, op))
        numbers = {c: MS for c in table.columns if c not in ("shape", "impl")}
        st.dataframe(table, hide_index=True, key=f"table_{key}_{op}", column_config=numbers)
        copy = [r.copy_gbps for r in runs]
        if any(copy) and "of copy · run 1" in table.columns:
            st.caption(
                "“of copy”: achieved GB/s over the run's device copy ("
                + ", ".join(f"{g:,.0f} GB/s" for g in copy if g)
                + "), the ceiling of a memory-bound kernel."
            )


def section_runs(runs: list[reports.Run], key: str) -> None:
    ops = reports.ops(runs)
    if not ops:
        st.info("This run holds no operation records.")
        return
    richest = max(ops, key=lambda op: len(reports.compare(runs, op)))  # the op with the most to compare
    for op, tab in zip(ops, st.tabs(ops, default=richest), strict=True):
        with tab:
            section_op(runs, op, key)


def section_committed() -> None:
    """The committed reports (bench/results/*.json): one lease at a time, newest first."""
    if not LEASES:
        st.info("No benchmark reports in bench/results/ (written by `python3 -m bench.suite --out ...`).")
        return
    lease = LEASES[state.widget(RUN, format_func=lambda i: LEASES[i].label())]
    first = lease.first
    st.markdown(f"**{first.device}** · " + " · ".join(first.labels()[1:]) + f" · run {first.date()}")
    clock = "CUDA events" if first.gpu else "perf_counter"
    runs = "; ".join(
        f"run {k + 1} = `{r.name}` ({r.started:%H:%M:%S} UTC)" if r.started else f"run {k + 1} = `{r.name}`"
        for k, r in enumerate(lease.runs)
    )
    st.caption(
        f"Our kernels (`ours…`) next to the peers measured **in the same run**, as ratios. {runs}. Each "
        f"value: median of {first.repeat or 'several'} timed runs after warm-up ({clock})"
        + (
            f"; {len(lease.runs)} runs of one device lease: their spread is the run-to-run noise."
            if len(lease.runs) > 1
            else "."
        )
        + ("" if first.gpu else " **CPU numbers**: compare them with the CPU peers of the same run only.")
    )
    section_runs(list(lease.runs), "c")


def shape_text(name: str) -> str:
    if name in GROUPS:
        return f"{GROUPS[name]} (" + ", ".join(s.name for s in SHAPES[name]) + ")"
    shape = suite.ALL_SHAPES[name]
    dims = [
        f"{f.name}={getattr(shape, f.name)}"
        for f in dataclasses.fields(shape)
        if f.name != "name" and getattr(shape, f.name) != f.default
    ]
    return f"{name} ({', '.join(dims)})"


def conv_plan(s: suite.Shape) -> gpuops.ConvPlan:
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


def with_progress(job, bar, estimate_s: float, what: str):
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


def section_run_here() -> None:
    """Run the benchmark on this server's backend: one run at a time per server."""
    with st.container(border=True):
        st.markdown("##### Run on this machine")
        st.caption(f"Backend: **{backend_name()}**.")
        if not INFO.gpu:
            st.info(
                "**CPU numbers are CPU numbers**: no GPU here; compare them with each other, not with the "
                "H100. The standard GPU shapes take minutes here.",
                icon=":material/memory:",
            )
        name = state.widget(SHAPE, format_func=shape_text)
        parts = state.widget(WHICH) if PARTS else None
        repeat = int(state.widget(REPEAT))
        shapes, refused = [], []
        for s in SHAPES[name]:
            why = memory_refusal(s)
            (refused if why else shapes).append(why or s)
        for why in refused:
            st.warning(f"Left out: {why}", icon=":material/hourglass_disabled:")
        estimate = estimate_seconds(shapes, repeat) if shapes else 0.0
        if not INFO.gpu and estimate > 60:
            st.warning(
                f"On this CPU this run may take up to about {estimate / 60:.0f} minutes, and only one "
                "benchmark runs at a time on this server.",
                icon=":material/timer:",
            )
        if st.button("Run the benchmark", type="primary", icon=":material/play_arrow:", disabled=not shapes):
            run_benchmark(shapes, repeat, parts, estimate)


def run_benchmark(shapes: list[suite.Shape], repeat: int, parts: str | None, estimate: float) -> None:
    with shared.measuring() as ours:
        if not ours:
            st.warning(
                "Another session is measuring on this server (one benchmark or sweep at a time); try again "
                "in a moment.",
                icon=":material/hourglass_top:",
            )
            return
        bar = st.progress(0.0, text="starting")
        extra = {} if parts is None else {"parts": PARTS if parts == "all" else (parts,)}
        with shown_errors("The benchmark"):  # students' millisecond kernels run beside it
            st.session_state[REPORT] = with_progress(
                lambda progress: suite.run(shapes, repeat=repeat, progress=progress, **extra),
                bar,
                estimate,
                "measuring",
            )
        bar.empty()


def section_this_run() -> None:
    """This session's run: the same views as the committed results, a table and downloads."""
    report = st.session_state.get(REPORT)
    if report is None:
        return
    try:
        run = reports.parse_run(report, "this machine")
    except ValueError as exc:
        st.error(f"The run's report cannot be read: {exc}")
        return
    st.subheader("This machine's run")
    st.markdown(
        f"**{run.device}** · " + " · ".join(run.labels()[1:]) + f" · run {run.date()} · "
        f"median of {run.repeat} timed runs ({'CUDA events' if run.gpu else 'perf_counter'})"
    )
    section_runs([run], "here")
    rows = pd.DataFrame(report["results"])
    rows["extra"] = rows["extra"].map(lambda e: json.dumps(e) if e else "")
    with st.expander("All records of this run", expanded=False):
        st.dataframe(rows, hide_index=True, key="table_here_all")
    d1, d2 = st.columns(2)
    d1.download_button(
        "Download CSV",
        rows.to_csv(index=False),
        "conv_explorer_bench.csv",
        "text/csv",
        icon=":material/download:",
    )
    d2.download_button(
        "Download JSON",
        json.dumps(report, indent=1),
        "conv_explorer_bench.json",
        "application/json",
        icon=":material/download:",
    )


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
    calls = sorted({p.calls for a in sweep.algorithms for p in sweep.points[a] if p is not None})
    if not calls:
        return ""
    span = str(calls[0]) if len(calls) == 1 else f"{calls[0]}-{calls[-1]}"
    return f"A run is the median of {span} call(s) ({sweep.clock}; more calls for fast points)."


def section_sweep() -> None:
    st.subheader("Time vs image size")
    k, c, m = reports.SWEEP_K, reports.SWEEP_C, reports.SWEEP_M
    st.caption(
        f"{k} x {k} convolution of a {c}-channel image into {m} maps, stride 1, padding {reports.SWEEP_PAD}, "
        f"each algorithm, at {', '.join(map(str, SWEEP_SIZES))} px. Every point is measured several times, "
        "round-robin over the points, so a burst of load on a shared machine shows as spread."
    )
    c1, c2 = st.columns([2, 3], vertical_alignment="bottom")
    repeats = int(state.widget(SWEEP_REPEATS, container=c1))
    if c2.button("Run the size sweep", icon=":material/show_chart:"):
        with shared.measuring() as ours:
            if not ours:
                st.warning("Another session is measuring on this server; try again in a moment.")
            else:
                bar = st.progress(0.0, text="sweeping")
                with shown_errors("The size sweep"):
                    st.session_state[SWEEP] = reports.size_sweep(
                        SWEEP_SIZES,
                        list(gpuops.ALGORITHMS),
                        repeats,
                        refuse=sweep_refusal,
                        progress=lambda f, text: bar.progress(f, text=text),
                    )
                bar.empty()
    sweep = st.session_state.get(SWEEP)
    if sweep is None:
        return
    series = {
        a: [p and (p.median, p.lo, p.hi, p.n, p.noisy) for p in sweep.points[a]] for a in sweep.algorithms
    }
    where = "this CPU" if sweep.clock == "perf_counter" else "the GPU"
    figure(
        viz.sweep_figure(sweep.sizes, series, sweep.clock, sty),
        "bench_sweep",
        f"Markers: median of the repeated runs; bars: fastest to slowest run; hollow: noisy (spread > "
        f"{reports.NOISY:.0%} of the median). {calls_text(sweep)}",
    )
    noisy = sorted(sweep.noisy(), key=lambda n: -n[2].relative)
    if noisy:
        measured = sum(p is not None for a in sweep.algorithms for p in sweep.points[a])
        st.warning(
            f"**Noisy measurements on {where}**: {len(noisy)} of {measured} points spread over "
            f"{reports.NOISY:.0%} of their median; the worst: "
            + ", ".join(f"{a} at {s} px ({p.relative:.0%})" for a, s, p in noisy[:4])
            + ". Other sessions or programs were using the machine: trust those medians less, or run again.",
            icon=":material/ssid_chart:",
        )
    for (a, s), why in sweep.skipped.items():
        st.caption(f"Not measured: {a} at {s} px. {why}")
    with st.expander("Table: every point's runs"):
        st.dataframe(pd.DataFrame(reports.sweep_rows(sweep)), hide_index=True, key="table_sweep")


if sty.presentation:  # fewer sections per screen: one column
    section_committed()
    section_run_here()
else:
    left, right = st.columns([7, 3], gap="medium")
    with left:
        section_committed()
    with right:
        section_run_here()
section_this_run()
section_sweep()
