"""The Benchmarks page through streamlit.testing.v1.AppTest (CPU backend): the committed H100 runs
shown at once with the values of their JSON files, only measured peers named, linear axes unless
the range demands log, the sweep's spread, auto's choice, the run on this machine, URL settings.

Expected values are computed here from the JSON files with plain loops, not with bench.reports.
"""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from gpuops.conv2d import SPLIT_ALGORITHMS
from tests.support.apptest import AppTest, open_page

ROOT = Path(__file__).resolve().parents[2]
PAGE = "pages/benchmarks.py"
RESULTS = ROOT / "bench" / "results"


pytestmark = pytest.mark.usefixtures("numpy_backend")


def app(query: dict[str, str] | None = None, state: dict | None = None) -> AppTest:
    return open_page(PAGE, query, state)


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def chart(at: AppTest, title_start: str) -> dict:
    found = [c for c in charts(at) if c["layout"]["title"]["text"].startswith(title_start)]
    assert found, f"no chart titled {title_start!r}: {[c['layout']['title']['text'] for c in charts(at)]}"
    return found[0]


def table_with(at: AppTest, column: str, index: int = 0):
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) > index, f"no table with column {column!r}"
    return found[index]


def bench_files() -> dict[str, dict]:
    out = {}
    for path in RESULTS.glob("*.json"):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and isinstance(data.get("results"), list):
            out[path.stem] = data
    return out


def started(data: dict) -> datetime:
    return datetime.strptime(data["started"], "%Y-%m-%dT%H:%M:%SZ")


def gpu_groups() -> list[list[str]]:
    """The GPU runs grouped: each with every run of the same device started within 10 minutes of
    it, oldest first; the groups newest first."""
    files = {k: v for k, v in bench_files().items() if v["backend"].get("gpu")}
    groups = []
    for name in sorted(files, key=lambda k: started(files[k]), reverse=True):
        if any(name in g for g in groups):
            continue
        same = [
            k
            for k, v in files.items()
            if v["backend"]["device"] == files[name]["backend"]["device"]
            and abs((started(v) - started(files[name])).total_seconds()) <= 600
        ]
        groups.append(sorted(same, key=lambda k: started(files[k])))
    return groups


def newest_gpu_pair() -> list[str]:
    """The page's first view: the newest GPU runs that timed conv2d (a backward-only group is
    not it), the newest run of them and its companions."""
    files = bench_files()
    timed_conv2d = (g for g in gpu_groups() if any(r["op"] == "conv2d" for r in files[g[0]]["results"]))
    return next(timed_conv2d, gpu_groups()[0])


def newest_two_runs() -> list[str]:
    """The newest group of two runs of the whole suite (every operation, not one op's kernels):
    what the spread between runs and every chart kind are shown on."""
    files = bench_files()
    ops = {g[0]: {r["op"] for r in files[g[0]]["results"]} for g in gpu_groups()}
    return next(g for g in gpu_groups() if len(g) == 2 and len(ops[g[0]]) > 2 and "conv2d" in ops[g[0]])


def medians(data: dict) -> dict[tuple[str, str, str], float]:
    return {(r["shape"], r["op"], r["impl"]): r["median_ms"] for r in data["results"]}


