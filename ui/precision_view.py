"""The Direct page's precision ladder: the layer on screen computed in fp32, TF32, bf16 and fp16
side by side, each with its time, its rate and its error against a float64 reference computed
with NumPy; cuDNN in the same precision beside ours where PyTorch is installed on a GPU server.

Like "Compare algorithms", nothing is timed until the student asks ("Compare precisions"), each
kernel runs only within the rerun budget (ui/budget.py), and the result is kept per image and
settings for the session. The kernel named for each precision is the one of the Launch that ran
(on NumPy: the launch the GPU would make; the NumPy twin rounds the operands as it does).
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

import gpuops
from gpuops.checks import WindowGeometry
from gpuops.conv2d import PRECISIONS, ConvProblem
from gpuops.index_math import tap_slices
from gpuops.launch import Launch
from ui import budget, tables
from ui.common import COMPARE_SHARE, RESULT_SLOTS, time_call
from ui.padding_view import padding_arg
from ui.records import Conv
from viz.precision import LadderRow, ladder_figure, precision_label
from viz.style import Style

TENSOR_CORE = {"tf32": "pipelined_tf32", "bf16": "pipelined_bf16", "fp16": "pipelined_fp16"}
PRECISION_ORDER = ("fp32", "tf32", "bf16", "fp16")
STORE = "_dc_ladders"  # session_state: measured ladders, per image and settings
MISSING = tables.MISSING
FORMATS = (("max |error|", "{:.2e}"), ("relative error", "{:.2e}"), ("cuDNN error", "{:.2e}"), ("", "{:.3g}"))
CPU_COPY_F64 = budget.CPU_COPY["default"]  # bytes/s the float64 reference's tap loop copies
PRECISION_WORDS = {
    "fp32": "float32 operands (23-bit mantissa)",
    "tf32": "operands rounded to TF32 (10-bit mantissa)",
    "bf16": "operands rounded to bf16 (7-bit mantissa, float32's range)",
    "fp16": "operands rounded to fp16 (10-bit mantissa, values past 65504 overflow)",
}


@dataclass(frozen=True)
class Rung:
    """One precision of the ladder, measured: ours and, where measured, cuDNN's (None: not)."""

    precision: str
    algorithm: str
    kernel: str  # the kernel of the launch that ran ("" if none ran)
    version: str  # "v10", parsed from that kernel's name ("" if it has no number)
    tile: str  # the block tile, "128 x 128" (filters x pixels), for the tensor-core kernels
    ms: float | None
    tflops: float | None
    max_error: float | None  # max |y - y64|
    rel_error: float | None  # ||y - y64|| / ||y64||
    cudnn_ms: float | None = None
    cudnn_tflops: float | None = None
    cudnn_error: float | None = None
    note: str = ""  # why this precision was not timed


@dataclass(frozen=True)
class Ladder:
    rungs: tuple[Rung, ...]
    gpu: bool
    reference_note: str  # "" when the float64 reference was computed, else why not
    cudnn_note: str  # "" when cuDNN was timed, else why not


# ---- the layer's arguments and its float64 reference ---------------------------------------------------
def conv_args(conv: Conv) -> tuple[Any, ...]:
    """(stride, padding, dilation, groups, padding_mode) of the page's convolution."""
    g = conv.g
    return ((g.stride_h, g.stride_w), padding_arg(g), (g.dil_h, g.dil_w), conv.groups, conv.mode)


def float64_reference(
    planes: np.ndarray, weight: np.ndarray, groups: int, g: WindowGeometry, mode: str
) -> Any:
    """The convolution in float64 (NumPy): the input padded with zeros or mirrored cells, then
    for every tap the strided slice it reads times that tap's weights. (M, H_out, W_out)."""
    x = np.asarray(planes, dtype=np.float64)
    pads = ((0, 0), (g.pad_top, g.pad_bottom), (g.pad_left, g.pad_right))
    padded = np.pad(x, pads, mode="reflect" if mode == "reflect" else "constant")
    C, M = x.shape[0], weight.shape[0]
    Cg, Mg = C // groups, M // groups
    w = np.asarray(weight, dtype=np.float64).reshape(groups, Mg, Cg, g.KH, g.KW)
    out = np.zeros((groups, Mg, g.H_out * g.W_out))
    for ki, kj, rows, cols in tap_slices(g):
        out += w[:, :, :, ki, kj] @ padded[:, rows, cols].reshape(groups, Cg, -1)
    return out.reshape(M, g.H_out, g.W_out)


