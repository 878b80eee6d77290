"""gpuops.autotune on any machine: gpuops.timing.gpu_times replaced by a scripted one (the choice
logic, not the GPU's timings, is what is checked here; the GPU tests time real kernels)."""

import pytest

from gpuops import autotune, timing


@pytest.fixture
def scripted(monkeypatch):
    """gpu_times(fn, ...) returns, per candidate, the next of its scripted round medians."""
    script: dict[str, list[float]] = {}
    calls: list[str] = []

    def gpu_times(fn, warmup, repeat):
        name = fn()
        calls.append(name)
        return [script[name].pop(0)] * repeat

    monkeypatch.setattr(timing, "gpu_times", gpu_times)
    return script, calls


def _candidate(name: str):
    return lambda: name


def _refusing():
    raise ValueError("cannot run these arguments")


def test_a_transient_in_one_round_does_not_decide(scripted):
    """a is slow in round 1 only (a first call, another process): its best round wins over b."""
    script, calls = scripted
    script.update(a=[9.0, 1.0], b=[2.0, 2.0])
    choice = autotune.fastest(("t1", 1), {"a": _candidate("a"), "b": _candidate("b")})
    assert choice == "a"
    assert calls == ["a", "b", "a", "b"]  # interleaved rounds


def test_refusals_are_skipped_and_the_choice_is_remembered(scripted):
    script, calls = scripted
    script.update(b=[3.0, 4.0], c=[5.0, 2.5])
    candidates = {"a": _refusing, "b": _candidate("b"), "c": _candidate("c")}
    assert autotune.fastest(("t2", 1), candidates) == "c"
    assert autotune.fastest(("t2", 1), candidates) == "c" and calls == ["b", "c", "b", "c"]
    assert autotune.fastest(("t3", 1), {"a": _refusing}) is None