def test_committed_results_appear_without_pressing_run():
    at = app()
    newest = newest_gpu_pair()
    first = bench_files()[newest[0]]
    # labelled with device, versions and date
    label = next(m.value for m in at.markdown if first["backend"]["device"] in m.value)
    v = first["cudnn"]
    for text in (
        f"CuPy {first['backend']['cupy_version']}",
        f"CUDA runtime {first['backend']['cuda_runtime']}",
        f"PyTorch {first['torch']}",
        f"cuDNN {v // 10000}.{v % 10000 // 100}.{v % 100}",
        started(first).strftime("%Y-%m-%d %H:%M"),
        f"commit {first['commit']}",
    ):
        assert text in label, (text, label)
    assert at.selectbox(key="w_benchmarks_run").value == newest[0]
    # two runs of one sitting: their values side by side
    pair = newest_two_runs()
    at = app(query={"benchmarks_run": pair[0]})
    runs = [bench_files()[k] for k in pair]
    # the conv2d table: medians of both runs and the ratio to cuDNN, equal to the files
    table = table_with(at, "vs torch:cudnn · run 1")
    ms = [medians(r) for r in runs]
    assert len(table) == sum(1 for k in ms[0] if k[1] == "conv2d")
    for _, row in table.iterrows():
        for k in (0, 1):
            ours = ms[k][(row["shape"], "conv2d", row["impl"])]
            assert row[f"ms · run {k + 1}"] == pytest.approx(ours, rel=1e-12)
            if row["impl"] != "torch:cudnn":
                cudnn = ms[k][(row["shape"], "conv2d", "torch:cudnn")]
                assert row[f"vs torch:cudnn · run {k + 1}"] == pytest.approx(cudnn / ours, rel=1e-12)
        spread = abs(
            ms[0][(row["shape"], "conv2d", row["impl"])] - ms[1][(row["shape"], "conv2d", row["impl"])]
        )
        mean = (
            ms[0][(row["shape"], "conv2d", row["impl"])] + ms[1][(row["shape"], "conv2d", row["impl"])]
        ) / 2
        assert row["spread between runs %"] == pytest.approx(100 * spread / mean, rel=1e-9)
    # the chart: one marker per run at cuDNN time / our time, for every row but cuDNN itself
    fig = chart(at, "conv2d: speed relative to torch:cudnn")
    for k in (0, 1):
        trace = next(t for t in fig["data"] if t.get("name", "").startswith(f"run {k + 1}"))
        got = {tuple(cd): x for cd, x in zip(trace["customdata"], trace["x"], strict=True)}
        want = {
            (s, impl): ms[k][(s, "conv2d", "torch:cudnn")] / t
            for (s, op, impl), t in ms[k].items()
            if op == "conv2d" and impl != "torch:cudnn"
        }
        assert got.keys() == want.keys()
        for key, x in got.items():
            assert x == pytest.approx(want[key], rel=1e-12)
    # the spread between runs is drawn
    spread = next(t for t in fig["data"] if t.get("name") == "spread between runs")
    assert sum(x is not None for x in spread["x"]) == 2 * len(want)


def peers_in(data: dict) -> set[str]:
    return {r["impl"] for r in data["results"] if r["op"] != "copy" and not r["impl"].startswith("ours")}


@pytest.mark.parametrize("which", ["cpu_2core", "newest"])
def test_only_measured_peers_are_named(which):
    files = bench_files()
    lease = newest_gpu_pair() if which == "newest" else [which]
    shown = set().union(*(peers_in(files[k]) for k in lease))
    every = set().union(*(peers_in(d) for d in files.values())) | {"torch:cudnn", "torch:cpu"}
    at = app(query={"benchmarks_run": lease[0]})
    committed = [c.value for c in at.caption if c.value.startswith("Reference:")]
    text = " ".join(committed)
    for peer in every:
        assert (f"`{peer}`" in text) == (peer in shown), (peer, shown)
    gpu = files[lease[0]]["backend"].get("gpu")
    assert ("cuBLAS" in text) == bool(gpu) and ("cuDNN" in text) == ("torch:cudnn" in shown)
    for fig in charts(at):  # legends name runs and the reference: a peer of this data
        for t in fig["data"]:
            if "reference" in (t.get("name") or ""):
                assert t["name"].split(" = ")[1].split(" ")[0] in shown


def test_axes_are_linear_unless_the_range_demands_log():
    at = app(query={"benchmarks_run": newest_two_runs()[0]})
    runs = [bench_files()[k] for k in newest_two_runs()]
    seen = set()
    for op in dict.fromkeys(r["op"] for r in runs[0]["results"] if r["op"] != "copy"):
        peer = next(
            r["impl"] for r in runs[0]["results"] if r["op"] == op and not r["impl"].startswith("ours")
        )
        ratios = [1.0]
        for data in runs:
            ms = medians(data)
            ratios += [ms[(s, o, peer)] / t for (s, o, impl), t in ms.items() if o == op and impl != peer]
        want_log = max(ratios) / min(ratios) > 30
        fig = chart(at, f"{op}: speed relative to {peer}")
        axis = fig["layout"]["xaxis"]
        assert axis.get("type", "linear") == ("log" if want_log else "linear"), op
        assert ("log scale" in axis["title"]["text"]) == want_log
        seen.add(want_log)
    assert seen == {True, False}, "the committed data has both kinds of chart"