def reference_seconds(p: ConvProblem) -> float:
    """A slow-end estimate of the float64 reference on this server's CPU (it runs there on a
    GPU server too): every tap's slice copied, then the products."""
    g = p.geometry
    return 8 * p.N * p.C * g.L * g.KH * g.KW / CPU_COPY_F64 + 2 * p.flops / budget.CPU_FLOPS


def errors(y: np.ndarray, reference: np.ndarray | None) -> tuple[float | None, float | None]:
    """(max |y - ref|, ||y - ref|| / ||ref||); (None, None) without a reference."""
    if reference is None:
        return None, None
    diff = np.asarray(y, dtype=np.float64) - reference
    norm = float(np.linalg.norm(reference))
    return float(np.abs(diff).max()), (float(np.linalg.norm(diff)) / norm if norm else None)


def kernel_facts(launch: Launch | None) -> tuple[str, str, str]:
    """(kernel, version, tile) of a launch: its name, "vN" from it, and its block tile in filters x
    pixels where its thread map has one (the tensor-core kernels)."""
    if launch is None:
        return "", "", ""
    found = re.search(r"_v(\d+)(?:_|$)", launch.kernel)
    bm, bn = getattr(launch.threads, "BM", None), getattr(launch.threads, "BN", None)
    tile = f"{bm} x {bn}" if bm and bn else ""
    return launch.kernel, f"v{found.group(1)}" if found else "", tile


# ---- measuring --------------------------------------------------------------------------------------
def ladder_algorithms(conv: Conv, x: Any, w: Any) -> dict[str, str]:
    """precision -> algorithm: fp32 is the page's own algorithm when it computes in fp32, else
    what auto runs; the others are the pipelined tensor-core kernels (v7-v11)."""
    fp32 = (
        conv.ran
        if PRECISIONS.get(conv.ran) == "fp32"
        else gpuops.resolve_algorithm(x, w, None, *conv_args(conv))
    )
    return {"fp32": fp32, **TENSOR_CORE}


def _last_of(fn: Callable[[], Any], keep: list) -> Callable[[], Any]:
    def call() -> Any:
        keep[:] = [fn()]
        return keep[0]

    return call


def _measure_rung(
    precision: str, algorithm: str, problem: ConvProblem, shape: tuple, run: Callable[[str], Any]
) -> tuple[Rung, np.ndarray | None]:
    """Time one precision (ValueError: refused, with the reason as the rung's note)."""
    x_shape, w_shape, args = shape
    launch = gpuops.plan_conv2d(x_shape, w_shape, None, *args, algorithm).launch
    kernel, version, tile = kernel_facts(launch)
    budget.check(budget.conv2d_cost(problem, algorithm), algorithm, "Lower the working size.")
    keep: list = []
    timing = time_call(_last_of(lambda: run(algorithm), keep))
    y = gpuops.to_numpy(keep[0])[0]
    rate = problem.flops / (timing.median_ms * 1e-3) / 1e12
    return Rung(precision, algorithm, kernel, version, tile, timing.median_ms, rate, None, None), y


