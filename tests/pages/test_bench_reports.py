"""The committed benchmark reports as data: what each one records, that the app reads them once
per process, that docs/performance.md is what the script makes of them, and that the benchmark
command writes reports of the same shape. The compute core keeps none of this."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from bench import reports, suite, to_markdown
from tests.support.apptest import open_page

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "bench" / "results"
VERSIONS = {"python", "numpy", "cupy", "cuda", "torch", "cudnn"}


def committed() -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted(FOLDER.iterdir())}


def test_a_few_curated_reports_each_with_schema_commit_device_and_versions():
    files = committed()
    assert 1 <= len(files) <= 7, sorted(files)  # the CPU run and the newest pairs of GPU runs
    for name, data in files.items():
        assert name.endswith(".json"), f"{name}: only reports live in bench/results/"
        assert data["schema"] == reports.SCHEMA, name
        assert isinstance(data["commit"], str) and data["commit"], name
        assert isinstance(data["device"], str) and data["device"], name
        assert set(data["versions"]) == VERSIONS, name
        assert data["versions"]["python"] == data["python"], name
        assert data["versions"]["torch"] == data["torch"], name
        if data["backend"]["gpu"]:
            assert data["device"] == data["backend"]["device"], name
            assert data["versions"]["cupy"] == data["backend"]["cupy_version"], name
        assert isinstance(data["results"], list) and data["results"], name
    runs = reports.load_runs(FOLDER)
    assert sorted(r.name for r in runs) == sorted(files), "every file is a report the page can show"
    assert {r.commit for r in runs} == {d["commit"] for d in files.values()}


def count_reads(monkeypatch, folder: Path) -> list[str]:
    """Record every Path.read_text of a file in `folder`, from any thread."""
    reads: list[str] = []
    original = Path.read_text

    def read_text(self: Path, *args, **kwargs):
        if self.resolve().parent == folder.resolve():
            reads.append(self.name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", read_text)
    return reads


def test_the_reports_are_read_once_per_process(tmp_path, monkeypatch):
    """More files than a small cache would hold (a bounded LRU of 64 had re-read them all on every
    load), two loads: each file read once."""
    names = [f"run{k:03d}.json" for k in range(70)]
    for k, name in enumerate(names):
        data = committed()["cpu_2core.json"] | {"started": f"2030-01-01T10:{k // 60:02d}:{k % 60:02d}Z"}
        (tmp_path / name).write_text(json.dumps(data))
    (tmp_path / "notes.json").write_text("{}")  # not a report: read, then skipped
    reads = count_reads(monkeypatch, tmp_path)
    first = reports.load_runs(tmp_path)
    second = reports.load_runs(tmp_path)
    assert [r.name for r in first] == names[::-1], "newest first"
    assert [r.name for r in second] == [r.name for r in first]
    assert sorted(reads) == sorted([*names, "notes.json"]), "each file read once over two loads"


def test_the_benchmarks_page_reads_the_reports_once_across_sessions(monkeypatch, numpy_backend):
    monkeypatch.setattr(reports, "_LOADED", {})  # as in a freshly started server process
    reads = count_reads(monkeypatch, FOLDER)
    for _ in range(2):  # two sessions, each running the page twice
        at = open_page("pages/benchmarks.py")
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.selectbox(key="w_benchmarks_run").options, "the committed reports are offered"
    assert sorted(reads) == sorted(committed())


def test_performance_page_is_generated_from_the_committed_reports():
    page = (ROOT / "docs" / "performance.md").read_text()
    assert to_markdown.COMMAND in page.splitlines()[2], "the header says how the page is made"
    assert page == to_markdown.render(reports.load_runs(FOLDER)), (
        f"docs/performance.md is out of date: run {to_markdown.COMMAND}"
    )


def test_the_benchmark_command_writes_a_report_the_page_reads(tmp_path, monkeypatch, numpy_backend):
    monkeypatch.setitem(suite.ALL_SHAPES, "tiny", suite.Shape("tiny", 1, 1, 16, 16, 2, 3, 1, 1))
    out = tmp_path / "tiny.json"
    argv = [
        "--shapes",
        "tiny",
        "--repeat",
        "3",
        "--parts",
        "forward",
        "backward",
        "--commit",
        "abc1234",
        "--out",
        str(out),
    ]
    assert suite.main(argv) == 0
    report = json.loads(out.read_text())
    assert report["schema"] == reports.SCHEMA and report["commit"] == "abc1234"
    assert set(report["versions"]) == VERSIONS
    assert report["versions"]["numpy"] == report["backend"]["numpy_version"]
    assert report["device"].startswith("CPU (NumPy)")
    run = reports.read_report(out)
    assert run is not None and run.commit == "abc1234" and "commit abc1234" in run.labels()
    assert {r["shape"] for r in run.records} == {"-", "tiny"}
    ops = {r["op"] for r in report["results"]}
    assert {"conv2d", "conv2d_grad_input", "conv_transpose2d", "reflect_pad_backward"} <= ops
    auto = {r["op"]: r["extra"].get("chose") for r in report["results"] if r["impl"] == "ours:auto"}
    assert auto["reflect_pad_backward"] == "scatter" and auto["conv_transpose2d"] == auto["conv2d_grad_input"]


def test_the_fp32_summary_states_auto_against_cudnn_with_the_hopper_versions():
    """One line a GEMM class that auto ran on: auto, v13, v14 (a dash where it did not run), cuDNN
    fp32, auto / cuDNN, and what auto ran; shapes outside the GEMM classes are left out."""

    def row(shape, impl, ms, **extra):
        return dict(shape=shape, op="conv2d", impl=impl, median_ms=ms, extra=extra)

    rows = [
        row("grouped_g4", "ours:auto", 0.30, chose="pixel_rows_3xtf32"),
        row("grouped_g4", "ours:pipelined_3xtf32", 0.40),
        row("grouped_g4", "ours:pixel_rows_3xtf32", 0.30),
        row("grouped_g4", "torch:cudnn", 0.375),
        row("late14_256", "ours:auto", 0.14, chose="pipelined_3xtf32"),
        row("late14_256", "torch:cudnn", 0.175),
        row("resnet56", "ours:auto", 0.2, chose="pipelined_3xtf32"),
    ]
    lines = suite.fp32_summary(rows).splitlines()
    body = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert set(body) == {"grouped_g4", "late14_256"}
    assert body["grouped_g4"] == ["0.300", "0.400", "0.300", "0.375", "0.800", "pixel_rows_3xtf32"]
    assert body["late14_256"] == ["0.140", "-", "-", "0.175", "0.800", "pipelined_3xtf32"]


def test_the_tensor_core_summary_states_tf32_against_fp32_auto_and_cudnn():
    """One line a GEMM class: auto, each TF32 version's row (v5, v7, v8, v10, v12, v14, v16, v17;
    a dash where it did not run), pipelined_tf32, cuDNN-TF32, auto / tf32 (target >= 2),
    tf32 / cuDNN-TF32 (target <= 1.5), the 16-bit kernels against cuDNN's, and the errors."""

    def row(impl, ms, shape="grouped_g4", **extra):
        return dict(shape=shape, op="conv2d", impl=impl, median_ms=ms, extra=extra)

    rows = [
        row("ours:auto", 0.26),
        row("ours:pixel_rows_tf32", 0.155),
        row("ours:pipelined_tf32_v17", 0.13),
        row("ours:pipelined_tf32", 0.13, rel_error_vs_float64=2.9e-4),
        row("torch:cudnn_tf32", 0.16, rel_error_vs_float64=3.0e-4),
        row("ours:pipelined_bf16", 0.18),
        row("torch:cudnn_bf16", 0.10),
        row("ours:auto", 0.1, shape="resnet56"),  # not a GEMM class: no line
    ]
    lines = suite.tensor_core_summary(rows).splitlines()
    assert lines[1].split()[1:11] == ["auto", "v5", "v7", "v8", "v10", "v12", "v14", "v16", "v17", "tf32"]
    body = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert set(body) == {"grouped_g4"}
    times = ["0.260", "-", "-", "-", "-", "-", "0.155", "-", "0.130", "0.130", "0.160"]  # auto .. cuDNN-TF32
    ratios = ["2.00", "0.81", "0.180", "1.80", "-", "-"]  # auto / tf32, tf32 / cuDNN, bf16 and fp16
    assert body["grouped_g4"][:17] == times + ratios
    assert "2.9e-04 / - / -" in lines[2] and "(cuDNN 3.0e-04 / - / -)" in lines[2]