def test_charts_are_sized_for_their_rows_and_fonts_follow_the_mode():
    for pres, tick, title in ((False, 14, 16), (True, 20, 20)):
        at = app(query={"benchmarks_run": newest_two_runs()[0], **({"pres": "1"} if pres else {})})
        figs = charts(at)
        for fig in figs:
            lay = fig["layout"]
            assert lay["title"]["font"]["size"] >= title
            assert lay["font"]["size"] >= (20 if pres else 14)
            assert lay["legend"]["font"]["size"] >= (20 if pres else 14)
            for ax in ("xaxis", "yaxis"):
                assert lay[ax]["tickfont"]["size"] >= tick
                assert lay[ax]["title"]["font"]["size"] >= (20 if pres else 14)
            rows = len(lay["yaxis"]["categoryarray"])
            assert lay["height"] >= rows * lay["yaxis"]["tickfont"]["size"] * 1.5, (
                "each row has room for its label"
            )
        heights = {f["layout"]["title"]["text"].split(":")[0]: f["layout"]["height"] for f in figs}
        assert heights["conv2d"] > heights["reflect_pad"], "more rows, a taller chart"


def test_downloaded_figure_html_has_no_external_script():
    from viz.benchmarks import RatioRow, ratio_figure, sweep_figure

    figs = [
        ratio_figure(
            [RatioRow("a", "ours", [1.2, 1.1]), RatioRow("a", "torch:x", [0.5, 0.6])],
            "torch",
            ["run 1", "run 2"],
            "t",
        ),
        sweep_figure([64, 128], {"direct": [(1.0, 0.9, 1.2, 3, False), None]}, "perf_counter"),
    ]
    for fig in figs:
        html = fig.to_html(include_plotlyjs=True, full_html=True)  # what ui.common.figure offers
        assert not re.search(r"<script[^>]*\bsrc=[\"']?(https?:)?//", html), "no external script"
        assert "Plotly.newPlot" in html and len(html) > 1_000_000, "plotly.js itself is inside"


def median_of(samples) -> float:
    v = sorted(samples)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def test_the_sweep_shows_median_and_spread_and_flags_noise(monkeypatch):
    """The sweep runs (small sizes here) and its figure draws each point's median with error bars
    from its fastest to its slowest run; a point spread over 30% of its median is flagged."""
    from bench import reports

    original = reports.size_sweep
    monkeypatch.setattr(
        reports,
        "size_sweep",
        lambda sizes, algorithms, repeats, **kw: original([16, 32], algorithms[:2], repeats, **kw),
    )
    at = app(query={"benchmarks_reps": "4"})
    next(b for b in at.button if b.label == "Run the size sweep").click()
    at.run(timeout=120)
    assert not at.exception, [e.value for e in at.exception]
    sweep = at.session_state["benchmarks_sweep_result"]
    fig = chart(at, "conv2d time vs image size")
    traces = [t for t in fig["data"] if t.get("error_y")]
    assert [t["name"] for t in traces] == sweep.algorithms
    for t in traces:
        for i, size in enumerate(t["x"]):
            p = sweep.points[t["name"]][sweep.sizes.index(size)]
            assert len(p.samples) >= 3, "a few repeats per size"
            median = median_of(p.samples)
            assert t["y"][i] == pytest.approx(median)
            assert t["error_y"]["array"][i] == pytest.approx(max(p.samples) - median)
            assert t["error_y"]["arrayminus"][i] == pytest.approx(median - min(p.samples))
    # the noise flag follows the 30% rule, computed here from the samples
    noisy = [
        (a, s)
        for a in sweep.algorithms
        for s, p in zip(sweep.sizes, sweep.points[a], strict=True)
        if max(p.samples) - min(p.samples) > 0.3 * median_of(p.samples)
    ]
    warned = [w.value for w in at.warning if "Noisy measurements" in w.value]
    assert bool(warned) == bool(noisy)
    assert fig["layout"]["yaxis"].get("type", "linear") == (
        "log"
        if max(max(p.samples) for a in sweep.algorithms for p in sweep.points[a])
        / min(min(p.samples) for a in sweep.algorithms for p in sweep.points[a])
        > 30
        else "linear"
    )


