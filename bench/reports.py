"""Benchmark reports: the curated runs in bench/results/*.json, compared with their peers.

A report is what `python3 -m bench.suite --out FILE` writes: a JSON object with "schema" (SCHEMA),
"commit" (the code measured), "device", "versions" (python, numpy, cupy, cuda, torch, cudnn; null
where not installed), then "backend", "started", "repeat", "timing" ("queued": gpuops.timing; absent
in reports whose GPU calls were synchronized one by one), "rounds" (the ops whose implementations
were timed in interleaved rounds, each keeping its better round; absent in older reports) and a
"results" list of records
{shape, op, impl, median_ms, gbps, tflops, extra}. Records are read generically by (shape, op,
impl): whatever ops and impls a run holds are shown, so new ops or shape classes of the benchmark
need no change here.

- `impl` names starting with "ours" are this project's kernels ("ours", "ours:tiled"); every
  other impl of the same shape and op is a peer measured in the same run ("torch:cudnn",
  "torch", ...). Ratios are peer time / our time: > 1 means ours is faster.
- The op "copy" is the bandwidth ceiling of the run (a device-to-device copy): memory-bound
  records are also given as a fraction of it.
- A lease: runs on the same device and software, started within LEASE_WINDOW_S of each other
  (the committed H100 runs come in pairs, so run-to-run spread is visible).
- The folder is read once per process (`load_runs`): the reports are committed data, not files
  that change while the app runs.
- The size sweep (`size_sweep`) times conv2d per image size and algorithm, repeated, and
  summarises each point as a `Spread` (median, quartiles, min-max; noisy over NOISY).
"""

from __future__ import annotations

import functools
import json
import statistics
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpuops.conv2d import PRECISIONS

SCHEMA = 1  # the report format this module reads and bench.suite writes
REPORTS_DIR = Path(__file__).resolve().parent / "results"
LEASE_WINDOW_S = 600  # runs started within 10 minutes on the same device and software: one lease
NOISY = 0.30  # a point whose min-max spread exceeds 30% of its median is called noisy
COPY = "copy"
CONV2D = "conv2d"  # the forward op: what a first view of the reports shows


def is_ours(impl: str) -> bool:
    return impl == "ours" or impl.startswith("ours:")


def variant(impl: str) -> str:
    """ "ours:tiled" -> "tiled"; "ours" -> "ours"."""
    return impl.split(":", 1)[1] if ":" in impl else impl


def cudnn_text(version: int | None) -> str | None:
    """torch.backends.cudnn.version() as text: 91900 -> 9.19.0 (cuDNN 9), 8902 -> 8.9.2."""
    if not version:
        return None
    if version >= 90000:
        return f"{version // 10000}.{version % 10000 // 100}.{version % 100}"
    return f"{version // 1000}.{version % 1000 // 100}.{version % 100}"


def _rounds(value: Any) -> dict[str, Any] | None:
    """A report's "rounds" ({"count": int, "ops": [op, ...], "fill_ms": float, "short_rounds": int}:
    the milliseconds a short call's later rounds fill and how many rounds it gets, absent in older
    reports), or None where absent or malformed."""
    if not isinstance(value, dict) or not isinstance(value.get("count"), int):
        return None
    ops = value.get("ops")
    if not isinstance(ops, list) or not all(isinstance(o, str) for o in ops):
        return None
    fill, short = value.get("fill_ms"), value.get("short_rounds")
    fill_ms = (
        float(fill) if isinstance(fill, int | float) and not isinstance(fill, bool) and fill > 0 else None
    )
    short_rounds = short if isinstance(short, int) and not isinstance(short, bool) and short > 0 else None
    return {"count": value["count"], "ops": list(ops), "fill_ms": fill_ms, "short_rounds": short_rounds}


