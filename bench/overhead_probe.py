"""Where the time of a memory-bound call goes: Python, launch, or the kernel.

Run on the device machine: `python3 bench/overhead_probe.py [--out DIR]`. For reflect_pad,
unfold and fold on the standard shapes it measures, in one process:
- per call, as the benchmark does (CUDA events around one call, Python included);
- kernel only: 20 launches on preallocated buffers captured in a CUDA graph, replayed
  (the launch gaps shrink to the GPU's own), ours and PyTorch's alike;
- a device-to-device copy of the same bytes, timed the same way;
- host time per call on the small shape (no synchronisation), and its parts.
It also checks the float4 reflect kernel against the scalar one (must be equal, bit for bit).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import cupy
import numpy as np
import torch
from cupyx.profiler import benchmark

import gpuops
from gpuops import cuda_kernels, reflect
from gpuops.bench import STANDARD_SHAPES
from gpuops.unfold import fold_plan, unfold_plan

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
F = torch.nn.functional
REPS = 20


def per_call_ms(fn) -> float:
    return float(np.median(benchmark(fn, n_warmup=10, n_repeat=200).gpu_times[0]) * 1e3)


def cupy_graph_ms(launch) -> float:
    """Median per-launch time of REPS launches captured in one graph."""
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        launch()
        s.synchronize()
        s.begin_capture()
        for _ in range(REPS):
            launch()
        graph = s.end_capture()
        graph.launch(s)
        s.synchronize()
        times = []
        for _ in range(30):
            e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
            e0.record(s)
            graph.launch(s)
            e1.record(s)
            e1.synchronize()
            times.append(cupy.cuda.get_elapsed_time(e0, e1) / REPS)
    return statistics.median(times)


def torch_graph_ms(fn) -> float:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(REPS):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(30):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        graph.replay()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) / REPS)
    del graph
    return statistics.median(times)


def host_us(fn, n: int = 2000) -> float:
    """Host time per call without synchronisation (the GPU keeps up on a small shape)."""
    for _ in range(50):
        fn()
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for i in range(n):
        fn()
        if i % 200 == 199:
            cupy.cuda.Device().synchronize()
    cupy.cuda.Device().synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def launch_of(plan, src, dst):
    return lambda: plan(src, dst)


def streaming_variant(plan, filename: str, old: str, new: str):
    """The same launch of a kernel whose output store is rewritten (old -> new in its source)."""
    text = cuda_kernels.source(filename)
    assert old in text, old
    options = ("-std=c++17", f"-I{cuda_kernels.KERNEL_DIR}")
    kernel = cupy.RawModule(code=text.replace(old, new), options=options).get_function(plan.kernel.name)
    return cuda_kernels.PackedLaunch(kernel, plan.grid, plan.block, plan.scalars)


REFLECT_STORE = ("dst4[q] = v;", "__stcs(dst4 + q, v);")


def reflect_plan(x, p: int):
    H, W = x.shape[-2:]
    Ho, Wo = H + 2 * p, W + 2 * p
    rows = x.size // (H * W) * Ho
    plan = cuda_kernels.row_plan(reflect.SOURCE, "reflect_pad2d", rows, max(1, Wo // 4), H, W, Ho, Wo, p, p)
    return plan, (*x.shape[:-2], Ho, Wo)


def check_reflect(rng) -> int:
    """The float4 kernel (and its streaming-store twin) equal PyTorch on odd shapes and pads."""
    cases = 0
    for shape in [(1, 1, 5, 7), (2, 3, 17, 33), (1, 2, 64, 61), (3, 1, 9, 130), (1, 1, 2, 2)]:
        for pads in [1, 2, 3]:
            x = cupy.asarray(rng.standard_normal(shape).astype(np.float32))
            p = min(pads, shape[-1] - 1, shape[-2] - 1)
            outs = []
            plan, out_shape = reflect_plan(x, p)
            for launch in (plan, streaming_variant(plan, reflect.SOURCE, *REFLECT_STORE)):
                y = cupy.full(out_shape, np.nan, dtype=np.float32)
                launch(x, y)
                outs.append(cupy.asnumpy(y))
            ref = F.pad(torch.as_tensor(cupy.asnumpy(x)), (p, p, p, p), mode="reflect").numpy()
            assert np.array_equal(outs[0], ref), ("float4", shape, p)
            assert np.array_equal(outs[1], ref), ("streaming", shape, p)
            cases += 1
    return cases


def probe_shape(s, rng) -> list[dict]:
    """Per-call and kernel-only times of reflect_pad, unfold and both folds on one shape."""
    rows = []
    x = cupy.asarray(rng.standard_normal((s.N, s.C, s.H, s.W)).astype(np.float32))
    tx = torch.as_tensor(cupy.asnumpy(x), device="cuda")
    p = s.pad + 2
    nbytes = x.nbytes + 4 * s.N * s.C * (s.H + 2 * p) * (s.W + 2 * p)
    flat_src = cupy.empty(nbytes // 8, dtype=np.float32)
    flat_dst = cupy.empty_like(flat_src)
    row = {"shape": s.name, "op": "reflect_pad", "MB": nbytes / 1e6}
    row["copy_same_bytes_graph_ms"] = cupy_graph_ms(lambda: cupy.copyto(flat_dst, flat_src))
    plan, out_shape = reflect_plan(x, p)
    y = cupy.empty(out_shape, dtype=np.float32)
    row["ours_graph_ms"] = cupy_graph_ms(launch_of(plan, x, y))
    row["ours_stcs_graph_ms"] = cupy_graph_ms(
        launch_of(streaming_variant(plan, reflect.SOURCE, *REFLECT_STORE), x, y)
    )
    row["ours_call_ms"] = per_call_ms(lambda: gpuops.reflect_pad(x, p))
    rows_total = int(plan.scalars[0])
    for cap in (1024, 16384, 1 << 30):  # the row kernels' grid cap is 4096 blocks
        blocks = max(1, min(cap, -(-rows_total // plan.block[1])))
        variant = cuda_kernels.PackedLaunch(plan.kernel, (blocks, 1, 1), plan.block, plan.scalars)
        row[f"cap{min(cap, 99999)}_graph_ms"] = cupy_graph_ms(launch_of(variant, x, y))
    row["torch_call_ms"] = per_call_ms(lambda: F.pad(tx, (p, p, p, p), mode="reflect"))
    row["torch_graph_ms"] = torch_graph_ms(lambda: F.pad(tx, (p, p, p, p), mode="reflect"))
    rows.append(row)
    # unfold / fold
    unf = dict(kernel_size=s.K, padding=s.pad, stride=s.stride)
    g = gpuops.window_geometry(s.H, s.W, s.K, s.stride, s.pad)
    cols = gpuops.unfold(x, **unf)
    tcols = F.unfold(tx, **unf)
    nbytes = x.nbytes + cols.nbytes
    row = {"shape": s.name, "op": "unfold", "MB": nbytes / 1e6}
    row["ours_call_ms"] = per_call_ms(lambda: gpuops.unfold(x, **unf))
    uplan = unfold_plan(g, cols.size)
    row["ours_graph_ms"] = cupy_graph_ms(launch_of(uplan, x, cols))
    row["streaming_stores"] = int(uplan.scalars[-1])
    stcs = cuda_kernels.PackedLaunch(uplan.kernel, uplan.grid, uplan.block,
                                     (*uplan.scalars[:-1], np.int32(1 - int(uplan.scalars[-1]))))  # fmt: skip
    row["ours_other_store_graph_ms"] = cupy_graph_ms(launch_of(stcs, x, cols))
    if s.name == "image2048_k7":
        row["memset_same_output_graph_ms"] = cupy_graph_ms(lambda: cols.fill(0))
        uplan(x, cols)
        ref = cols.copy()
        cols.fill(np.nan)
        stcs(x, cols)
        assert bool(cupy.array_equal(cols, ref)), "streaming unfold differs"
    row["torch_call_ms"] = per_call_ms(lambda: F.unfold(tx, **unf))
    row["torch_graph_ms"] = torch_graph_ms(lambda: F.unfold(tx, **unf))
    rows.append(row)
    for v in ("gather", "scatter"):
        row = {"shape": s.name, "op": f"fold:{v}", "MB": nbytes / 1e6}
        row["ours_call_ms"] = per_call_ms(lambda v=v: gpuops.fold(cols, (s.H, s.W), variant=v, **unf))
        y = cupy.zeros(x.shape, dtype=np.float32)
        kern = launch_of(fold_plan(cols.size, y.size, g, v), cols, y)
        # kernel only; scatter's zeroing is a memset in the graph, as in a real call
        zero_then = lambda y=y, kern=kern: (y.fill(0), kern())  # noqa: E731
        row["ours_graph_ms"] = cupy_graph_ms(zero_then if v == "scatter" else kern)
        row["torch_call_ms"] = per_call_ms(lambda: F.fold(tcols, (s.H, s.W), **unf))
        row["torch_graph_ms"] = torch_graph_ms(lambda: F.fold(tcols, (s.H, s.W), **unf))
        rows.append(row)
    return rows


def probe_conv(s, rng) -> dict:
    """Per-call times of our conv algorithms next to cuDNN, the implicit GEMM's error vs float64,
    and a 64-pixel-tile variant of the implicit GEMM (compiled from the same source)."""
    from gpuops import conv

    x = cupy.asarray(rng.standard_normal((s.N, s.C, s.H, s.W)).astype(np.float32))
    w = cupy.asarray(rng.standard_normal((s.M, s.C, s.K, s.K)).astype(np.float32))
    tx, tw = torch.as_tensor(x, device="cuda"), torch.as_tensor(w, device="cuda")
    kw = dict(stride=s.stride, padding=s.pad)
    row = {"shape": s.name, "op": "conv2d"}
    for a in ("implicit_gemm", "tiled", "im2col"):
        row[f"{a}_call_ms"] = per_call_ms(lambda a=a: gpuops.conv2d(x, w, algorithm=a, **kw))
    row["cudnn_call_ms"] = per_call_ms(lambda: F.conv2d(tx, tw, **kw))
    ref = F.conv2d(tx.double(), tw.double(), **kw)
    got = torch.as_tensor(gpuops.conv2d(x, w, algorithm="implicit_gemm", **kw), device="cuda").double()
    row["implicit_rel_err"] = float((got - ref).norm() / ref.norm())
    plan = gpuops.plan_conv2d(x.shape, w.shape, algorithm="implicit_gemm", **kw)
    launch, args = conv._launch_and_args(plan)
    kernel = cuda_kernels.function("conv2d.cu", "conv2d_implicit_gemm")
    row["attributes"] = {
        k: kernel.attributes[k] for k in ("num_regs", "local_size_bytes", "shared_size_bytes")
    }
    y = cupy.empty(plan.out_shape, dtype=np.float32)
    text = cuda_kernels.source("conv2d.cu")
    old = "__launch_bounds__(IG_THREADS) conv2d_implicit_gemm"
    assert old in text
    for per_sm in (3, 4):  # cap registers so that this many blocks fit on an SM
        code = text.replace(old, f"__launch_bounds__(IG_THREADS, {per_sm}) conv2d_implicit_gemm")
        options = ("-std=c++17", f"-I{cuda_kernels.KERNEL_DIR}")
        variant = cupy.RawModule(code=code, options=options).get_function("conv2d_implicit_gemm")
        row[f"bounds{per_sm}_regs"] = variant.attributes["num_regs"]
        row[f"bounds{per_sm}_spill"] = variant.attributes["local_size_bytes"]
        row[f"bounds{per_sm}_kernel_ms"] = per_call_ms(
            lambda v=variant: v(launch.grid, launch.block, (x, w, conv.NULL, y, *args))
        )
        got = torch.as_tensor(y, device="cuda").double()
        row[f"bounds{per_sm}_rel_err"] = float((got - ref).norm() / ref.norm())
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print("reflect (plain and streaming stores) == torch on", check_reflect(rng), "cases")
    rows = [probe_conv(s, rng) for s in STANDARD_SHAPES]
    for r in rows:
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    rows += [row for s in STANDARD_SHAPES for row in probe_shape(s, rng)]

    # host-side cost on the small shape
    s = STANDARD_SHAPES[0]
    x = cupy.asarray(rng.standard_normal((s.N, s.C, s.H, s.W)).astype(np.float32))
    tx = torch.as_tensor(cupy.asnumpy(x), device="cuda")
    plan, out_shape = reflect_plan(x, 3)
    y = cupy.empty(out_shape, dtype=np.float32)
    kernel, grid, block, scalars = plan.kernel, plan.grid, plan.block, plan.scalars
    host = {
        "gpuops.reflect_pad": host_us(lambda: gpuops.reflect_pad(x, 3)),
        "cupy.empty": host_us(lambda: cupy.empty(out_shape, dtype=np.float32)),
        "kernel launch (RawKernel call)": host_us(lambda: kernel(grid, block, (x, y, *scalars))),
        "kernel launch (PackedLaunch)": host_us(lambda: plan(x, y)),
        "ReadyCalls.get": host_us(lambda: reflect._ready.get(x, (3,))),
        "torch F.pad": host_us(lambda: F.pad(tx, (3, 3, 3, 3), mode="reflect")),
        "gpuops.unfold": host_us(lambda: gpuops.unfold(x, 3, padding=1)),
        "torch F.unfold": host_us(lambda: F.unfold(tx, 3, padding=1)),
    }
    print("kernel object type:", type(kernel))
    print("\nhost microseconds per call (image512):")
    for k, v in host.items():
        print(f"  {k:<34}{v:8.2f}")
    print()
    keys = sorted({k for r in rows for k in r if k.endswith("_ms")})
    for r in rows[len(STANDARD_SHAPES) :]:
        print(f"{r['shape']:<13}{r['op']:<13}{r['MB']:8.1f} MB  "
              + "  ".join(f"{k[:-3]}={r[k]:.4f}" for k in keys if k in r))  # fmt: skip
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "overhead_probe.json").write_text(json.dumps({"rows": rows, "host_us": host}, indent=1))


if __name__ == "__main__":
    main()