def test_a_noisy_sweep_point_is_named_and_drawn_hollow():
    from bench.reports import Spread, Sweep

    sweep = Sweep([64, 128], ["direct", "im2col"], "perf_counter", 1)
    sweep.points = {
        "direct": [Spread((1.0, 1.05, 0.98)), Spread((4.0, 9.0, 4.2))],
        "im2col": [Spread((2.0, 2.1, 2.05)), None],
    }
    sweep.skipped = {("im2col", 128): "over the budget"}
    at = app(state={"benchmarks_sweep_result": sweep})
    warned = " ".join(w.value for w in at.warning if "Noisy" in w.value)
    assert "direct at 128 px" in warned and "direct at 64 px" not in warned and "1 of 3 points" in warned
    fig = chart(at, "conv2d time vs image size")
    direct = next(t for t in fig["data"] if t["name"] == "direct")
    assert direct["marker"]["color"][1] == "white" and direct["marker"]["color"][0] != "white"
    assert direct["error_y"]["array"] == pytest.approx([1.05 - 1.0, 9.0 - 4.2])
    assert any("Not measured: im2col at 128 px" in c.value for c in at.caption)


def write_run(folder: Path, name: str, when: str, records: list[dict], gpu: bool = True) -> None:
    backend = {
        "name": "cupy",
        "device": "Test GPU",
        "cupy_version": "1.0",
        "cuda_runtime": "12.0",
        "cuda_driver": "12.0",
        "numpy_version": "2.0",
        "reason": None,
        "gpu": gpu,
    }
    (folder / f"{name}.json").write_text(
        json.dumps(
            {
                "backend": backend,
                "torch": "2.0",
                "cudnn": 90100,
                "python": "3.12",
                "machine": "x86_64",
                "started": when,
                "seconds": 1.0,
                "repeat": 30,
                "shapes": [],
                "results": records,
            }
        )
    )


def test_auto_that_missed_the_fastest_says_why_and_new_ops_appear(tmp_path, monkeypatch):
    """Two synthetic runs of one sitting: auto chose tiled while im2col measured faster (flagged with the
    reason),
    and an op the page has never heard of is shown like any other (records are read generically)."""
    from bench import reports

    def recs(auto_ms: float, im2col_ms: float) -> list[dict]:
        r = [
            dict(shape="s1", op="conv2d", impl="ours:auto", median_ms=auto_ms, extra={"chose": "tiled"}),
            dict(shape="s1", op="conv2d", impl="ours:tiled", median_ms=1.0),
            dict(shape="s1", op="conv2d", impl="ours:im2col", median_ms=im2col_ms),
            dict(shape="s1", op="conv2d", impl="torch:cudnn", median_ms=0.8),
            dict(shape="s1", op="conv9d_grad", impl="ours:auto", median_ms=2.0),
            dict(shape="s1", op="conv9d_grad", impl="ours:a", median_ms=2.0),
            dict(shape="s1", op="conv9d_grad", impl="torch", median_ms=3.0),
        ]
        return r

    write_run(tmp_path, "run_a", "2030-01-01T10:00:00Z", recs(1.02, 0.9))
    write_run(tmp_path, "run_a_repeat", "2030-01-01T10:00:30Z", recs(1.01, 1.1))
    write_run(tmp_path, "older", "2029-01-01T10:00:00Z", recs(1.0, 2.0))
    (tmp_path / "not_a_run.json").write_text(json.dumps({"rerun_median_ms": 3}))
    monkeypatch.setattr(reports, "REPORTS_DIR", tmp_path)
    at = app()
    assert at.selectbox(key="w_benchmarks_run").value == "run_a"
    assert at.selectbox(key="w_benchmarks_run").options[:2] == [
        reports.group_leases(reports.load_runs())[0].label(),
        reports.group_leases(reports.load_runs())[1].label(),
    ]
    assert [t.label for t in at.tabs][:2] == ["conv2d", "conv9d_grad"]
    auto = table_with(at, "auto ran")
    run1 = auto[auto["run"] == "run_a"].iloc[0]
    assert (run1["auto ran"], run1["fastest measured"], run1["auto chose"]) == (
        "tiled",
        "im2col",
        "✗ not the fastest",
    )
    run2 = auto[auto["run"] == "run_a_repeat"].iloc[0]
    assert (run2["fastest measured"], run2["auto chose"]) == ("tiled", "✓ the fastest")
    warned = " ".join(w.value for w in at.warning)
    assert "auto did not run the fastest measured algorithm" in warned
    assert "once per shape" in warned and "the median of 30 runs" in warned
    grad = chart(at, "conv9d_grad: speed relative to torch")
    ours = next(t for t in grad["data"] if t.get("name", "").startswith("run 1"))
    assert dict(zip([c[1] for c in ours["customdata"]], ours["x"], strict=True)) == pytest.approx(
        {"ours:auto": 1.5, "ours:a": 1.5}
    )


