"""The benchmark command: `python3 -m bench.suite [--out FILE] [--shapes ...] [--repeat N]`.

Times every operation and algorithm on the standard shapes, on the default backend, next to peers
measured in the same run (a device-to-device copy for bandwidth; PyTorch / cuDNN / cuBLAS when
torch imports), prints a table and writes a report: JSON with the fields `bench.reports` reads
(schema, commit, device, versions, then the run and its records). The Benchmarks page runs the
same suite through `run()`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import gpuops
from bench.pin_core import gpu_launch_probe, pin_to_fastest_core
from bench.reports import SCHEMA, cudnn_text, precision_of
from gpuops import conv_backward, sm90a, timing
from gpuops import conv_backward_hopper as hopper_weight
from gpuops.conv2d import (
    HOPPER_ALGORITHMS,
    PIPE_PREFIX,
    PRECISIONS,
    SPLIT_ALGORITHMS,
    WG_SOURCE,
    channels_last_fits,
    halo_fits,
    halo_launch,
    launch_call,
    pipelined_launch,
    pointwise_fits,
    wgmma_fits,
)
from gpuops.reflect_pad import resolve_backward_algorithm as resolve_reflect_backward
from gpuops.timing import measure

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Shape:
    name: str
    N: int
    C: int
    H: int
    W: int
    M: int
    K: int
    stride: int
    pad: int
    groups: int = 1
    conv_only: bool = False  # a workload class of conv2d: no reflect / unfold / fold rows


STANDARD_SHAPES = (
    Shape("image512", 1, 3, 512, 512, 16, 3, 1, 1),
    Shape("image2048_k7", 1, 3, 2048, 2048, 8, 7, 1, 3),
    Shape("resnet56", 32, 64, 56, 56, 64, 3, 1, 1),
    Shape("stride2", 16, 64, 112, 112, 128, 3, 2, 1),
)
# Common workload classes of conv2d (issues 13 and 27), measured like the standard shapes, conv2d
# only. The GEMM classes (issue 27's tensor-core targets): 1x1, 5x5, grouped, VGG-like 3x3, late
# stages with many channels (14x14x256, 7x7x512, 7x7x1024); and depthwise layers at stride 1, at
# stride 2 and on a small late-stage plane (14x14), as MobileNets have them.
CLASS_SHAPES = (
    Shape("vgg_like", 8, 128, 112, 112, 128, 3, 1, 1, conv_only=True),
    Shape("pointwise_1x1", 32, 256, 28, 28, 256, 1, 1, 0, conv_only=True),
    Shape("depthwise_3x3", 32, 256, 56, 56, 256, 3, 1, 1, groups=256, conv_only=True),
    Shape("depthwise_s2", 32, 128, 112, 112, 128, 3, 2, 1, groups=128, conv_only=True),
    Shape("depthwise_14", 32, 512, 14, 14, 512, 3, 1, 1, groups=512, conv_only=True),
    Shape("k5", 16, 32, 64, 64, 64, 5, 1, 2, conv_only=True),
    Shape("gray_large", 1, 1, 4096, 4096, 1, 3, 1, 1, conv_only=True),
    Shape("fullhd_rgb", 1, 3, 1080, 1920, 16, 3, 1, 1, conv_only=True),
    Shape("late_stage", 32, 512, 7, 7, 512, 3, 1, 1, conv_only=True),
    Shape("grouped_g4", 32, 128, 56, 56, 128, 3, 1, 1, groups=4, conv_only=True),
    Shape("late14_256", 32, 256, 14, 14, 256, 3, 1, 1, conv_only=True),
    Shape("late7_1024", 16, 1024, 7, 7, 1024, 3, 1, 1, conv_only=True),
)
# The GEMM-class shapes the tensor-core targets are stated on (tensor_core_summary).
GEMM_CLASSES = ("vgg_like", "pointwise_1x1", "k5", "grouped_g4", "late14_256", "late_stage", "late7_1024")
HALF_DTYPES = ("bf16", "fp16")  # cuDNN's 16-bit peers, on tensors of that type (autocast's operands)
CPU_SHAPES = (Shape("cpu_image1024", 1, 3, 1024, 1024, 3, 3, 1, 1),)
ALL_SHAPES = {s.name: s for s in STANDARD_SHAPES + CLASS_SHAPES + CPU_SHAPES}
TIMING = "queued"  # how GPU times are taken (gpuops.timing): calls back to back, events around each
OP_ROUNDS = 2  # interleaved rounds of the backward ops' rows on the GPU (Suite.add_op)


@dataclass
class Record:
    shape: str
    op: str  # e.g. "conv2d", "unfold"
    impl: str  # e.g. "ours:tiled", "torch:cudnn"
    median_ms: float
    gbps: float | None = None
    tflops: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Suite:
    """Builds the timed callables for one backend; torch peers only when torch imports."""

    def __init__(self, repeat: int = 20, warmup: int = 5, cpu_budget_s: float = 5.0) -> None:
        self.info = gpuops.backend_info()
        self.gpu = self.info.gpu
        self.xp = gpuops.default_xp()
        self.repeat, self.warmup, self.cpu_budget_s = repeat, warmup, cpu_budget_s
        self.torch = _import_torch(self.gpu)
        self.records: list[Record] = []
        self.rounded_ops: set[str] = set()  # ops whose implementations add_op timed in rounds

    def time(self, fn: Callable[[], Any], repeat: int | None = None) -> float:
        return measure(
            fn,
            gpu=self.gpu,
            warmup=self.warmup,
            repeat=repeat or self.repeat,
            max_seconds=None if self.gpu else self.cpu_budget_s,
        ).median_ms

    def add(
        self,
        shape: str,
        op: str,
        impl: str,
        fn: Callable[[], Any],
        *,
        nbytes: int | None = None,
        flops: int | None = None,
        **extra: Any,
    ) -> Record:
        return self._record(shape, op, impl, self.time(fn), nbytes, flops, extra)

    def _record(
        self,
        shape: str,
        op: str,
        impl: str,
        ms: float,
        nbytes: int | None,
        flops: int | None,
        extra: dict[str, Any],
    ) -> Record:
        rec = Record(
            shape,
            op,
            impl,
            ms,
            nbytes / ms / 1e6 if nbytes else None,
            flops / ms / 1e9 if flops else None,
            extra,
        )
        self.records.append(rec)
        return rec

    def add_op(
        self,
        shape: str,
        op: str,
        flops: int | None,
        ours: dict[str, Callable[[], Any]],
        torch_fn: Callable[[], Any] | None,
        chose: str | None = None,
        extras: dict[str, dict[str, Any]] | None = None,
        nbytes: int | None = None,
    ) -> None:
        """Our implementations of one op (impl "ours:<name>"), then PyTorch's where it runs; on
        the GPU in OP_ROUNDS interleaved rounds (every implementation, then every one again), each
        keeping its best round, as gpuops.autotune times: rows of one algorithm timed a minute
        apart differed by up to 30% on the H100 (bench/NOTES.md), and auto's row is read against
        its candidates' (timed once each, conv2d's auto row, timed first right after autotune's
        own measurements, was 1.5 us over the same kernel's row on a 0.016 ms layer in three
        runs). After the first round a short call runs enough times to fill about a millisecond
        (timing.runs_to_fill: the reflect_pad_backward rows of 0.015-0.024 ms, ten runs a round, had
        auto 1.2-1.7 us over the algorithm it runs through the same call). An implementation
        that refuses the layer (ValueError, e.g. grad_weight v4 on rows
        wider than its shared memory) gets no row. `chose`: the algorithm auto runs, recorded on
        the auto row; `extras`: more fields of a row, by implementation name; `nbytes`: the bytes
        a call moves (a bandwidth op's GB/s)."""
        impls = {f"ours:{name}": fn for name, fn in ours.items()}
        if torch_fn:
            impls["torch"] = torch_fn
        best: dict[str, float] = {}
        refused: set[str] = set()
        if self.gpu:
            self.rounded_ops.add(op)
        rounds = OP_ROUNDS if self.gpu else 1
        for round_ in range(max(rounds, timing.SHORT_ROUNDS) if self.gpu else 1):
            for impl, fn in impls.items():
                if impl in refused or not timing.takes_round(round_, rounds, self.repeat, best.get(impl)):
                    continue
                try:  # after the first round a short call fills about a millisecond (timing.runs_to_fill)
                    ms = self.time(fn, timing.runs_to_fill(self.repeat, best.get(impl)))
                except ValueError:  # an algorithm named for a layer it does not take: no row
                    refused.add(impl)
                    continue
                best[impl] = min(ms, best.get(impl, ms))
        for impl, ms in best.items():
            extra = dict((extras or {}).get(impl.removeprefix("ours:"), {}))
            if impl == "ours:auto" and chose:
                extra["chose"] = chose
            self._record(shape, op, impl, ms, nbytes, flops, extra)

    def copy_bandwidth(self, nbytes: int = 1 << 30) -> Record:
        """Device-to-device (or RAM) copy: the bandwidth ceiling, counting read + write."""
        if not self.gpu:
            nbytes = min(nbytes, 256 << 20)
        src = self.xp.ones(nbytes // 4, dtype=np.float32)
        dst = self.xp.empty_like(src)
        rec = self.add(
            "-",
            "copy",
            "device-to-device" if self.gpu else "numpy.copyto",
            lambda: self.xp.copyto(dst, src),
            nbytes=2 * nbytes,
        )
        return rec

    def run_shape(self, s: Shape) -> None:
        xp, rng = self.xp, np.random.default_rng(0)
        x = xp.asarray(rng.standard_normal((s.N, s.C, s.H, s.W)).astype(np.float32))
        w = xp.asarray(rng.standard_normal((s.M, s.C // s.groups, s.K, s.K)).astype(np.float32))
        g = gpuops.window_geometry(s.H, s.W, s.K, s.stride, s.pad)
        tx = tw = None
        if self.torch is not None:
            dev = "cuda" if self.gpu else "cpu"
            tx = self.torch.as_tensor(gpuops.to_numpy(x), device=dev)
            tw = self.torch.as_tensor(gpuops.to_numpy(w), device=dev)
        F = self.torch.nn.functional if self.torch is not None else None
        if s.conv_only:
            self.run_conv(s, x, w, tx, tw, g)
            return

        # reflect pad by P+2 on every side (the issue's reference setting)
        p = min(s.pad + 2, s.H - 1, s.W - 1)
        out_bytes = 4 * s.N * s.C * (s.H + 2 * p) * (s.W + 2 * p)
        nbytes = x.nbytes + out_bytes
        self.add(s.name, "reflect_pad", "ours", lambda: gpuops.reflect_pad(x, p), nbytes=nbytes, pad=p)
        if F is not None:
            self.add(
                s.name, "reflect_pad", "torch", lambda: F.pad(tx, (p, p, p, p), mode="reflect"), nbytes=nbytes
            )

        # unfold / fold with the conv's geometry
        unf = dict(kernel_size=s.K, padding=s.pad, stride=s.stride)
        cols_bytes = 4 * s.N * s.C * s.K * s.K * g.L
        self.add(s.name, "unfold", "ours", lambda: gpuops.unfold(x, **unf), nbytes=x.nbytes + cols_bytes)
        if F is not None:
            self.add(s.name, "unfold", "torch", lambda: F.unfold(tx, **unf), nbytes=x.nbytes + cols_bytes)
        cols = gpuops.unfold(x, **unf)
        variants = ("auto", "gather", "scatter") if self.gpu else ("auto",)  # auto: the default
        for v in variants:
            self.add(
                s.name,
                "fold",
                f"ours:{v}",
                lambda v=v: gpuops.fold(cols, (s.H, s.W), variant=v, **unf),
                nbytes=cols_bytes + x.nbytes,
            )
        if F is not None:
            tcols = F.unfold(tx, **unf)
            self.add(
                s.name,
                "fold",
                "torch",
                lambda: F.fold(tcols, (s.H, s.W), **unf),
                nbytes=cols_bytes + x.nbytes,
            )

        self.run_conv(s, x, w, tx, tw, g)

    def run_conv(self, s: Shape, x: Any, w: Any, tx: Any, tw: Any, g: Any) -> None:
        """conv2d: our algorithms (fp32, and the tensor-core ones with their error against float64;
        the TF32 pipeline as v7 and v8 too), cuDNN in fp32, TF32, bf16 and fp16, and cuBLAS on
        the unfolded input."""
        F = self.torch.nn.functional if self.torch is not None else None
        unf = dict(kernel_size=s.K, padding=s.pad, stride=s.stride)
        conv = dict(stride=s.stride, padding=s.pad, groups=s.groups)
        plan = gpuops.plan_conv2d(x.shape, w.shape, **conv)
        choice = gpuops.resolve_algorithm(x, w, None, **conv)  # measures once, then cached
        ours = {"auto": lambda: gpuops.conv2d(x, w, algorithm="auto", **conv)}
        extras: dict[str, dict[str, Any]] = {}
        reference = self._float64_reference(tx, tw, conv)
        for algorithm in gpuops.offered_algorithms() if self.gpu else gpuops.ALGORITHMS:
            try:  # v13 and v14 run groups of 32k channels only
                gpuops.plan_conv2d(x.shape, w.shape, **conv, algorithm=algorithm)
            except ValueError:
                continue
            extra = {}
            if algorithm == "im2col" and self.gpu:
                extra = self._im2col_memory(x, w, plan, conv)
            checked = algorithm == "implicit_gemm" or algorithm in SPLIT_ALGORITHMS
            if reference is not None and (checked or PRECISIONS[algorithm] != "fp32"):
                extra["rel_error_vs_float64"] = self._rel_error(
                    gpuops.conv2d(x, w, algorithm=algorithm, **conv), reference
                )
            if algorithm in PIPE_PREFIX or algorithm in HOPPER_ALGORITHMS:  # which version ran
                extra["kernel"] = gpuops.plan_conv2d(
                    x.shape, w.shape, **conv, algorithm=algorithm
                ).launch.kernel
            ours[algorithm] = lambda a=algorithm: gpuops.conv2d(x, w, algorithm=a, **conv)
            extras[algorithm] = extra
        self.add_op(s.name, "conv2d", plan.flops, ours, None, chose=choice, extras=extras)
        if self.gpu:
            self._tf32_versions(s, x, w, plan)
        if F is not None:
            self.add(
                s.name,
                "conv2d",
                "torch:cudnn" if self.gpu else "torch:cpu",
                lambda: F.conv2d(tx, tw, **conv),
                flops=plan.flops,
            )
            if self.gpu:  # cuDNN with TF32, PyTorch's allow_tf32: the peer of our TF32 kernel
                self.torch.backends.cudnn.allow_tf32 = True
                error = (
                    self._rel_error(F.conv2d(tx, tw, **conv), reference) if reference is not None else None
                )
                self.add(
                    s.name,
                    "conv2d",
                    "torch:cudnn_tf32",
                    lambda: F.conv2d(tx, tw, **conv),
                    flops=plan.flops,
                    rel_error_vs_float64=error,
                )
                self.torch.backends.cudnn.allow_tf32 = False
                for dtype in HALF_DTYPES if self.gpu else ():
                    self._cudnn_half(s, tx, tw, conv, plan.flops, dtype, reference)
            if s.groups != 1:  # the unfold + GEMM peers below are for dense layers
                return
            tcols = F.unfold(tx, **unf)
            wmat = tw.reshape(s.M, -1)
            self.add(
                s.name, "conv2d", "torch:gemm-only", lambda: self.torch.matmul(wmat, tcols), flops=plan.flops
            )
            self.add(
                s.name,
                "conv2d",
                "torch:unfold+gemm",
                lambda: self.torch.matmul(wmat, F.unfold(tx, **unf)),
                flops=plan.flops,
            )
            del tcols

    def _tf32_versions(self, s: Shape, x: Any, w: Any, plan: Any) -> None:
        """The TF32 pipeline as each of its versions (v7: 4-byte input copies, v8: 16-byte ones where
        the rows allow, v10: channels-last copies where the channels allow), and the 16-bit ones
        as v9 (v8's gather) and v11 (16-bit channels-last copies), and v12 (Hopper's wgmma on those
        copies), v16 (1x1 layers read as NCHW, no copies) and v17 (windows at stride 1 read as NCHW
        into halo tiles) where the device has it, whichever pipelined_* picks: the measured gain
        of each delta."""
        p = plan.problem
        fits = channels_last_fits(p)
        hopper = fits and sm90a.available(WG_SOURCE)
        versions = [
            ("pipelined_tf32", "v7", dict(wide_copies=False)),
            ("pipelined_tf32", "v8", dict(wide_copies=True)),
        ]
        if fits:
            versions.append(("pipelined_tf32", "v10", dict(channels_last=True, wgmma=False)))
        if hopper:
            versions.append(("pipelined_tf32", "v12", dict(channels_last=True, wgmma=True)))
        if pointwise_fits(p) and sm90a.available(WG_SOURCE):  # v16: what pipelined_tf32 runs there
            versions.append(("pipelined_tf32", "v16", {}))
        if halo_fits(p) and sm90a.available(WG_SOURCE):  # v17 wherever it fits (None: halo_launch)
            versions.append(("pipelined_tf32", "v17", None))
        for algorithm in ("pipelined_bf16", "pipelined_fp16"):
            versions.append((algorithm, "v9", dict(wide_copies=True)))
            if fits:
                versions.append((algorithm, "v11", dict(channels_last=True, wgmma=False)))
            if hopper and wgmma_fits(p, PRECISIONS[algorithm]):
                versions.append((algorithm, "v12", dict(channels_last=True, wgmma=True)))
        for algorithm, version, choice in versions:
            launch = halo_launch(p) if choice is None else pipelined_launch(p, algorithm, **choice)
            call = launch_call(plan.problem, launch)
            impl = f"ours:{algorithm}_{version}"
            self.add(
                s.name, "conv2d", impl, lambda c=call: c(x, w, None), flops=plan.flops, kernel=launch.kernel
            )

    def _cudnn_half(
        self, s: Shape, tx: Any, tw: Any, conv: dict, flops: int, dtype: str, reference: Any
    ) -> None:
        """cuDNN on bf16 / fp16 tensors (what autocast runs, without its casts): fp32 sums inside,
        the output rounded to the 16-bit type."""
        torch = self.torch
        half = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        hx, hw = tx.to(half), tw.to(half)
        F = torch.nn.functional
        error = self._rel_error(F.conv2d(hx, hw, **conv), reference) if reference is not None else None
        impl = f"torch:cudnn_{dtype}"
        self.add(
            s.name, "conv2d", impl, lambda: F.conv2d(hx, hw, **conv), flops=flops, rel_error_vs_float64=error
        )

    def run_backward_shape(self, s: Shape) -> None:
        """The backward pass with the conv's geometry: grad_input per algorithm (and the same
        computation as conv_transpose2d), grad_weight per algorithm, reflect_pad_backward, next to
        PyTorch's autograd kernels (aten.convolution_backward, reflection_pad2d_backward) and
        F.conv_transpose2d measured in the same run."""
        xp, rng = self.xp, np.random.default_rng(1)
        x = xp.asarray(rng.standard_normal((s.N, s.C, s.H, s.W)).astype(np.float32))
        w = xp.asarray(rng.standard_normal((s.M, s.C // s.groups, s.K, s.K)).astype(np.float32))
        conv = dict(stride=s.stride, padding=s.pad, groups=s.groups)
        plan = gpuops.plan_conv2d_backward(
            gpuops.plan_conv2d(x.shape, w.shape, **conv).out_shape, x.shape, w.shape, **conv
        )
        q = plan.problem
        dy = xp.asarray(rng.standard_normal(q.dy_shape).astype(np.float32))
        g = q.geometry
        output_padding = (g.H + 2 * g.pad_top - (g.KH - 1) - 1) % g.stride_h
        torch, F = self.torch, None
        if torch is not None:
            F = torch.nn.functional
            dev = "cuda" if self.gpu else "cpu"
            tx, tw, tdy = (torch.as_tensor(gpuops.to_numpy(a), device=dev) for a in (x, w, dy))
            aten_args = ([s.stride] * 2, [s.pad] * 2, [1, 1], False, [0, 0], s.groups)
        algorithms = ("auto", *gpuops.GRAD_INPUT_ALGORITHMS) if self.gpu else ("auto",)
        grad = torch.ops.aten.convolution_backward if F is not None else None
        # what auto runs (measured once here, then cached per problem, as run_conv does)
        chose_dx = conv_backward.resolve_input_algorithm(dy, w, q)
        chose_dw = conv_backward.resolve_weight_algorithm(dy, x, q)
        self.add_op(
            s.name,
            "conv2d_grad_input",
            q.flops,
            {
                a: lambda a=a: gpuops.conv2d_grad_input(dy, x.shape, w, algorithm=a, **conv)
                for a in algorithms
            },
            grad and (lambda: grad(tdy, tx, tw, None, *aten_args, [True, False, False])),
            chose_dx,
        )
        self.add_op(
            s.name,
            "conv_transpose2d",
            q.flops,
            {
                a: lambda a=a: gpuops.conv_transpose2d(
                    dy, w, None, s.stride, s.pad, output_padding, s.groups, algorithm=a
                )
                for a in algorithms
            },
            F and (lambda: F.conv_transpose2d(tdy, tw, None, s.stride, s.pad, output_padding, s.groups)),
            chose_dx,  # conv_transpose2d is grad_input's computation: its auto runs the same choice
        )
        weight_algorithms = ("auto", *gpuops.GRAD_WEIGHT_ALGORITHMS) if self.gpu else ("auto",)
        if self.gpu and hopper_weight.refusal(q) is None and sm90a.available(hopper_weight.SOURCE):
            weight_algorithms += gpuops.HOPPER_WEIGHT_ALGORITHMS  # grad_weight v2, where it runs
        self.add_op(
            s.name,
            "conv2d_grad_weight",
            q.flops,
            {
                a: lambda a=a: gpuops.conv2d_grad_weight(dy, x, w.shape, algorithm=a, **conv)
                for a in weight_algorithms
            },
            grad and (lambda: grad(tdy, tx, tw, None, *aten_args, [False, True, False])),
            chose_dw,
        )
        # reflect_pad_backward of the forward rows' reflect pad (P+2 on every side)
        p = min(s.pad + 2, s.H - 1, s.W - 1)
        go = xp.asarray(rng.standard_normal((s.N, s.C, s.H + 2 * p, s.W + 2 * p)).astype(np.float32))
        algorithms = ("auto", *gpuops.REFLECT_BACKWARD_ALGORITHMS) if self.gpu else ("auto",)
        ours = {a: (lambda a=a: gpuops.reflect_pad_backward(go, p, algorithm=a)) for a in algorithms}
        pad_torch = None
        if F is not None:
            tgo = torch.as_tensor(gpuops.to_numpy(go), device=tx.device)

            def pad_torch() -> Any:
                return torch.ops.aten.reflection_pad2d_backward(tgo, tx, [p] * 4)

        extras = {a: {"pad": p} for a in algorithms}
        nbytes = go.nbytes + x.nbytes
        chose = resolve_reflect_backward(go, p)
        self.add_op(s.name, "reflect_pad_backward", None, ours, pad_torch, chose, extras, nbytes)

    def _float64_reference(self, tx: Any, tw: Any, conv: dict) -> Any:
        """The layer in float64 (PyTorch on the same device), for the TF32 error; None without torch."""
        if self.torch is None or not self.gpu:
            return None
        return self.torch.nn.functional.conv2d(tx.double(), tw.double(), **conv)

    def _rel_error(self, y: Any, reference: Any) -> float:
        """||y - reference|| / ||reference|| (Frobenius), y from CuPy or PyTorch."""
        y = self.torch.as_tensor(y, device=reference.device).double()
        return float(self.torch.linalg.vector_norm(y - reference) / self.torch.linalg.vector_norm(reference))

    def _im2col_memory(self, x: Any, w: Any, plan: Any, conv: dict) -> dict[str, Any]:
        """Peak extra memory-pool bytes of one im2col call vs the X_unroll bytes of its chunk.

        A memory hook adds up every block the pool hands out during the call and subtracts
        every block returned; the peak of that running total, less the output, is the extra.
        """
        hook = _PeakHook()
        with hook:
            y = gpuops.conv2d(x, w, algorithm="im2col", **conv)
        peak = hook.peak - y.nbytes
        chunk = gpuops.im2col_batch_chunk(plan.problem)
        unroll = chunk * plan.x_unroll_bytes_per_sample
        return {
            "batch_chunk": chunk,
            "x_unroll_bytes": unroll,
            "peak_extra_bytes": int(peak),
            "peak_over_x_unroll": round(peak / unroll, 3),
        }


def _peak_hook_class() -> type:
    from cupy.cuda import memory_hook

    class PeakHook(memory_hook.MemoryHook):
        """Running total and peak of memory-pool allocations while active."""

        name = "PeakHook"

        def __init__(self) -> None:
            self.current = 0
            self.peak = 0

        def malloc_postprocess(
            self, device_id: int, size: int, mem_size: int, mem_ptr: int, pmem_id: int
        ) -> None:
            self.current += mem_size
            self.peak = max(self.peak, self.current)

        def free_postprocess(self, device_id: int, mem_size: int, mem_ptr: int, pmem_id: int) -> None:
            self.current -= mem_size

    return PeakHook


def _PeakHook() -> Any:
    return _peak_hook_class()()


def _import_torch(gpu: bool) -> Any:
    try:
        import torch
    except ImportError:
        return None
    if gpu and not torch.cuda.is_available():
        return None
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch


def add_ratios(records: list[Record]) -> list[dict[str, Any]]:
    """Each record as a dict, with the ratio to its op's peer and to the copy bandwidth."""
    copy = next((r for r in records if r.op == "copy"), None)
    rows = []
    for r in records:
        row = asdict(r)
        peer_name = "torch:cudnn" if r.op == "conv2d" else "torch"
        precision = precision_of(r.impl)  # a tensor-core kernel's peer: cuDNN in its precision
        if r.op == "conv2d" and r.impl.startswith("ours") and precision != "fp32":
            peer_name = f"torch:cudnn_{precision}"
        peer = next(
            (
                p
                for p in records
                if p.shape == r.shape and p.op == r.op and p.impl in (peer_name, "torch:cpu")
            ),
            None,
        )
        if peer is not None and r.impl.startswith("ours"):
            row["speedup_vs_torch"] = round(peer.median_ms / r.median_ms, 3)
        if copy is not None and r.gbps and r.op != "copy":
            row["fraction_of_copy_bw"] = round(r.gbps / copy.gbps, 3)
        rows.append(row)
    return rows


def format_table(rows: Iterable[dict[str, Any]]) -> str:
    head = f"{'shape':<14}{'op':<22}{'impl':<20}{'median ms':>11}{'GB/s':>9}{'TFLOP/s':>9}"
    head += f"{'vs torch':>10}{'of copy':>9}"
    lines = [head, "-" * len(head)]
    for r in rows:

        def fmt(v: Any, spec: str) -> str:
            return format(v, spec) if v is not None else "-"

        lines.append(
            f"{r['shape']:<14}{r['op']:<22}{r['impl']:<20}{r['median_ms']:>11.4f}"
            f"{fmt(r.get('gbps'), '.1f'):>9}{fmt(r.get('tflops'), '.2f'):>9}"
            f"{fmt(r.get('speedup_vs_torch'), '.2f'):>10}{fmt(r.get('fraction_of_copy_bw'), '.2f'):>9}"
        )
    return "\n".join(lines)


def tensor_core_summary(rows: Iterable[dict[str, Any]]) -> str:
    """Issue 27's targets on the GEMM classes, one line a shape: the TF32 pipeline (each version,
    v14 = pixel_rows_tf32 where its layer allows, v16 on 1x1 layers, v17 where it fits) against
    our fp32 auto (target >= 2x) and cuDNN-TF32 (target <= 1.5x its time), the 16-bit kernels
    against cuDNN on 16-bit tensors, and each one's error against float64."""
    ms = {(r["shape"], r["impl"]): r for r in rows if r["op"] == "conv2d"}
    columns = (
        "auto",
        "v5",
        "v7",
        "v8",
        "v10",
        "v12",
        "v14",
        "v16",
        "v17",
        "tf32",
        "cuDNN",
        "x auto",
        "/cuDNN",
        "bf16",
        "/cuDNN",
        "fp16",
        "/cuDNN",
    )
    head = f"{'shape':<14}" + "".join(f"{c:>8}" for c in columns) + "  errors tf32 / bf16 / fp16"
    lines = [
        "ms (lower is better); x auto = our fp32 auto / tf32 (target >= 2); "
        "/cuDNN = ours / cuDNN in the same precision (target <= 1.5)",
        head,
    ]
    for shape in GEMM_CLASSES:

        def t(impl: str, shape: str = shape) -> float | None:
            r = ms.get((shape, impl))
            return None if r is None else r["median_ms"]

        def e(impl: str, shape: str = shape) -> str:
            r = ms.get((shape, impl))
            v = None if r is None else r["extra"].get("rel_error_vs_float64")
            return "-" if v is None else f"{v:.1e}"

        def f(v: float | None, spec: str = ".3f") -> str:
            return "-" if v is None else format(v, spec)

        def ratio(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else a / b

        auto, tf32 = t("ours:auto"), t("ours:pipelined_tf32")
        if auto is None:
            continue
        bf16, fp16 = t("ours:pipelined_bf16"), t("ours:pipelined_fp16")
        lines.append(
            f"{shape:<14}{f(auto):>8}{f(t('ours:implicit_gemm_tf32')):>8}{f(t('ours:pipelined_tf32_v7')):>8}"
            f"{f(t('ours:pipelined_tf32_v8')):>8}{f(t('ours:pipelined_tf32_v10')):>8}"
            f"{f(t('ours:pipelined_tf32_v12')):>8}{f(t('ours:pixel_rows_tf32')):>8}"
            f"{f(t('ours:pipelined_tf32_v16')):>8}{f(t('ours:pipelined_tf32_v17')):>8}"
            f"{f(tf32):>8}{f(t('torch:cudnn_tf32')):>8}"
            f"{f(ratio(auto, tf32), '.2f'):>8}{f(ratio(tf32, t('torch:cudnn_tf32')), '.2f'):>8}"
            f"{f(bf16):>8}{f(ratio(bf16, t('torch:cudnn_bf16')), '.2f'):>8}"
            f"{f(fp16):>8}{f(ratio(fp16, t('torch:cudnn_fp16')), '.2f'):>8}"
            f"  {e('ours:pipelined_tf32')} / {e('ours:pipelined_bf16')} / {e('ours:pipelined_fp16')}"
            f" (cuDNN {e('torch:cudnn_tf32')} / {e('torch:cudnn_bf16')} / {e('torch:cudnn_fp16')})"
        )
    return "\n".join(lines)


def fp32_summary(rows: Iterable[dict[str, Any]]) -> str:
    """fp32 on the GEMM classes, one line a shape: our auto (and what it ran), the Hopper
    versions it measures, v13 (pipelined_3xtf32) and v14 (pixel_rows_3xtf32), where they ran,
    and cuDNN fp32; auto / cuDNN is issue 27's fp32 target (<= 1.1)."""
    ms = {(r["shape"], r["impl"]): r for r in rows if r["op"] == "conv2d"}
    columns = "".join(f"{c:>8}" for c in ("auto", "v13", "v14", "cuDNN", "/cuDNN"))
    lines = [
        "ms (lower is better); /cuDNN = our fp32 auto / cuDNN fp32 (target <= 1.1)",
        f"{'shape':<14}{columns}  auto ran",
    ]
    for shape in GEMM_CLASSES:
        auto = ms.get((shape, "ours:auto"))
        if auto is None:
            continue
        times = [
            None if (r := ms.get((shape, impl))) is None else r["median_ms"]
            for impl in ("ours:auto", "ours:pipelined_3xtf32", "ours:pixel_rows_3xtf32", "torch:cudnn")
        ]
        ratio = None if times[3] is None else times[0] / times[3]
        cells = [*times, ratio]
        lines.append(
            f"{shape:<14}"
            + "".join("       -" if v is None else f"{v:>8.3f}" for v in cells)
            + f"  {auto['extra'].get('chose', '-')}"
        )
    return "\n".join(lines)


BACKWARD_WIDTHS = (9, 24, 9)  # backward_summary's columns: auto, fastest (time and name), torch


def _backward_cells(cells: Iterable[str]) -> str:
    return "".join(f" {c:>{BACKWARD_WIDTHS[i % 3]}}" for i, c in enumerate(cells))  # a space even when full


def backward_summary(rows: Iterable[dict[str, Any]]) -> str:
    """Issue 27's backward target, one line a shape: our auto for grad_input and grad_weight, the
    fastest algorithm measured for each (auto should be within 5% of it), PyTorch's autograd
    kernels, both gradients together against PyTorch's (target <= 1.25x its time), and what auto
    ran for each (where the report says)."""
    ms: dict[tuple[str, str], dict[str, float]] = {}
    ran: dict[tuple[str, str], str] = {}
    for r in rows:
        if r["op"] in ("conv2d_grad_input", "conv2d_grad_weight"):
            ms.setdefault((r["shape"], r["op"]), {})[r["impl"]] = r["median_ms"]
            if r["impl"] == "ours:auto":
                ran[r["shape"], r["op"]] = r.get("extra", {}).get("chose", "-")
    columns = ("dx auto", "fastest", "torch", "dw auto", "fastest", "torch")
    lines = [
        "ms (lower is better); fastest = our fastest algorithm measured; both/torch = (dx + dw auto) / "
        "PyTorch's (target <= 1.25)",
        f"{'shape':<14}{_backward_cells(columns)}  both/torch  auto ran (dx, dw)",
    ]
    for shape in dict.fromkeys(shape for shape, _ in ms):
        cells, autos, peers = [], [], []
        for op in ("conv2d_grad_input", "conv2d_grad_weight"):
            times = ms.get((shape, op), {})
            named = {k[5:]: v for k, v in times.items() if k.startswith("ours:") and k != "ours:auto"}
            best = min(named, key=named.__getitem__, default=None)
            autos.append(times.get("ours:auto"))
            peers.append(times.get("torch"))
            cells += [
                "-" if autos[-1] is None else f"{autos[-1]:.3f}",
                "-" if best is None else f"{named[best]:.3f} {best}",
                "-" if peers[-1] is None else f"{peers[-1]:.3f}",
            ]
        known = None not in autos + peers
        both = f"{sum(autos) / sum(peers):.2f}" if known else "-"
        choices = ", ".join(ran.get((shape, op), "-") for op in ("conv2d_grad_input", "conv2d_grad_weight"))
        lines.append(f"{shape:<14}{_backward_cells(cells)}{both:>12}  {choices}")
    return "\n".join(lines)


def tensor_core_sweep(shapes: Iterable[Shape], repeat: int = 10) -> str:
    """The TF32 pipeline on each shape with every block tile and k split of interest (the one
    pipelined_splits picks, none, and twice and half the pick), next to cuDNN-TF32: the
    measurements behind pipelined_tile and pipelined_splits. One line per (shape, tile, split),
    in the version pipelined_tf32 runs there (v10 where the channels allow), and v12's tiles
    where the device has wgmma."""
    import cupy
    import torch

    from gpuops.conv2d import (
        PIPE_SPLIT_STAGES,
        PIPE_TILES,
        WG_SPLIT_STAGES,
        WG_TILES,
        check_conv2d,
        pipelined_splits,
    )

    F = torch.nn.functional
    torch.backends.cudnn.benchmark = True
    head = ("shape", "tile", "splits", "ms", "TFLOP/s")
    lines = [
        f"{head[0]:<14}" + "".join(f"{h:>9}" for h in head[1:]) + f"{'cuDNN-TF32':>11}{'x cuDNN':>9}  kernel"
    ]
    for s in shapes:
        rng = np.random.default_rng(0)
        x = cupy.asarray(rng.standard_normal((s.N, s.C, s.H, s.W)).astype(np.float32))
        w = cupy.asarray(rng.standard_normal((s.M, s.C // s.groups, s.K, s.K)).astype(np.float32))
        conv = dict(stride=s.stride, padding=s.pad, groups=s.groups)
        p = check_conv2d(x.shape, w.shape, None, s.stride, s.pad, 1, s.groups)
        torch.backends.cudnn.allow_tf32 = True
        tx, tw = torch.as_tensor(x, device="cuda"), torch.as_tensor(w, device="cuda")
        peer = measure(
            lambda tx=tx, tw=tw, conv=conv: F.conv2d(tx, tw, **conv), gpu=True, warmup=3, repeat=repeat
        ).median_ms
        torch.backends.cudnn.allow_tf32 = False
        hopper = channels_last_fits(p) and sm90a.available(WG_SOURCE)
        tiles = [(t, False) for t in PIPE_TILES] + [(t, True) for t in WG_TILES if hopper]
        for tile, wgmma in tiles:
            blocks = -(-p.N * p.geometry.L // tile[1]) * p.groups * -(-(p.M // p.groups) // tile[0])
            pick = pipelined_splits(p, blocks, split_stages=WG_SPLIT_STAGES if wgmma else PIPE_SPLIT_STAGES)
            for splits in sorted({1, pick, 2 * pick, max(1, pick // 2)}):
                choice = dict(channels_last=True, wgmma=True) if wgmma else dict(wgmma=False)
                launch = pipelined_launch(p, "pipelined_tf32", tile=tile, k_splits=splits, **choice)
                call = launch_call(p, launch)
                ms = measure(
                    lambda c=call, x=x, w=w: c(x, w, None), gpu=True, warmup=3, repeat=repeat
                ).median_ms
                cells = (f"{tile[0]}x{tile[1]}", launch.grid[2], f"{ms:.3f}", f"{p.flops / ms / 1e9:.1f}")
                lines.append(
                    f"{s.name:<14}"
                    + "".join(f"{c:>9}" for c in cells)
                    + f"{peer:>11.3f}{ms / peer:>9.2f}  {launch.kernel}"
                )
    return "\n".join(lines)


PARTS = ("forward", "backward")


def run(
    shapes: Iterable[Shape],
    repeat: int = 20,
    progress: Callable[[float, str], None] | None = None,
    parts: Iterable[str] = ("forward",),
    commit: str | None = None,
) -> dict[str, Any]:
    """Run the suite; `progress(fraction, text)` is called between shapes (the app's bar).
    parts: "forward" (reflect_pad, unfold, fold, conv2d) and / or "backward" (the gradients,
    conv_transpose2d, reflect_pad_backward). The command runs both by default; callers of
    run() (the Benchmarks page) get the forward rows unless they ask for more.
    commit: what the report names as the code measured (default: this checkout's, see git_commit)."""
    parts = tuple(parts)
    suite = Suite(repeat=repeat)
    shapes = list(shapes)
    started = time.time()
    if progress:
        progress(0.0, "copy bandwidth")
    # PyTorch's peers time inference; no_grad only here (set globally, it stayed off for the
    # caller's thread afterwards: a test process's autograd checks saw no graph)
    with contextlib.nullcontext() if suite.torch is None else suite.torch.no_grad():
        suite.copy_bandwidth()
        for i, s in enumerate(shapes):
            if progress:
                progress(i / len(shapes), s.name)
            if "forward" in parts:
                suite.run_shape(s)
            if "backward" in parts:
                suite.run_backward_shape(s)
    if progress:
        progress(1.0, "done")
    torch = suite.torch
    cudnn = None if torch is None or not suite.gpu else torch.backends.cudnn.version()
    info = suite.info
    return {
        "schema": SCHEMA,
        "commit": commit or git_commit(),
        "device": info.device if suite.gpu else f"CPU (NumPy), {platform.machine()}, {os.cpu_count()} cores",
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cupy": info.cupy_version,
            "cuda": info.cuda_runtime,
            "torch": None if torch is None else torch.__version__,
            "cudnn": cudnn_text(cudnn),
        },
        "backend": info.as_dict(),
        "torch": None if torch is None else torch.__version__,
        "cudnn": cudnn,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "seconds": round(time.time() - started, 1),
        "repeat": repeat,
        "timing": TIMING if suite.gpu else "perf_counter",
        "rounds": (
            {
                "count": OP_ROUNDS,
                "ops": sorted(suite.rounded_ops),
                "fill_ms": timing.SHORT_ROUND_MS,
                "short_rounds": timing.SHORT_ROUNDS,
            }
            if suite.rounded_ops
            else None
        ),
        "shapes": [asdict(s) for s in shapes],
        "results": add_ratios(suite.records),
    }


def git_commit() -> str:
    """The commit of this checkout ("abc1234", "+" when gpuops/ or bench/ has uncommitted changes),
    or "unknown" outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=7", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "gpuops", "bench"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if head.returncode != 0 or not head.stdout.strip():
        return "unknown"
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shapes",
        nargs="*",
        choices=sorted(ALL_SHAPES),
        help="default: the standard shapes and the workload classes on the GPU, cpu_image1024 on the CPU",
    )
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument(
        "--parts",
        nargs="*",
        choices=PARTS,
        default=list(PARTS),
        help="forward ops, backward ops (default: both)",
    )
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    parser.add_argument(
        "--sweep", action="store_true", help="only the TF32 pipeline's tiles and k splits on the shapes (GPU)"
    )
    parser.add_argument(
        "--commit", default=None, help="the commit measured, where this tree is not a git checkout"
    )
    parser.add_argument(
        "--no-pin", action="store_true", help="do not pin to one core (the GPU default: bench.pin_core)"
    )
    args = parser.parse_args(argv)
    gpu = gpuops.backend_info().gpu
    pinned = None if args.no_pin or not gpu else pin_to_fastest_core(gpu_launch_probe())
    if args.sweep:
        print(tensor_core_sweep([ALL_SHAPES[n] for n in args.shapes or GEMM_CLASSES], repeat=args.repeat))
        return 0
    names = args.shapes or [s.name for s in (STANDARD_SHAPES + CLASS_SHAPES if gpu else CPU_SHAPES)]
    report = run([ALL_SHAPES[n] for n in names], repeat=args.repeat, parts=args.parts, commit=args.commit)
    report["host_core"] = pinned
    if pinned:
        print(
            f"# pinned to core {pinned['core']} of {pinned['cores']}: a launch {pinned['probe_us']} us "
            f"(slowest core {pinned['slowest_us']} us)"
        )
    print(f"# {gpuops.backend_info().label()}; torch {report['torch']}")
    print(format_table(report["results"]))
    if any(s in names for s in GEMM_CLASSES) and "forward" in args.parts:
        print(tensor_core_summary(report["results"]))
        print(fp32_summary(report["results"]))
    if "backward" in args.parts:
        print(backward_summary(report["results"]))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
