"""Backend choice, fallbacks with their reasons, and timing (CPU), plus GPU-only behaviour."""

import numpy as np
import pytest

import gpuops
from gpuops import backend
from gpuops.timing import measure


@pytest.fixture
def env_backend(monkeypatch):
    def set_to(value):
        monkeypatch.setenv(backend.ENV_VAR, value)
        backend.reset_backend()

    yield set_to
    backend.reset_backend()


def test_forced_numpy_backend_says_so(env_backend):
    env_backend("numpy")
    info = gpuops.backend_info()
    assert not info.gpu and "CONV_EXPLORER_BACKEND=numpy" in info.reason
    assert "CPU / NumPy" in info.label() and "timings are CPU timings" in info.label()
    assert gpuops.default_xp() is np
    assert isinstance(gpuops.asarray([[1, 2]]), np.ndarray)


def test_bad_backend_value_is_a_clear_error(env_backend):
    env_backend("tpu")
    with pytest.raises(ValueError, match="CONV_EXPLORER_BACKEND='tpu' is not one of"):
        gpuops.backend_info()


def test_forcing_cupy_without_a_gpu_is_an_error(env_backend):
    ok, _ = __import__("tests.support.helpers", fromlist=["gpu_available"]).gpu_available()
    if ok:
        pytest.skip("this machine has a GPU; the error path cannot happen here")
    env_backend("cupy")
    with pytest.raises(RuntimeError, match="CONV_EXPLORER_BACKEND=cupy, but the GPU cannot be used"):
        gpuops.backend_info()


class SteppedClock:
    """A clock that each call of the timed function moves on by its next duration (seconds)."""

    def __init__(self, durations):
        self.now, self.durations = 0.0, list(durations)

    def __call__(self):
        return self.now

    def run(self):
        self.now += self.durations.pop(0)


def test_cpu_timing_is_the_median_of_the_timed_runs_after_warm_up():
    clock = SteppedClock([9.0, 0.005, 0.001, 0.003, 0.002, 0.004])  # the first is the warm-up
    t = measure(clock.run, gpu=False, warmup=1, repeat=5, clock=clock)
    assert (t.clock, t.runs) == ("perf_counter", 5)
    assert t.median_ms == pytest.approx(3.0)  # median of 5, 1, 3, 2, 4 ms; the 9 s warm-up left out
    assert not clock.durations


def test_the_garbage_collector_is_off_during_timed_calls_only():
    """As timeit: a collection started inside a timed call pauses the host for it alone. The
    warm-up calls run with the collector as it was; it is on again afterwards (or stays off)."""
    import gc

    seen = []
    measure(lambda: seen.append(gc.isenabled()), gpu=False, warmup=2, repeat=3)
    assert seen == [True, True, False, False, False] and gc.isenabled()
    gc.disable()
    try:
        measure(lambda: None, gpu=False, warmup=0, repeat=2)
        assert not gc.isenabled(), "a caller's choice is kept"
    finally:
        gc.enable()


def test_cpu_timing_stops_repeating_past_max_seconds():
    clock = SteppedClock([0.2, 0.2, 0.2, 0.2, 0.2])
    t = measure(clock.run, gpu=False, warmup=0, repeat=5, max_seconds=0.5, clock=clock)
    assert t.runs == 3 and t.median_ms == pytest.approx(200.0)  # 0.6 s after the third run: stop


def _fake_cupy(device_count):
    """A stand-in 'cupy' module whose runtime behaves as on a machine without a usable GPU."""
    import types

    runtime = types.SimpleNamespace(getDeviceCount=device_count)
    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=runtime)
    fake.__version__ = "0.0-fake"
    return fake


def test_cupy_installed_but_no_driver_falls_back_to_numpy_with_the_reason(monkeypatch, env_backend):
    def no_driver():
        raise RuntimeError("CUDA driver version is insufficient")

    monkeypatch.setitem(__import__("sys").modules, "cupy", _fake_cupy(no_driver))
    env_backend("")
    info = gpuops.backend_info()
    assert not info.gpu
    assert "no usable GPU" in info.reason and "CUDA driver version is insufficient" in info.reason
    assert gpuops.default_xp() is np


def test_cupy_installed_but_no_device_falls_back_to_numpy(monkeypatch, env_backend):
    monkeypatch.setitem(__import__("sys").modules, "cupy", _fake_cupy(lambda: 0))
    env_backend("")
    assert gpuops.backend_info().reason == "CuPy found no CUDA device"


def test_kernels_that_fail_to_compile_fall_back_to_numpy_with_the_reason(monkeypatch, env_backend):
    import types

    from gpuops import launch

    fake = _fake_cupy(lambda: 1)
    fake.cuda.runtime.getDeviceProperties = lambda i: {"name": b"Fake GPU"}
    fake.cuda.runtime.runtimeGetVersion = lambda: 12040
    fake.cuda.runtime.driverGetVersion = lambda: 12040
    fake.cuda.Device = lambda: types.SimpleNamespace(id=0)
    monkeypatch.setitem(__import__("sys").modules, "cupy", fake)

    def broken(filename):
        raise RuntimeError("nvrtc: error: invalid option")

    monkeypatch.setattr(launch, "module", broken)
    env_backend("")
    info = gpuops.backend_info()
    assert not info.gpu and "the CUDA kernels failed to compile" in info.reason and "nvrtc" in info.reason


@pytest.mark.gpu
def test_backend_reports_the_gpu():
    info = gpuops.backend_info()
    assert info.gpu and info.device and info.cupy_version
    assert info.device in info.label()


@pytest.mark.gpu
def test_gpu_timing_uses_cuda_events():
    import gc

    import cupy as cp

    x = cp.ones((1, 3, 256, 256), cp.float32)
    w = cp.ones((8, 3, 3, 3), cp.float32)
    collector = []

    def call():
        collector.append(gc.isenabled())
        return gpuops.conv2d(x, w, padding=1)

    t = measure(call, gpu=True, warmup=2, repeat=5)
    assert t.clock == "cuda-events" and t.runs == 5 and t.median_ms > 0
    assert collector == [True] * 2 + [False] * 5 and gc.isenabled(), "off for the queued calls only"


_SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {}
}
"""


@pytest.mark.gpu
def test_gpu_timing_hides_host_work_behind_the_previous_calls_kernels():
    """Calls are queued, not synchronized one by one: host work shorter than the GPU's shows in
    the timing only where it stalls the GPU. A kernel spinning a fixed number of clock cycles,
    then host work of about half its time: timed alone and with the host work, the two medians
    stay within a quarter of the kernel's time (timed call by call they would differ by half)."""
    import time

    import cupy as cp

    spin = cp.RawKernel(_SPIN, "spin")
    cycles = np.int64(2_000_000)  # about 1 ms at the H100's 1.98 GHz

    def kernel():
        spin((1,), (1,), (cycles,))

    alone = measure(kernel, gpu=True, warmup=2, repeat=9).median_ms

    def kernel_then_host_work():
        kernel()
        until = time.perf_counter() + alone / 2e3
        while time.perf_counter() < until:
            pass

    with_host = measure(kernel_then_host_work, gpu=True, warmup=2, repeat=9).median_ms
    assert abs(with_host - alone) < alone / 4, (alone, with_host)