@dataclass(frozen=True)
class Run:
    """One benchmark report."""

    name: str  # the file name, or a label such as "this machine"
    started: datetime | None
    backend: dict[str, Any]
    torch: str | None
    cudnn: int | None
    repeat: int | None
    seconds: float | None
    records: tuple[dict[str, Any], ...]
    python: str | None = None
    schema: int | None = None
    commit: str | None = None  # the code measured ("unknown" where it was not recorded)
    device_name: str | None = None  # the report's "device"
    versions: dict[str, str | None] = field(default_factory=dict)
    note: str | None = None  # what the report says about its own fields
    timing: str | None = None  # "queued", "perf_counter"; None: GPU calls synchronized one by one
    rounds: dict[str, Any] | None = None  # {"count", "ops", "fill_ms", "short_rounds"}: ops timed in rounds
    pinned: str | None = None  # the core the command pinned itself to (bench.pin_core), in words

    @property
    def gpu(self) -> bool:
        return bool(self.backend.get("gpu"))

    @property
    def device(self) -> str:
        if self.device_name:
            return self.device_name
        return str(self.backend.get("device") or "GPU") if self.gpu else "CPU (NumPy)"

    @property
    def software(self) -> tuple:
        """What must match for two runs to be compared as repeats of each other."""
        b = self.backend
        keys = ("device", "cupy_version", "cuda_runtime", "cuda_driver", "numpy_version")
        return (*(b.get(k) for k in keys), self.torch, self.cudnn)

    def labels(self) -> list[str]:
        """Device and versions, in words, for the page's label line."""
        b = self.backend
        out = [self.device]
        if b.get("cupy_version"):
            out.append(f"CuPy {b['cupy_version']}")
        if b.get("cuda_runtime"):
            driver = f", driver {b['cuda_driver']}" if b.get("cuda_driver") else ""
            out.append(f"CUDA runtime {b['cuda_runtime']}{driver}")
        if b.get("numpy_version"):
            out.append(f"NumPy {b['numpy_version']}")
        out.append(f"PyTorch {self.torch}" if self.torch else "no PyTorch")
        if cudnn_text(self.cudnn):
            out.append(f"cuDNN {cudnn_text(self.cudnn)}")
        if self.commit and self.commit != "unknown":
            out.append(f"commit {self.commit}")
        if self.gpu:
            out.append(self.timing_text())
        return out

    def timing_text(self) -> str:
        """How the run's GPU times were taken (gpuops.timing); reports before the "timing" field
        synchronized after every call, so the host's launch time counted."""
        if self.timing == "queued":
            return "GPU times of calls queued back to back"
        return "GPU times of calls synchronized one by one"

    def date(self) -> str:
        return self.started.strftime("%Y-%m-%d %H:%M UTC") if self.started else "date unknown"

    @property
    def copy_gbps(self) -> float | None:
        rec = next((r for r in self.records if r.get("op") == COPY and r.get("gbps")), None)
        return float(rec["gbps"]) if rec else None

    def find(self, shape: str, op: str, impl: str) -> dict[str, Any] | None:
        return self._index.get((shape, op, impl))

    @functools.cached_property
    def _index(self) -> dict[tuple[str, str, str], dict[str, Any]]:
        return {(r["shape"], r["op"], r["impl"]): r for r in self.records}