def test_the_backward_summary_states_both_gradients_against_pytorch_and_what_auto_ran():
    """One line a shape: dx auto, our fastest dx and its name, PyTorch's dx, the same for dW,
    (dx + dW auto) / PyTorch's, and the algorithms auto ran ("-" where a report does not say)."""

    def row(shape, op, impl, ms, **extra):
        return dict(shape=shape, op=f"conv2d_grad_{op}", impl=impl, median_ms=ms, extra=extra)

    rows = [
        row("k5", "input", "ours:auto", 0.25, chose="flipped_conv"),
        row("k5", "input", "ours:flipped_conv", 0.24),
        row("k5", "input", "ours:gemm_fold", 0.43),
        row("k5", "input", "torch", 0.30),
        row("k5", "weight", "ours:auto", 0.20, chose="implicit_gemm_3xtf32"),
        row("k5", "weight", "ours:implicit_gemm_3xtf32", 0.19),
        row("k5", "weight", "torch", 0.20),
        row("old", "input", "ours:auto", 1.0),
        row("old", "input", "torch", 1.0),
        row("old", "weight", "ours:auto", 3.0),
        row("old", "weight", "torch", 1.0),
    ]
    lines = suite.backward_summary(rows).splitlines()
    body = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    assert body["k5"] == [
        "0.250",
        "0.240",
        "flipped_conv",
        "0.300",
        "0.200",
        "0.190",
        "implicit_gemm_3xtf32",
        "0.200",
        "0.90",
        "flipped_conv,",
        "implicit_gemm_3xtf32",
    ]
    assert body["old"][-3:] == ["2.00", "-,", "-"]


