"""Benchmarks: the committed H100 runs at once, next to a run of the benchmark on this machine, the
precision ladder (fp32 / TF32 / bf16 / fp16 against cuDNN), and conv2d time vs image size with the
spread of repeated runs."""

import pandas as pd
import streamlit as st

from bench import reports, suite
from ui import benchmarks_view as view
from ui import navigation, state
from ui.common import backend_name, figure, style
from ui.state import Param
from viz import benchmarks as viz
from viz.precision import ladder_figure

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

SHAPES = view.shape_choices()
GROUPS = {group.id: group for group in reports.group_leases(reports.load_runs())}  # runs of one sitting
NEWEST_GPU = reports.default_lease(list(GROUPS.values()))

RUN = Param(
    "benchmarks_run",
    NEWEST_GPU.id if NEWEST_GPU else "",
    "Committed results (newest first)",
    "select",
    choices=tuple(GROUPS),
    pinned=True,  # in the link even as the default: the newest run changes as results are committed
)
GPU = view.INFO.gpu
SHAPE = Param(
    "benchmarks_shape",
    "standard" if GPU else suite.CPU_SHAPES[0].name,
    "Shapes",
    "select",
    choices=tuple(SHAPES),
)
WHICH = Param(
    "benchmarks_parts",
    "all" if GPU else (view.PARTS or ("all",))[0],
    "Operations",
    "select",
    choices=("all", *view.PARTS),
)
REPEAT = Param("benchmarks_repeat", 20 if GPU else 5, "Timed runs per measurement", "slider", lo=3, hi=50)
SPREAD = "Each point is the median of these runs; its bar goes from the fastest to the slowest."
SWEEP_REPEATS = Param("benchmarks_reps", 5, "Repeats per size", "slider", lo=3, hi=9, help=SPREAD)
PARAMS = [RUN, SHAPE, REPEAT, SWEEP_REPEATS, *([WHICH] if view.PARTS else [])]
REPORT, SWEEP = "bench_report", "benchmarks_sweep_result"  # session_state: this session's measurements

state.use(PARAMS)
sty = style()

st.title("Benchmarks")


def section_auto(runs: list[reports.Run], op: str) -> None:
    """Which algorithm 'auto' ran, next to the fastest one measured in the same run."""
    checks = reports.auto_checks(runs, op)
    if not checks:
        return
    for kind, text in view.auto_notes(checks, op, runs):
        (st.warning if kind == "warning" else st.caption)(text)
    st.dataframe(view.styled(view.auto_frame(checks, runs)), hide_index=True, placeholder=view.MISSING)