def parse_run(data: Any, name: str) -> Run:
    """A Run from a report object; ValueError if it is not a benchmark report of a schema this
    module reads (reports from before the schema are read as they are)."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError(f"{name} is not a benchmark report (no results list)")
    schema = data.get("schema")
    if schema is not None and (not isinstance(schema, int) or isinstance(schema, bool) or schema > SCHEMA):
        raise ValueError(f"{name}: report schema {schema!r}, this version reads schema {SCHEMA} and older")
    records = []
    for r in data["results"]:
        if not isinstance(r, dict) or not {"shape", "op", "impl", "median_ms"} <= set(r):
            raise ValueError(f"{name}: a record lacks shape/op/impl/median_ms")
        ms = r["median_ms"]
        if not isinstance(ms, int | float) or not ms > 0:
            raise ValueError(
                f"{name}: median_ms {ms!r} of {r['shape']}/{r['op']}/{r['impl']} is not positive"
            )
        records.append({**r, "extra": r.get("extra") or {}})
    started = None
    if isinstance(data.get("started"), str):
        try:
            started = datetime.strptime(data["started"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            started = None
    backend = data.get("backend") if isinstance(data.get("backend"), dict) else {}
    versions = data.get("versions") if isinstance(data.get("versions"), dict) else {}
    return Run(
        name,
        started,
        backend,
        data.get("torch"),
        data.get("cudnn"),
        data.get("repeat"),
        data.get("seconds"),
        tuple(records),
        data.get("python"),
        schema,
        _text(data.get("commit")),
        _text(data.get("device")),
        {str(k): _text(v) for k, v in versions.items()},
        _text(data.get("note")),
        _text(data.get("timing")),
        _rounds(data.get("rounds")),
        _pinned(data.get("host_core")),
    )


def _pinned(value: Any) -> str | None:
    """A report's "host_core" ({"core", "cores", "probe_us", "slowest_us"}) in words; None where
    the run was not pinned (older reports, --no-pin, the CPU) or the field is malformed."""
    keys = ("core", "cores", "probe_us", "slowest_us")
    if not isinstance(value, dict) or not all(isinstance(value.get(k), int | float) for k in keys):
        return None
    return (
        f"pinned to core {value['core']} of {value['cores']}, where a tiny kernel's launch took "
        f"{value['probe_us']:g} us of host time ({value['slowest_us']:g} us on the slowest core)"
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def read_report(path: Path) -> Run | None:
    """One report file as a Run; None for a file that is not a readable benchmark report."""
    try:
        return parse_run(json.loads(path.read_text()), path.name)
    except (OSError, ValueError):  # json.JSONDecodeError is a ValueError
        return None


_LOADED: dict[Path, tuple[Run, ...]] = {}  # folder -> its reports, newest first
_LOADING = threading.Lock()


def load_runs(folder: Path | None = None) -> list[Run]:
    """Every benchmark report in `folder` (default REPORTS_DIR), newest first, read once per
    process and folder (every session of the app shares them); other JSON files are skipped."""
    where = Path(folder or REPORTS_DIR).resolve()
    with _LOADING:
        runs = _LOADED.get(where)
        if runs is None:
            found = (read_report(path) for path in sorted(where.glob("*.json")))
            oldest = datetime.min.replace(tzinfo=UTC)
            runs = tuple(
                sorted(
                    (r for r in found if r is not None),
                    key=lambda r: (r.started or oldest, r.name),
                    reverse=True,
                )
            )
            _LOADED[where] = runs
    return list(runs)


@dataclass(frozen=True)
class Lease:
    """Runs of one device session (oldest first): repeats of the same benchmark."""

    runs: tuple[Run, ...]

    @property
    def id(self) -> str:
        return Path(self.runs[0].name).stem

    @property
    def first(self) -> Run:
        return self.runs[0]

    def label(self) -> str:
        files = " + ".join(Path(r.name).stem for r in self.runs)
        n = len(self.runs)
        return f"{files} · {self.first.device} · {self.first.date()} ({n} run{'s' * (n != 1)})"


def group_leases(runs: Iterable[Run], window_s: float = LEASE_WINDOW_S) -> list[Lease]:
    """Runs grouped into leases (same software, pinned to a core or not alike, started within
    window_s of the previous run of the group), newest lease first."""
    dated = sorted(runs, key=lambda r: (r.started is None, r.started or datetime.min.replace(tzinfo=UTC)))
    groups: list[list[Run]] = []
    for run in dated:
        last = groups[-1][-1] if groups else None
        if (
            last is not None
            and run.started is not None
            and last.started is not None
            and last.software == run.software
            and (last.pinned is None) == (run.pinned is None)
            and (run.started - last.started).total_seconds() <= window_s
        ):
            groups[-1].append(run)
        else:
            groups.append([run])
    leases = [Lease(tuple(g)) for g in groups]
    oldest = datetime.min.replace(tzinfo=UTC)
    return sorted(leases, key=lambda l: l.runs[-1].started or oldest, reverse=True)


def default_lease(leases: Sequence[Lease]) -> Lease | None:
    """The page's first view: the newest GPU lease that timed conv2d (a forward or whole-suite
    run; a backward-only lease stays one click away), else the newest GPU lease, else the newest."""
    gpu = [l for l in leases if l.first.gpu]
    forward = (l for l in gpu if CONV2D in ops(l.runs))
    return next(forward, gpu[0] if gpu else leases[0] if leases else None)


# ---- comparisons -----------------------------------------------------------------------------
def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def ops(runs: Sequence[Run]) -> list[str]:
    """The ops measured, in the order the benchmark ran them (the copy ceiling left out)."""
    return _unique(r["op"] for run in runs for r in run.records if r["op"] != COPY)


def peers(runs: Sequence[Run], op: str) -> list[str]:
    """The impls of `op` that are not ours, in the order they were measured."""
    return _unique(r["impl"] for run in runs for r in run.records if r["op"] == op and not is_ours(r["impl"]))


@dataclass(frozen=True)
class Row:
    """One (shape, impl) of an op across the runs of a lease (None where a run lacks it)."""

    shape: str
    impl: str
    ms: tuple[float | None, ...]
    vs: dict[str, tuple[float | None, ...]]  # peer -> peer time / this time, per run
    of_copy: tuple[float | None, ...]  # achieved GB/s / the run's copy GB/s
    gbps: tuple[float | None, ...]
    tflops: tuple[float | None, ...]

    @property
    def spread(self) -> float | None:
        """(max - min) / mean of this row's medians over the runs; None with fewer than 2."""
        got = [v for v in self.ms if v is not None]
        if len(got) < 2:
            return None
        return (max(got) - min(got)) / statistics.fmean(got)