def test_backward_rows_are_timed_in_interleaved_rounds_keeping_each_best(monkeypatch):
    """On the GPU an op's implementations are timed round after round (a, b, torch, a, b, torch),
    and each row keeps its best round; auto's row says what it ran."""
    timed = []
    times = iter([0.5, 0.9, 0.7, 0.4, 1.0, 0.6])  # the two rounds' medians, in call order

    def fake_time(self, fn, repeat=None):
        timed.append(fn())
        return next(times)

    monkeypatch.setattr(suite.Suite, "time", fake_time)
    s = suite.Suite.__new__(suite.Suite)
    s.gpu, s.records, s.rounded_ops, s.repeat = True, [], set(), 10
    ours = {"auto": lambda: "auto", "gemm": lambda: "gemm"}
    extras = {"gemm": {"kernel": "k"}}
    s.add_op("k5", "conv2d_grad_weight", 2_000_000, ours, lambda: "torch", chose="gemm", extras=extras)
    assert suite.OP_ROUNDS == 2 and timed == ["auto", "gemm", "torch"] * 2
    got = {r.impl: (r.median_ms, r.extra) for r in s.records}
    assert got == {
        "ours:auto": (0.4, {"chose": "gemm"}),
        "ours:gemm": (0.9, {"kernel": "k"}),
        "torch": (0.6, {}),
    }
    assert s.records[0].tflops == pytest.approx(2_000_000 / 0.4 / 1e9)
    assert s.rounded_ops == {"conv2d_grad_weight"}, "the report names the ops timed in rounds"


