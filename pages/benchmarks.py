"""Benchmarks: run the suite on this machine's backend and compare with the peers measured alongside."""

import json

import numpy as np
import pandas as pd
import streamlit as st

import gpuops
from gpuops import bench
from ui.common import backend_name, figure, gpu_lock, shown_errors
from viz.charts import grouped_bars, lines

st.title("Benchmarks")
info = gpuops.backend_info()
st.caption(f"Everything is measured on **{backend_name()}** in this run: medians after warm-up "
           f"({'CUDA events' if info.gpu else 'perf_counter'}). Peers (PyTorch, cuDNN, cuBLAS, a plain copy) "
           "run in the same session, so ratios compare like with like.")  # fmt: skip

default = [s.name for s in (bench.STANDARD_SHAPES if info.gpu else bench.CPU_SHAPES)]
shapes = st.multiselect("Shapes (N, C, H, W, M, K, stride, pad)", list(bench.ALL_SHAPES), default=default,
                        format_func=lambda n: f"{n} {tuple(v for k, v in vars(bench.ALL_SHAPES[n]).items() if k != 'name')}")  # fmt: skip
if not info.gpu and any(s in ("resnet56", "stride2", "image2048_k7") for s in shapes):
    st.warning("On the CPU the large standard shapes take a minute or more each.")
repeat = st.slider("Timed runs per measurement", 3, 50, 10 if not info.gpu else 20)

if st.button("▶ Run the benchmark", type="primary", disabled=not shapes):
    lock = gpu_lock()
    if not lock.acquire(blocking=False):
        st.warning("Another session is running a benchmark on this machine; try again in a moment.")
    else:
        try:
            bar = st.progress(0.0, text="starting")
            with shown_errors("The benchmark"):
                st.session_state["bench_report"] = bench.run(
                    [bench.ALL_SHAPES[n] for n in shapes], repeat=repeat,
                    progress=lambda f, text: bar.progress(min(1.0, f), text=f"measuring {text}"),
                )  # fmt: skip
        finally:
            lock.release()

report = st.session_state.get("bench_report")
if report is None:
    st.info("Press **Run the benchmark** to measure. Results from the project's H100 run are in "
            "`bench/results/` and the README.")  # fmt: skip
else:
    rows = pd.DataFrame(report["results"])
    st.subheader("Results")
    st.dataframe(rows.drop(columns=["extra"]), hide_index=True)
    d1, d2 = st.columns(2)
    d1.download_button("Download CSV", rows.to_csv(index=False), "conv_explorer_bench.csv", "text/csv")
    d2.download_button(
        "Download JSON", json.dumps(report, indent=1), "conv_explorer_bench.json", "application/json"
    )

    table = rows[rows["op"] != "copy"]
    shape_names = list(dict.fromkeys(table["shape"]))

    def series(op: str, column: str) -> dict[str, list]:
        sub = table[table["op"] == op]
        return {impl: [sub[(sub["shape"] == s) & (sub["impl"] == impl)][column].squeeze() if
                       ((sub["shape"] == s) & (sub["impl"] == impl)).any() else None for s in shape_names]
                for impl in dict.fromkeys(sub["impl"])}  # fmt: skip

    figure(grouped_bars(shape_names, series("conv2d", "median_ms"), "conv2d runtime per algorithm and shape",
                        "median ms (log scale)", log=True), "bench_conv_ms",
           "Lower is better. torch:cudnn is the vendor library; torch:gemm-only is the GEMM alone on a ready X_unroll.")  # fmt: skip
    figure(grouped_bars(shape_names, series("conv2d", "tflops"), "conv2d arithmetic rate", "TFLOP/s"), "bench_conv_tflops",
           "2·N·M·H_out·W_out·C·K² operations over the median time.")  # fmt: skip
    copy = rows[rows["op"] == "copy"]
    copy_bw = float(copy["gbps"].iloc[0]) if len(copy) else None
    for op in ("reflect_pad", "unfold", "fold"):
        figure(grouped_bars(shape_names, series(op, "gbps"), f"{op}: achieved bandwidth", "GB/s (read + written)",
                            reference=copy_bw, reference_label=f"copy {copy_bw:.0f} GB/s" if copy_bw else ""),
               f"bench_{op}_gbps", "The dashed line is a plain device copy measured in this run: the practical ceiling "
               "for memory-bound kernels.")  # fmt: skip

st.header("Time vs image size")
st.caption("3 x 3 convolution of an RGB image into 16 maps, stride 1, padding 1, each algorithm.")
if st.button("Run the size sweep"):
    lock = gpu_lock()
    if not lock.acquire(blocking=False):
        st.warning("Another session is measuring on this machine; try again in a moment.")
    else:
        try:
            sizes = [64, 128, 256, 512, 1024] + ([2048] if info.gpu else [])
            result = {a: [] for a in gpuops.ALGORITHMS}
            bar = st.progress(0.0, text="sweeping")
            rng = np.random.default_rng(0)
            w = gpuops.asarray(rng.standard_normal((16, 3, 3, 3)).astype(np.float32))
            for i, s in enumerate(sizes):
                x = gpuops.asarray(rng.random((1, 3, s, s), dtype=np.float32))
                for a in gpuops.ALGORITHMS:
                    t = bench.measure(lambda a=a, x=x: gpuops.conv2d(x, w, padding=1, algorithm=a), gpu=info.gpu, warmup=2,
                                      repeat=5, max_seconds=1.0)  # fmt: skip
                    result[a].append(t.median_ms)
                bar.progress((i + 1) / len(sizes), text=f"{s} x {s}")
            st.session_state["sweep"] = (sizes, result)
        finally:
            lock.release()
if "sweep" in st.session_state:
    sizes, result = st.session_state["sweep"]
    figure(lines(sizes, result, "conv2d time vs image size", "image side (pixels)", "median ms (log)", log_y=True),
           "bench_sweep", "Work grows with H x W; small images are dominated by launch overhead on the GPU.")  # fmt: skip