def _div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def compare(runs: Sequence[Run], op: str) -> list[Row]:
    """Every (shape, impl) of `op` with its medians per run and its ratios to each peer."""
    keys = _unique(
        f"{r['shape']}\0{r['impl']}" for run in runs for r in run.records if r["op"] == op
    )  # a str key keeps the order of first appearance
    peer_names = peers(runs, op)
    rows = []
    for key in keys:
        shape, impl = key.split("\0")
        recs = [run.find(shape, op, impl) for run in runs]
        ms = tuple(r["median_ms"] if r else None for r in recs)
        vs = {}
        for p in peer_names:
            if p == impl:
                continue
            peer_ms = [(run.find(shape, op, p) or {}).get("median_ms") for run in runs]
            ratios = tuple(_div(pm, m) for pm, m in zip(peer_ms, ms, strict=True))
            if any(v is not None for v in ratios):
                vs[p] = ratios
        gbps = tuple(r.get("gbps") if r else None for r in recs)
        of_copy = tuple(_div(g, run.copy_gbps) for g, run in zip(gbps, runs, strict=True))
        tflops = tuple(r.get("tflops") if r else None for r in recs)
        rows.append(Row(shape, impl, ms, vs, of_copy, gbps, tflops))
    return rows


def run_labels(runs: Sequence[Run]) -> list[str]:
    """ "run 1 (file)", "run 2 (file)": how the runs of a lease are named in legends and tables."""
    if len(runs) == 1:
        return ["run 1"]
    return [f"run {k + 1} ({Path(run.name).stem})" for k, run in enumerate(runs)]