def measure_ladder(
    planes: np.ndarray, conv: Conv, progress: Callable[[float, str], None] | None = None
) -> Ladder:
    """Every precision of the page's convolution, timed within the budget, with its errors
    against the float64 reference, and cuDNN beside it where PyTorch runs on the GPU. On the CPU
    the ladder keeps to the comparison's share of the rerun budget (ui.common.COMPARE_SHARE):
    a precision whose turn comes after that is not timed, and says why."""
    gpu = gpuops.backend_info().gpu
    x, w = gpuops.asarray(planes[None]), gpuops.asarray(conv.weight)
    args = conv_args(conv)
    plan = gpuops.plan_conv2d(x.shape, w.shape, None, *args)
    problem, shape = plan.problem, (tuple(x.shape), tuple(w.shape), args)
    started = time.perf_counter()
    allowed = COMPARE_SHARE * budget.CPU_SECONDS
    reference, reference_note = None, ""
    if reference_seconds(problem) > budget.CPU_SECONDS:
        reference_note = (
            f"the float64 reference would take about {reference_seconds(problem):.1f} s on this "
            f"server's CPU, over its budget of {budget.CPU_SECONDS:.0f} s: errors not computed "
            "(a smaller working size computes them)"
        )
    else:
        reference = float64_reference(planes, conv.weight, conv.groups, conv.g, conv.mode)

    def run(algorithm: str) -> Any:
        return gpuops.conv2d(x, w, None, *args, algorithm)

    rungs, outputs = [], {}
    for i, (precision, algorithm) in enumerate(ladder_algorithms(conv, x, w).items()):
        if progress:
            progress(i / len(PRECISION_ORDER), f"timing {precision_label(precision)} ({algorithm})")
        spent = time.perf_counter() - started
        if not gpu and i and spent + spent / i > allowed:
            note = (
                f"this comparison used its {allowed:.1f} s on this CPU server; "
                "a smaller working size times all four"
            )
            rungs.append(Rung(precision, algorithm, "", "", "", None, None, None, None, note=note))
            continue
        try:
            rung, y = _measure_rung(precision, algorithm, problem, shape, run)
        except ValueError as exc:
            rungs.append(Rung(precision, algorithm, "", "", "", None, None, None, None, note=str(exc)))
            continue
        max_error, rel_error = errors(y, reference)
        rungs.append(Rung(**{**rung.__dict__, "max_error": max_error, "rel_error": rel_error}))
        outputs[precision] = y
    cudnn_note = "no GPU here: cuDNN runs on GPU servers with PyTorch installed"
    if gpu:
        rungs, cudnn_note = _with_cudnn(rungs, planes, conv, problem, reference)
    return Ladder(tuple(rungs), gpu, reference_note, cudnn_note)


@contextlib.contextmanager
def _tf32(torch: Any, allowed: bool) -> Iterator[None]:
    """PyTorch's allow_tf32 for cuDNN, restored afterwards."""
    before = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = allowed
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32 = before


def _with_cudnn(
    rungs: list[Rung], planes: np.ndarray, conv: Conv, problem: ConvProblem, reference: np.ndarray | None
) -> tuple[list[Rung], str]:
    """cuDNN (PyTorch's F.conv2d) in each precision, the input padded first as the page pads it
    (zeros or mirrored cells, the odd cell of "same" on the bottom / right)."""
    try:
        import torch
        from torch.nn import functional
    except ImportError:
        return rungs, "PyTorch is not installed on this server: no cuDNN peer"
    if not torch.cuda.is_available():
        return rungs, "PyTorch sees no GPU on this server: no cuDNN peer"
    g = conv.g
    tx = torch.as_tensor(planes[None], device="cuda")
    tw = torch.as_tensor(conv.weight, device="cuda")
    pads = (g.pad_left, g.pad_right, g.pad_top, g.pad_bottom)
    tx = functional.pad(tx, pads, mode="reflect" if conv.mode == "reflect" else "constant")
    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
    out = []
    for rung in rungs:
        hx, hw = (
            (tx.to(dtypes[rung.precision]), tw.to(dtypes[rung.precision]))
            if rung.precision in dtypes
            else (tx, tw)
        )

        def peer(hx: Any = hx, hw: Any = hw) -> Any:
            return functional.conv2d(
                hx, hw, stride=(g.stride_h, g.stride_w), dilation=(g.dil_h, g.dil_w), groups=conv.groups
            )

        with _tf32(torch, rung.precision == "tf32"):
            timing = time_call(peer)
            with budget.gpu_work():
                y = peer().float().cpu().numpy()[0]
        rate = problem.flops / (timing.median_ms * 1e-3) / 1e12
        out.append(
            Rung(
                **{
                    **rung.__dict__,
                    "cudnn_ms": timing.median_ms,
                    "cudnn_tflops": rate,
                    "cudnn_error": errors(y, reference)[1],
                }
            )
        )
    return out, ""


# ---- the page's section --------------------------------------------------------------------------
def compare_precisions(planes: np.ndarray, conv: Conv, key: tuple) -> Ladder | None:
    """The "Compare precisions" button; the ladder once asked (kept per key for the session)."""
    store: dict = st.session_state.setdefault(STORE, {})
    if key not in store and st.button(
        "Compare precisions", key="compare_precisions", icon=":material/timer:"
    ):
        bar = st.progress(0.0, text="timing")
        # no gpu_work() around it all: each timing takes the GPU lock itself (ui.common.time_call), and
        # the float64 reference runs on the CPU, where other sessions' kernels need not wait for it
        ladder = measure_ladder(planes, conv, lambda f, text: bar.progress(f, text=text))
        bar.empty()
        if len(store) >= RESULT_SLOTS:
            store.pop(next(iter(store)))
        store[key] = ladder
    return store.get(key)