def test_settings_come_from_the_url_and_bad_values_are_refused():
    at = app(
        query={
            "benchmarks_run": "cpu_2core",
            "benchmarks_repeat": "7",
            "benchmarks_reps": "4",
            "benchmarks_shape": "cpu_image1024",
        }
    )
    assert at.selectbox(key="w_benchmarks_run").value == "cpu_2core"
    assert at.slider(key="w_benchmarks_repeat").value == 7 and at.slider(key="w_benchmarks_reps").value == 4
    assert at.selectbox(key="w_benchmarks_shape").value == "cpu_image1024"
    assert any(m.value.startswith(f"**{bench_files()['cpu_2core']['device']}**") for m in at.markdown), (
        "the CPU run is shown, with the machine it ran on"
    )
    assert any("CPU numbers" in c.value for c in at.caption)
    at = app(query={"benchmarks_run": "<script>", "benchmarks_repeat": "999"})
    assert at.selectbox(key="w_benchmarks_run").value == newest_gpu_pair()[0]
    assert at.slider(key="w_benchmarks_repeat").value == 50
    assert len(at.warning) >= 2, "each bad value gets a notice"


def test_benchmark_page_runs_on_the_cpu(monkeypatch):
    """Moved from tests/pages/test_pages.py: the run on this machine records results and shows the
    results table (here on a small shape, so the test stays fast), with CSV/JSON downloads."""
    from bench import suite

    small = dataclasses.replace(suite.CPU_SHAPES[0], name="tiny_cpu", H=64, W=64)
    monkeypatch.setitem(suite.ALL_SHAPES, "tiny_cpu", small)
    at = app(query={"benchmarks_shape": "tiny_cpu"})
    assert any("CPU numbers are CPU numbers" in c.value for c in at.caption), "the CPU notice"
    at.slider(key="w_benchmarks_repeat").set_value(3)
    next(b for b in at.button if b.label == "Run the benchmark").click()
    at.run(timeout=300)
    assert not at.exception, [e.value for e in at.exception]
    report = at.session_state["bench_report"]
    assert report["results"], "results were recorded"
    assert at.dataframe, "the results table is shown"
    every = table_with(at, "median_ms")
    assert sorted(every["median_ms"]) == pytest.approx(sorted(r["median_ms"] for r in report["results"]))
    assert {r["shape"] for r in report["results"]} == {"-", "tiny_cpu"}
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download CSV" in labels and "Download JSON" in labels
    # this run's conv2d chart: relative to the CPU peer it measured, with the report's values
    ms = {(r["shape"], r["op"], r["impl"]): r["median_ms"] for r in report["results"]}
    ref = next(
        r["impl"] for r in report["results"] if r["op"] == "conv2d" and not r["impl"].startswith("ours")
    )
    assert ref == "torch:cpu"
    fig = chart(at, "conv2d: speed relative to torch:cpu")
    trace = next(t for t in fig["data"] if t.get("name") == "run 1")
    for (shape, impl), x in zip(map(tuple, trace["customdata"]), trace["x"], strict=True):
        assert x == pytest.approx(ms[(shape, "conv2d", ref)] / ms[(shape, "conv2d", impl)])
    here = [c.value for c in at.caption if c.value.startswith("Reference:") and "torch:cpu" in c.value]
    assert here and not any("cudnn" in c or "cuBLAS" in c for c in here), "no GPU peer named for a CPU run"