def table_rows(runs: Sequence[Run], op: str, ratio_to: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """`compare` as table rows: medians per run, the spread between runs, the rates (TFLOP/s,
    GB/s, fraction of the copy) where the op has them, and the ratio to each peer of `ratio_to`
    (default: every peer), per run."""
    rows = compare(runs, op)
    n = len(runs)

    def rates(r: Row) -> dict[str, tuple[float | None, ...]]:
        return {"TFLOP/s": r.tflops, "GB/s": r.gbps, "of copy": r.of_copy}

    present = {name for r in rows for name, v in rates(r).items() if any(x is not None for x in v)}
    table = []
    for row in rows:
        out: dict[str, Any] = {"shape": row.shape, "impl": row.impl}
        out |= {f"ms · run {k + 1}": row.ms[k] for k in range(n)}
        if n > 1:
            out["spread between runs %"] = None if row.spread is None else 100 * row.spread
        for name, values in rates(row).items():
            if name in present:
                out |= {f"{name} · run {k + 1}": values[k] for k in range(n)}
        for peer in peers(runs, op) if ratio_to is None else ratio_to:
            out |= {f"vs {peer} · run {k + 1}": row.vs.get(peer, (None,) * n)[k] for k in range(n)}
        table.append(out)
    return table


def describe_peer(impl: str, gpu: bool) -> str:
    """A peer's name with what it is, in a few words (unknown names are shown as they are)."""
    blas = "cuBLAS" if gpu else "the CPU BLAS"
    words = {
        "torch:cudnn": "PyTorch's F.conv2d, i.e. cuDNN",
        "torch:cpu": "PyTorch's F.conv2d on the CPU",
        "torch:gemm-only": f"PyTorch's matmul alone on a ready X_unroll ({blas})",
        "torch:unfold+gemm": f"PyTorch's F.unfold, then matmul ({blas})",
        "torch": "PyTorch's own kernel for this operation",
    }
    return f"`{impl}` ({words[impl]})" if impl in words else f"`{impl}`"


@dataclass(frozen=True)
class AutoCheck:
    """Did 'auto' pick the fastest of our algorithms measured in the same run?"""

    shape: str
    run: str
    auto_ms: float
    chose: str | None  # the algorithm auto ran (the record's `chose`), None if not recorded
    chosen_ms: float | None  # that algorithm's own median in this run
    fastest: str
    fastest_ms: float
    agrees: bool | None  # None: auto's choice is not recorded
    reason: str


def precision_of(name: str) -> str:
    """The operand precision of one of our conv2d variants ("pipelined_tf32_v12" -> "tf32",
    "pipelined_3xtf32" -> "fp32": it carries fp32 values in TF32 pairs); "fp32" for the rest."""
    name = name.removeprefix("ours:")
    base = max((a for a in PRECISIONS if name == a or name.startswith(a + "_")), key=len, default=None)
    return "fp32" if base is None else PRECISIONS[base]


def auto_candidate(name: str) -> bool:
    """Whether auto measures this variant of ours: every one but conv2d's reduced-precision
    algorithms (TF32, bf16, fp16, and their per-version records such as pipelined_tf32_v8),
    which round the operands and are opt-in by design, as PyTorch's allow_tf32 is."""
    return precision_of(name) == "fp32"


def auto_checks(runs: Sequence[Run], op: str) -> list[AutoCheck]:
    """For every "ours:auto" record of `op`: its choice next to the fastest of the algorithms
    auto compares (auto_candidate) measured in the same run, and why they differ where they do."""
    checks = []
    for run in runs:
        for rec in run.records:
            if rec["op"] != op or not is_ours(rec["impl"]) or variant(rec["impl"]) != "auto":
                continue
            ours = {
                variant(r["impl"]): r["median_ms"]
                for r in run.records
                if r["op"] == op
                and r["shape"] == rec["shape"]
                and is_ours(r["impl"])
                and variant(r["impl"]) != "auto"
                and auto_candidate(variant(r["impl"]))
            }
            if not ours:
                continue
            fastest = min(ours, key=ours.__getitem__)
            chose = rec["extra"].get("chose")
            chosen_ms = ours.get(chose) if chose else None
            agrees = None if chose is None else chose == fastest
            reason = _auto_reason(run, chose, chosen_ms, fastest, ours[fastest])
            check = AutoCheck(
                rec["shape"],
                run.name,
                rec["median_ms"],
                chose,
                chosen_ms,
                fastest,
                ours[fastest],
                agrees,
                reason,
            )
            checks.append(check)
    return checks


def auto_rows(checks: Sequence[AutoCheck]) -> list[dict[str, Any]]:
    """The checks as table rows: what auto ran next to the fastest measured, with the verdict."""
    verdict = {True: "✓ the fastest", False: "✗ not the fastest", None: "not recorded"}
    return [
        {
            "shape": c.shape,
            "run": Path(c.run).stem,
            "auto ran": c.chose or "not recorded",
            "its ms": c.chosen_ms,
            "fastest measured": c.fastest,
            "fastest ms": c.fastest_ms,
            "auto's own ms": c.auto_ms,
            "auto chose": verdict[c.agrees],
        }
        for c in checks
    ]


def _auto_reason(
    run: Run, chose: str | None, chosen_ms: float | None, fastest: str, fastest_ms: float
) -> str:
    if chose is None:
        return "this run does not record which variant auto ran"
    if chose == fastest:
        return "auto ran the fastest measured algorithm"
    gap = f"{chose} took {chosen_ms / fastest_ms:.2f}x the time of {fastest} here" if chosen_ms else ""
    return f"{auto_why(run, chose)} {gap}".strip()


def auto_why(run: Run, chose: str) -> str:
    """Why auto may run another algorithm than the fastest one a run measured, in general."""
    if not run.gpu:
        return (
            f"On the CPU auto does not measure: it runs {chose} (the NumPy twin that needs no "
            f"K x K-times larger X_unroll)."
        )
    return (
        f"Auto times its candidates once per shape, when it first sees the shape (two interleaved "
        f"rounds, four for a call under 0.1 ms, 5 runs and then enough to fill about 1 ms, each "
        f"candidate's best round counting), and keeps that choice; the table is the median of "
        f"{run.repeat or 'several'} runs, measured later: near-ties can flip between measurements."
    )


# ---- the precision ladder ---------------------------------------------------------------------------
LADDER = (  # precision, our record, cuDNN's record in the same precision
    ("fp32", "ours:auto", "torch:cudnn"),
    ("tf32", "ours:pipelined_tf32", "torch:cudnn_tf32"),
    ("bf16", "ours:pipelined_bf16", "torch:cudnn_bf16"),
    ("fp16", "ours:pipelined_fp16", "torch:cudnn_fp16"),
)


@dataclass(frozen=True)
class Rung:
    """One precision of conv2d on one shape in one run: ours and cuDNN's (None: not recorded)."""

    shape: str
    precision: str
    ours: str  # what ran: the algorithm, for fp32 auto's choice
    kernel: str | None  # the kernel the report names (the tensor-core kernels record it)
    ms: float | None
    tflops: float | None
    error: float | None  # ||y - y64|| / ||y64||, where the run recorded it
    peer_ms: float | None
    peer_tflops: float | None
    peer_error: float | None


def precision_ladder(run: Run) -> list[Rung]:
    """conv2d's precision ladder of a run, for every shape measured with the TF32 pipeline:
    fp32 (auto, with its chosen algorithm's error where recorded) / TF32 / bf16 / fp16, each
    next to cuDNN in the same precision. Empty for a run without the tensor-core kernels."""
    shapes = _unique(r["shape"] for r in run.records if r["op"] == "conv2d" and r["impl"] == LADDER[1][1])
    rungs = []
    for shape in shapes:
        for precision, ours_impl, peer_impl in LADDER:
            ours, peer = run.find(shape, "conv2d", ours_impl), run.find(shape, "conv2d", peer_impl)
            extra = (ours or {}).get("extra") or {}
            name = variant(ours_impl)
            error = extra.get("rel_error_vs_float64")
            if name == "auto" and extra.get("chose"):
                name = f"auto: {extra['chose']}"
                chosen = run.find(shape, "conv2d", f"ours:{extra['chose']}") or {}
                error = (chosen.get("extra") or {}).get("rel_error_vs_float64")
            rungs.append(
                Rung(
                    shape,
                    precision,
                    name,
                    extra.get("kernel"),
                    (ours or {}).get("median_ms"),
                    (ours or {}).get("tflops"),
                    error,
                    (peer or {}).get("median_ms"),
                    (peer or {}).get("tflops"),
                    ((peer or {}).get("extra") or {}).get("rel_error_vs_float64"),
                )
            )
    return rungs


# ---- the size sweep: repeated timings per image size ----------------------------------------------
@dataclass(frozen=True)
class Spread:
    """Repeated timings of one point: median, quartiles, min-max."""

    samples: tuple[float, ...]
    calls: int = 1  # calls per sample (a sample is the median of these)

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def lo(self) -> float:
        return min(self.samples)

    @property
    def hi(self) -> float:
        return max(self.samples)

    @property
    def quartiles(self) -> tuple[float, float]:
        if self.n < 2:
            return self.lo, self.hi
        q = statistics.quantiles(self.samples, n=4, method="inclusive")
        return q[0], q[2]

    @property
    def relative(self) -> float:
        """(max - min) / median."""
        return (self.hi - self.lo) / self.median if self.median > 0 else 0.0

    @property
    def noisy(self) -> bool:
        return self.relative > NOISY


@dataclass
class Sweep:
    """conv2d time per image size and algorithm; points[algorithm][i] for sizes[i] (None: not run)."""

    sizes: list[int]
    algorithms: list[str]
    clock: str
    per_sample: int  # calls per timed sample on the GPU (on the CPU: each Spread's calls)
    points: dict[str, list[Spread | None]] = field(default_factory=dict)
    skipped: dict[tuple[str, int], str] = field(default_factory=dict)

    def noisy(self) -> list[tuple[str, int, Spread]]:
        return [
            (a, s, p)
            for a in self.algorithms
            for s, p in zip(self.sizes, self.points[a], strict=True)
            if p is not None and p.noisy
        ]


def sweep_rows(sweep: Sweep) -> list[dict[str, Any]]:
    """Every measured point of a sweep as a table row."""
    return [
        {
            "algorithm": a,
            "size": s,
            "median ms": p.median,
            "min ms": p.lo,
            "max ms": p.hi,
            "runs": p.n,
            "calls per run": p.calls,
            "spread %": 100 * p.relative,
            "noisy": p.noisy,
        }
        for a in sweep.algorithms
        for s, p in zip(sweep.sizes, sweep.points[a], strict=True)
        if p is not None
    ]


SWEEP_C, SWEEP_M, SWEEP_K, SWEEP_PAD = 3, 16, 3, 1  # RGB in, 16 maps out, 3 x 3, padding 1
POINT_SECONDS = 1.0  # time per point the repeats may take, beyond 3 samples
SAMPLE_SECONDS, MAX_INNER = 0.02, 20  # on the CPU a fast call is timed several times per sample


def sweep_shapes(size: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(x shape, weight shape) of the sweep's conv2d at one image size."""
    return (1, SWEEP_C, size, size), (SWEEP_M, SWEEP_C, SWEEP_K, SWEEP_K)


def size_sweep(
    sizes: Sequence[int],
    algorithms: Sequence[str],
    repeats: int,
    *,
    refuse: Callable[[int, str], str | None] = lambda size, algorithm: None,
    progress: Callable[[float, str], None] | None = None,
) -> Sweep:
    """Time conv2d at every size with every algorithm, `repeats` samples per point (at least 3,
    fewer than `repeats` where one call is slow: about POINT_SECONDS per point).

    One warm-up call per point first; then the samples are taken round-robin over the points,
    so a burst of load on a shared machine hits every algorithm alike instead of one of them.
    refuse(size, algorithm) returns a reason to skip a point (the page's compute budget).
    On the GPU a sample is the median of 10 calls (CUDA events); on the CPU of as many calls as
    fit SAMPLE_SECONDS (1 to MAX_INNER), so the timer's resolution does not dominate tiny points.
    """
    import time

    import numpy as np

    import gpuops
    from gpuops.timing import measure

    gpu = gpuops.backend_info().gpu
    per_sample = 10 if gpu else 1
    sweep = Sweep(list(sizes), list(algorithms), "cuda-events" if gpu else "perf_counter", per_sample)
    sweep.points = {a: [None] * len(sizes) for a in algorithms}
    rng = np.random.default_rng(0)
    calls: dict[tuple[str, int], tuple[Callable[[], Any], int, int]] = {}
    samples: dict[tuple[str, int], list[float]] = {}
    steps = len(sizes) * len(algorithms) * (1 + repeats)
    done = 0

    def tick(text: str) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(min(1.0, done / steps), text)

    for i, size in enumerate(sizes):
        x_shape, w_shape = sweep_shapes(size)
        x = gpuops.asarray(rng.random(x_shape, dtype=np.float32))
        w = gpuops.asarray(rng.standard_normal(w_shape).astype(np.float32))
        for a in algorithms:
            why = refuse(size, a)
            if why:
                sweep.skipped[(a, size)] = why
                done += 1 + repeats
                continue

            def fn(a: str = a, x: Any = x, w: Any = w) -> Any:
                return gpuops.conv2d(x, w, padding=SWEEP_PAD, algorithm=a)

            t0 = time.perf_counter()
            measure(fn, gpu=gpu, warmup=0, repeat=1)  # warm-up (first call: plans, compiles)
            one = time.perf_counter() - t0
            n = max(3, min(repeats, int(POINT_SECONDS / max(one, 1e-9))))
            inner = per_sample if gpu else max(1, min(MAX_INNER, int(SAMPLE_SECONDS / max(one, 1e-9))))
            calls[(a, i)] = (fn, n, inner)
            samples[(a, i)] = []
            tick(f"warm-up {a} at {size} px")
    for k in range(repeats):
        for (a, i), (fn, n, inner) in calls.items():
            if k < n:
                samples[(a, i)].append(measure(fn, gpu=gpu, warmup=0, repeat=inner).median_ms)
            tick(f"sample {k + 1} of {repeats}: {a} at {sizes[i]} px")
    for (a, i), got in samples.items():
        sweep.points[a][i] = Spread(tuple(got), calls[(a, i)][2])
    if progress:
        progress(1.0, "done")
    return sweep