def test_after_the_first_round_a_short_call_fills_about_a_millisecond(monkeypatch):
    """A 0.02 ms row runs 10 times in round 1 and 1 / 0.02 = 50 times in each later one (the most
    a round takes), in SHORT_ROUNDS rounds; a 0.5 ms row keeps its 10, in two rounds
    (gpuops.timing.runs_to_fill and takes_round, as autotune)."""
    runs = []

    def fake_time(self, fn, repeat=None):
        runs.append((fn(), repeat))
        return {"short": 0.02, "long": 0.5}[fn()]

    monkeypatch.setattr(suite.Suite, "time", fake_time)
    s = suite.Suite.__new__(suite.Suite)
    s.gpu, s.records, s.rounded_ops, s.repeat = True, [], set(), 10
    s.add_op("tiny", "reflect_pad_backward", None, {"short": lambda: "short", "long": lambda: "long"}, None)
    assert runs == [("short", 10), ("long", 10), ("short", 50), ("long", 10), ("short", 50), ("short", 50)]


def test_the_runs_caption_says_which_ops_were_timed_in_rounds():
    """A report's "rounds" reaches the page's caption; an older report without it (or with a
    malformed one) says nothing about rounds."""
    from ui import benchmarks_view

    base = {"backend": {"gpu": True, "device": "GPU"}, "started": "2030-01-01T10:00:00Z", "repeat": 10}
    rounds = {"count": 2, "ops": ["conv2d", "conv2d_grad_input"]}
    with_rounds = reports.parse_run({**base, "rounds": rounds, "results": []}, "new.json")
    caption = benchmarks_view.runs_caption(reports.group_leases([with_rounds])[0])
    assert "`conv2d`, `conv2d_grad_input`: every implementation in 2 interleaved rounds" in caption
    assert "fill" not in caption  # reports before the filled rounds say nothing of them
    filled = reports.parse_run({**base, "rounds": {**rounds, "fill_ms": 1.0}, "results": []}, "filled.json")
    caption = benchmarks_view.runs_caption(reports.group_leases([filled])[0])
    assert "a short call runs enough times to fill 1 ms)" in caption
    more = {**rounds, "fill_ms": 1.0, "short_rounds": 4}
    caption = benchmarks_view.runs_caption(
        reports.group_leases([reports.parse_run({**base, "rounds": more, "results": []}, "more.json")])[0]
    )
    assert "a short call runs enough times to fill 1 ms, in 4 rounds)" in caption
    for older in ({**base, "results": []}, {**base, "rounds": "two", "results": []}):
        run = reports.parse_run(older, "old.json")
        assert run.rounds is None
        assert "rounds" not in benchmarks_view.runs_caption(reports.group_leases([run])[0])


def test_an_implementation_that_refuses_the_layer_gets_no_row(monkeypatch):
    """A named algorithm that raises ValueError for this layer (v4 on rows too wide for its
    shared memory) is left out of every round; the others are timed and recorded."""
    timed = []

    def fake_time(self, fn, repeat=None):
        timed.append(fn())
        return 1.0

    def refusing():
        raise ValueError("one output row needs 65,536 bytes of shared memory")

    monkeypatch.setattr(suite.Suite, "time", fake_time)
    s = suite.Suite.__new__(suite.Suite)
    s.gpu, s.records, s.rounded_ops, s.repeat = True, [], set(), 10
    ours = {"auto": lambda: "auto", "direct_pairs_shared": refusing}
    s.add_op("wide", "conv2d_grad_weight", 1_000, ours, lambda: "torch")
    assert timed == ["auto", "torch"] * 2
    assert [r.impl for r in s.records] == ["ours:auto", "torch"]


def test_a_report_of_a_newer_schema_is_refused():
    data = committed()["cpu_2core.json"]
    with pytest.raises(ValueError, match="schema"):
        reports.parse_run(data | {"schema": reports.SCHEMA + 1}, "future.json")
    assert reports.parse_run(data, "cpu_2core.json").schema == reports.SCHEMA


def test_the_compute_core_imports_no_cli_no_torch_no_reports():
    banned = {"argparse", "torch", "bench", "streamlit", "plotly"}
    for path in sorted((ROOT / "gpuops").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] not in banned, f"{path.relative_to(ROOT)} imports {name}"