def table(ladder: Ladder) -> pd.DataFrame:
    """One row a precision: ours (kernel, time, rate, errors) and cuDNN's time and error (those
    two columns only where cuDNN was timed: the caption says why not)."""
    unit, scale = ("TFLOP/s", 1.0) if ladder.gpu else ("GFLOP/s", 1000.0)
    frame = pd.DataFrame(
        [
            {
                "precision": precision_label(r.precision),
                "algorithm": r.algorithm,
                "kernel (version, tile)": _kernel_text(r),
                "ms": r.ms,
                unit: None if r.tflops is None else r.tflops * scale,
                "max |error|": r.max_error,
                "relative error": r.rel_error,
                "cuDNN ms": r.cudnn_ms,
                "cuDNN error": r.cudnn_error,
            }
            for r in ladder.rungs
        ]
    )
    return frame if ladder.cudnn_note == "" else frame.drop(columns=["cuDNN ms", "cuDNN error"])


def styled(frame: pd.DataFrame) -> Any:
    """The table as shown: "—" for what was not measured, errors in scientific notation."""
    return tables.styled(frame, FORMATS)


def _facts(version: str, tile: str) -> str:
    return ", ".join(f for f in (version, f"tile {tile}" if tile else "") if f)


def _kernel_text(r: Rung) -> str:
    if not r.kernel:
        return MISSING
    facts = _facts(r.version, r.tile)
    return f"{r.kernel} ({facts})" if facts else r.kernel


def launch_text(launch: Launch | None) -> str:
    """The kernel of a launch in words: "`conv2d_v10_tf32_128x128`: v10, tile 128 x 128"."""
    kernel, version, tile = kernel_facts(launch)
    if not kernel:
        return MISSING
    facts = _facts(version, tile)
    return f"`{kernel}`: {facts}" if facts else f"`{kernel}`"


def rows(ladder: Ladder, group: str) -> list[LadderRow]:
    """The ladder as the figure's rows."""
    return [
        LadderRow(group, r.precision, r.tflops, r.cudnn_tflops, r.rel_error, r.cudnn_error)
        for r in ladder.rungs
    ]


def captions(ladder: Ladder) -> list[str]:
    """What the numbers are: where they ran, what each precision rounds, what was left out."""
    if ladder.gpu:
        where = (
            "Times: median of several runs on this GPU after warm-up (CUDA events). The kernel is the "
            "one of the launch that ran."
        )
    else:
        where = (
            "**No GPU here: the times are those of the NumPy twins on this CPU**, which round the operands "
            "as the tensor cores do and sum in fp32; they say nothing about tensor-core speed. The kernel "
            "column names the launch the GPU makes for these settings."
        )
    words = "; ".join(f"{precision_label(p)}: {PRECISION_WORDS[p]}" for p in PRECISION_ORDER)
    out = [
        where,
        "Errors against a float64 reference computed with NumPy: max |y - y64| and ||y - y64|| / ||y64||. "
        f"Sums are fp32 in every precision; {words}.",
    ]
    if ladder.reference_note:
        out.append(f"No errors: {ladder.reference_note}.")
    if ladder.cudnn_note:
        out.append(f"cuDNN: {ladder.cudnn_note}.")
    out += [
        f"{precision_label(r.precision)} ({r.algorithm}) was not timed: {r.note}"
        for r in ladder.rungs
        if r.note
    ]
    return out


def show_ladder(planes: Any, conv: Conv, look: Style, show: Callable[..., None]) -> None:
    """The Direct page's ladder section: "Compare precisions", then the table, the figure (drawn
    by the page's `show`) and what the numbers mean."""
    ladder = compare_precisions(planes, conv, ("direct_ladder", *conv.key))
    if ladder is None:
        return
    tables.show(styled(table(ladder)), presentation=look.presentation, key="direct_ladder_table")
    figure = ladder_figure(
        rows(ladder, "this layer"), peer="cuDNN", title="This layer in four precisions", style=look
    )
    show(figure, "direct_ladder")
    for text in captions(ladder):
        st.caption(text)