def test_what_auto_compares_is_said_once_and_misses_count_fp32_candidates_only():
    import gpuops

    pair = newest_two_runs()
    at = app(query={"benchmarks_run": pair[0]})
    texts = [c.value for c in at.caption] + [w.value for w in at.warning]
    assert sum("never runs implicit_gemm_tf32" in t for t in texts) == 1, "said once, not per shape or op"
    # auto's misses, counted here from the files: the fastest of our fp32 algorithms per shape and run
    misses = total = 0
    for name in pair:
        ms = medians(bench_files()[name])
        for r in bench_files()[name]["results"]:
            if r["op"] == "conv2d" and r["impl"] == "ours:auto":
                fp32 = {
                    a: ms[(r["shape"], "conv2d", f"ours:{a}")]
                    for a in (*gpuops.ALGORITHMS, *SPLIT_ALGORITHMS)
                    if (r["shape"], "conv2d", f"ours:{a}") in ms  # v13: where it runs
                }
                total += 1
                misses += min(fp32, key=fp32.get) != r["extra"]["chose"]
    tab = next(t for t in at.tabs if t.label == "conv2d")
    auto = next(d.value for d in tab.dataframe if "auto ran" in d.value.columns)
    fp32_kernels = {*gpuops.ALGORITHMS, *SPLIT_ALGORITHMS}
    assert set(auto["fastest measured"]) <= fp32_kernels, "no rounding tensor-core kernel counts"
    assert (auto["auto chose"] == "✗ not the fastest").sum() == misses
    warned = [w.value for w in tab.warning if "auto did not run the fastest" in w.value]
    assert len(warned) == (1 if misses else 0), "said once, in conv2d's tab"
    assert all(f"in {misses} of {total} measurements" in w for w in warned)


def test_missing_values_show_a_dash_never_none():
    """A run without a value (cuDNN has no ratio to itself) shows "—": every table of the page tells
    the grid to draw missing cells so (it draws "None" otherwise)."""
    at = app(query={"benchmarks_run": newest_two_runs()[0]})
    assert at.dataframe
    for d in at.dataframe:
        assert d.proto.placeholder == "—"
    table = table_with(at, "vs torch:cudnn · run 1")
    own = table[table["impl"] == "torch:cudnn"]
    assert len(own) and own["vs torch:cudnn · run 1"].isna().all(), "missing in the data, a dash on screen"


def test_the_precision_ladder_shows_the_committed_tensor_core_run():
    files = bench_files()
    name = max(
        (k for k, v in files.items() if any(r["impl"] == "ours:pipelined_tf32" for r in v["results"])),
        key=lambda k: started(files[k]),
    )
    at = app(query={"benchmarks_run": name})
    rec = {(r["shape"], r["impl"]): r for r in files[name]["results"] if r["op"] == "conv2d"}
    shapes = list(dict.fromkeys(s for s, impl in rec if impl == "ours:pipelined_tf32"))
    pairs = {
        "FP32": ("ours:auto", "torch:cudnn"),
        "TF32": ("ours:pipelined_tf32", "torch:cudnn_tf32"),
        "BF16": ("ours:pipelined_bf16", "torch:cudnn_bf16"),
        "FP16": ("ours:pipelined_fp16", "torch:cudnn_fp16"),
    }
    table = table_with(at, "ours ÷ cuDNN")
    assert list(dict.fromkeys(table["shape"])) == shapes and len(table) == 4 * len(shapes)
    for _, row in table.iterrows():
        ours, peer = (rec[(row["shape"], impl)] for impl in pairs[row["precision"]])
        assert row["ms"] == pytest.approx(ours["median_ms"]) and row["cuDNN ms"] == pytest.approx(
            peer["median_ms"]
        )
        assert row["ours ÷ cuDNN"] == pytest.approx(ours["median_ms"] / peer["median_ms"])
        error = ours["extra"].get("rel_error_vs_float64")
        if row["precision"] != "FP32":
            assert row["error"] == pytest.approx(error)
            assert row["ours (kernel)"] == ours["extra"]["kernel"]
        else:
            assert row["ours (kernel)"] == f"auto: {ours['extra']['chose']}"
    fig = chart(at, "conv2d per precision and shape")
    bars = next(t for t in fig["data"] if t["type"] == "bar" and t["name"] == "cuDNN")
    want = [rec[(s, pairs[p][1])]["tflops"] for s in shapes for p in pairs]
    assert bars["x"] == pytest.approx(want)
