"""Small pieces every page uses: errors in place of results, CUDA source, runtimes, downloads."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import plotly.graph_objects as go
import streamlit as st

import gpuops
from gpuops.backend import is_gpu_oom, release_gpu_memory
from gpuops.launch import Launch, file_preamble, includes, kernel_span, source_text
from gpuops.timing import Timing, measure
from ui import budget, charts, pick
from viz.style import Style, style_for

COMPARE_SHARE = 0.75  # of the CPU rerun budget a comparison may spend timing (ui.common.compare)

RESULT_SLOTS = 8  # per-session cache of computed results, bounded


@contextlib.contextmanager
def shown_errors(what: str) -> Iterator[None]:
    """Show a bad setting's ValueError (or a GPU out-of-memory) in place of the result.

    The page goes on: the next widgets and figures still render.
    """
    try:
        yield
    except budget.OverBudgetError as exc:
        st.warning(f"**{what} was not computed:** {exc}", icon=":material/hourglass_disabled:")
    except ValueError as exc:
        st.error(f"**{what} cannot be computed with these settings:** {exc}", icon=":material/warning:")
    except Exception as exc:
        if not is_gpu_oom(exc):
            raise
        release_gpu_memory()
        st.error(
            f"**{what}: the GPU ran out of memory.** The memory was released; try a smaller image or batch.",
            icon=":material/warning:",
        )


def style() -> Style:
    """The figure style of this session: presentation mode (sidebar, kept in the URL) or normal."""
    return style_for(bool(st.session_state.get("pres", False)))


def session_cached(key: tuple, compute: Callable[[], Any]) -> Any:
    """Reuse a result within this session while its inputs are unchanged (bounded per session).
    GPU work holds the process's GPU lock (ui.budget.gpu_work)."""
    store: dict = st.session_state.setdefault("_results", {})
    if key in store:
        return store[key]
    with budget.gpu_work():
        value = compute()
    if len(store) >= RESULT_SLOTS:
        store.pop(next(iter(store)))
    store[key] = value
    return value


def time_call(fn: Callable[[], Any], repeat: int = 5) -> Timing:
    """Median runtime on the current backend.

    On the GPU: CUDA events after 3 warm-up calls. On the CPU, NumPy has nothing to warm up
    and a laptop must stay responsive, so no warm-up and at most ~0.25 s of repeats.
    """
    if gpuops.backend_info().gpu:
        with budget.gpu_lock():
            return measure(fn, gpu=True, warmup=3, repeat=repeat)
    return measure(fn, gpu=False, warmup=0, repeat=3, max_seconds=0.25)


def backend_name() -> str:
    info = gpuops.backend_info()
    return f"GPU {info.device}" if info.gpu else "CPU (NumPy)"


@contextlib.contextmanager
def lazy_expander(label: str, key: str) -> Iterator[bool]:
    """An expander whose content is built only while it is open (yields whether it is): a
    collapsed one costs its rerun nothing, where a plain st.expander builds and sends its content
    on every rerun, and the browser draws it though nobody sees it (the CUDA source's highlighting
    took 0.9 s of a headless Chromium's page load on a 2-core machine). Opening or closing it
    reruns the page; `key` keeps it open across reruns of this page."""
    with st.expander(label, key=key, on_change="rerun") as box:
        yield bool(box.open)


def cuda_source(launch: Launch | None, note: str = "", key: str = "src") -> None:
    """The kernel that ran: its span of the .cu file (version header included), then the file's
    shared helpers and the headers it includes, verbatim; built when its expander is opened.
    `key`: one per call on a page (a page showing several kernels)."""
    if launch is None:
        return
    span = kernel_span(launch.source, launch.kernel)
    label = (
        f"CUDA source: `{launch.kernel}` (gpuops/kernels/{launch.source}, lines {span.first_line}-"
        f"{span.last_line}){note}"
    )
    with lazy_expander(label, key) as shown:
        if not shown:
            return
        if not gpuops.backend_info().gpu:
            st.caption("This machine has no GPU: the NumPy twin ran, using the same index formulas.")
        st.caption(launch.describe())
        st.code(span.text, language="cpp")
        st.markdown(f"**Shared helpers of `{launch.source}`**")
        st.code(file_preamble(launch.source), language="cpp")
        for header in includes(launch.source):
            st.markdown(f"**`gpuops/kernels/{header}`**")
            st.code(source_text(header), language="cpp")


def figure(
    fig: go.Figure, name: str, caption: str = "", *, pickable: bool = False, download: bool = True
) -> None:
    """A figure, its one-line caption, and an HTML download of it (built only when clicked; the
    HTML carries Plotly's JavaScript, so it opens offline). pickable: its cells answer clicks
    and hover rules through ui.pick (the page mounts pick.bridge once)."""
    if pickable:
        pick.chart(fig, name)
    else:
        charts.plotly_chart(fig, f"fig_{name}")
    if caption:
        st.caption(caption)
    if download:
        st.download_button(
            "Figure as HTML (works offline)",
            lambda: fig.to_html(include_plotlyjs=True, full_html=True),
            file_name=f"{name}.html",
            mime="text/html",
            key=f"dl_{name}",
            on_click="ignore",
            type="tertiary",
            icon=":material/download:",
        )


def compare(
    key: tuple, candidates: dict[str, Callable[[], Any]], label: str = "Compare algorithms"
) -> dict[str, Timing] | None:
    """Time several ways of computing the same thing, only when asked ("Compare" button, with a
    progress bar): timing every algorithm on every slider move would stall a classroom server.
    Results are kept per key (image and settings) for the session; None until asked. A
    candidate that refuses these arguments (ValueError) is left out with its reason. On the CPU
    the whole comparison keeps to its share of the rerun budget (COMPARE_SHARE of
    budget.CPU_SECONDS, the rest is the page's own drawing): when the next candidate
    (as long as the average so far) would not fit, the ones left are not timed, and say so (each
    was within budget alone; eight of them at 1024 px took 4 s)."""
    store: dict = st.session_state.setdefault("_comparisons", {})
    if key not in store and st.button(label, key=f"compare_{abs(hash(key))}", icon=":material/timer:"):
        bar = st.progress(0.0, text="timing")
        results: dict[str, Timing] = {}
        refused: dict[str, str] = {}
        started = time.perf_counter()
        on_cpu = not gpuops.backend_info().gpu
        allowed = COMPARE_SHARE * budget.CPU_SECONDS
        for i, (name, fn) in enumerate(candidates.items()):
            spent = time.perf_counter() - started
            if on_cpu and i and spent + spent / i > allowed:  # the next one would not fit
                for rest in list(candidates)[i:]:
                    refused[rest] = (
                        f"this comparison used its {allowed:.1f} s on this CPU server; "
                        "a smaller working size in the sidebar times them all"
                    )
                break
            bar.progress(i / len(candidates), text=f"timing {name}")
            try:
                results[name] = time_call(fn)
            except ValueError as exc:
                refused[name] = str(exc)
        bar.empty()
        if len(store) >= RESULT_SLOTS:
            store.pop(next(iter(store)))
        store[key] = (results, refused)
    if key not in store:
        return None
    results, refused = store[key]
    for name, why in refused.items():
        st.caption(f"{name} was not timed: {why}")
    return results