def section_op(runs: list[reports.Run], op: str, key: str) -> None:
    """One operation: speed relative to its first peer (chart), auto's choice, and the full table."""
    peers = reports.peers(runs, op)
    if peers:
        rows, labels = view.ratio_rows(runs, op, peers[0]), reports.run_labels(runs)
        fig = viz.ratio_figure(rows, peers[0], labels, f"{op}: speed relative to {peers[0]}", sty)
        figure(fig, f"bench_{key}_{op}", view.ratio_caption(runs, peers))
    else:
        st.info(
            f"No peer was measured for {op} in this run (PyTorch did not import): times only, in the table."
        )
    section_auto(runs, op)
    ratio_to = f" and the ratio to {peers[0]} (its time ÷ this time)" if peers else ""
    with st.expander(f"Table: {op}, median ms, rates{ratio_to}", expanded=not peers):
        table = pd.DataFrame(reports.table_rows(runs, op, peers[:1]))
        st.dataframe(
            view.styled(table),
            hide_index=True,
            key=f"table_{key}_{op}",
            column_config=view.column_config(table),
            placeholder=view.MISSING,
        )
        if "of copy · run 1" in table.columns and view.copy_caption(runs):
            st.caption(view.copy_caption(runs))
        every = pd.DataFrame(reports.table_rows(runs, op)).to_csv(index=False)
        st.download_button(
            "Every ratio to every peer (CSV)",
            every,
            f"{op}_ratios.csv",
            "text/csv",
            key=f"csv_{key}_{op}",
            icon=":material/download:",
            type="tertiary",
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


def section_committed() -> reports.Lease | None:
    """The committed reports (bench/results/*.json): the runs of one device session at a time,
    newest first; their label and how they were measured."""
    if not GROUPS:
        st.info("No benchmark reports in bench/results/ (written by `python3 -m bench.suite --out ...`).")
        return None
    group = GROUPS[state.widget(RUN, format_func=lambda i: GROUPS[i].label())]
    first = group.first
    st.markdown(f"**{first.device}** · " + " · ".join(first.labels()[1:]) + f" · run {first.date()}")
    st.caption(view.runs_caption(group))
    if view.has_auto(list(group.runs), "conv2d"):
        st.caption(view.auto_compares("conv2d"))
    return group


def section_ladder(runs: list[reports.Run]) -> None:
    """conv2d's precision ladder of the committed run that measured the tensor-core kernels."""
    found = view.ladder_of(runs)
    if found is None:
        return
    run, rungs = found
    st.subheader("Precision ladder: conv2d in fp32, TF32, bf16 and fp16, ours and cuDNN's")
    fig = ladder_figure(
        view.ladder_rows(rungs), peer="cuDNN", title="conv2d per precision and shape", style=sty
    )
    figure(fig, "bench_ladder", view.ladder_caption(run))
    with st.expander("Table: the precision ladder, per shape"):
        st.dataframe(
            view.styled(view.ladder_table(rungs)),
            hide_index=True,
            key="table_ladder",
            placeholder=view.MISSING,
        )


def section_run_here() -> None:
    """Run the benchmark on this server's backend: one run at a time per server."""
    with st.container(border=True):
        st.markdown("##### Run on this machine")
        st.caption(f"Backend: **{backend_name()}**.")
        if not view.INFO.gpu:
            st.caption(
                "**CPU numbers are CPU numbers**: no GPU here; compare them with each other, not with the "
                "H100. The standard GPU shapes take minutes here."
            )
        name = state.widget(SHAPE, format_func=view.shape_text)
        parts = state.widget(WHICH) if view.PARTS else None
        repeat = int(state.widget(REPEAT))
        shapes, refused = view.fitting(name)
        for why in refused:
            st.warning(f"Left out: {why}", icon=":material/hourglass_disabled:")
        estimate = view.estimate_seconds(shapes, repeat) if shapes else 0.0
        if not view.INFO.gpu and estimate > 60:
            st.warning(
                f"On this CPU this run may take up to about {estimate / 60:.0f} minutes, and only one "
                "benchmark runs at a time on this server.",
                icon=":material/timer:",
            )
        if st.button("Run the benchmark", type="primary", icon=":material/play_arrow:", disabled=not shapes):
            view.measure(
                REPORT,
                lambda progress: suite.run(shapes, repeat=repeat, progress=progress, **view.parts_arg(parts)),
                estimate,
            )


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
    st.markdown(view.run_line(run))
    section_runs([run], "here")
    rows = view.records_frame(report)
    with st.expander("All records of this run", expanded=False):
        st.dataframe(rows, hide_index=True, key="table_here_all", placeholder=view.MISSING)
    view.downloads(report, rows)


def section_sweep() -> None:
    st.subheader("Time vs image size")
    st.caption(view.SWEEP_TEXT)
    c1, c2 = st.columns([2, 3], vertical_alignment="bottom")
    repeats = int(state.widget(SWEEP_REPEATS, container=c1))
    if c2.button("Run the size sweep", icon=":material/show_chart:"):
        view.sweep_now(SWEEP, repeats)
    sweep = st.session_state.get(SWEEP)
    if sweep is None:
        return
    figure(
        viz.sweep_figure(sweep.sizes, view.sweep_series(sweep), sweep.clock, sty),
        "bench_sweep",
        f"Markers: median of the repeated runs; bars: fastest to slowest run; hollow: noisy (spread > "
        f"{reports.NOISY:.0%} of the median). {view.calls_text(sweep)}",
    )
    if sweep.noisy():
        st.warning(view.noise_text(sweep), icon=":material/ssid_chart:")
    for (a, s), why in sweep.skipped.items():
        st.caption(f"Not measured: {a} at {s} px. {why}")
    with st.expander("Table: every point's runs"):
        st.dataframe(
            pd.DataFrame(reports.sweep_rows(sweep)),
            hide_index=True,
            key="table_sweep",
            placeholder=view.MISSING,
        )


if sty.presentation:  # fewer sections per screen: one column
    committed = section_committed()
    section_run_here()
else:
    left, right = st.columns([7, 3], gap="medium")
    with left:
        committed = section_committed()
    with right:
        section_run_here()
if committed is not None:  # full width: the tables fit the page
    section_runs(list(committed.runs), "c")
    section_ladder(list(committed.runs))
section_this_run()
section_sweep()
