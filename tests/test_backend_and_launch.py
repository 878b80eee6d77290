"""Backend choice, launch geometry and timing work without a GPU."""

from pathlib import Path

import numpy as np
import pytest

import gpuops
from gpuops import backend
from gpuops import launch as launch_module
from gpuops.cuda_kernels import sources_for
from gpuops.launch import conv_direct_launch, conv_implicit_gemm_launch, conv_tiled_launch, row_launch
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
    ok, _ = __import__("tests.conftest", fromlist=["gpu_available"]).gpu_available()
    if ok:
        pytest.skip("this machine has a GPU; the error path cannot happen here")
    env_backend("cupy")
    with pytest.raises(RuntimeError, match="CONV_EXPLORER_BACKEND=cupy, but the GPU cannot be used"):
        gpuops.backend_info()


def test_direct_launch_maps_outputs_to_threads():
    g = gpuops.window_geometry(40, 70, 3, padding=1)  # 40 x 70 output: 3 x 5 tiles of 16 x 16
    launch = conv_direct_launch(g, N=2, M=4)
    assert launch.grid == (15, 4, 2) and launch.block == (16, 16, 1)
    assert launch.thread_of(1, 3, 17, 69) == ((1 * 5 + 4, 3, 1), (5, 1, 0))


def test_tiled_launch_covers_filters_in_blocks_of_eight():
    g = gpuops.window_geometry(56, 56, 3, padding=1)
    launch = conv_tiled_launch(g, N=1, C=6, M=20, groups=2)  # 10 filters per group -> 2 blocks each
    # tiles of 16 rows x 32 columns (2 pixels per thread): 4 x 2 tiles cover the 56 x 56 output
    assert launch.tile == (16, 32) and launch.grid == (8, 4, 1)
    assert launch.in_tile == (18, 34)  # 16 + 2 halo rows, 32 + 2 halo columns
    assert list(launch.filters_of_block(1)) == [8, 9]
    assert list(launch.filters_of_block(2)) == list(range(10, 18))
    # filter 19: group 1, second block of it -> blockIdx.y 3; pixel (20, 33): tile (1, 1) -> blockIdx.x 3;
    # column 33 is column 1 of its tile, owned by thread x 1 (pixels 1 and 17 of the tile)
    assert launch.thread_of(0, 19, 20, 33) == ((3, 3, 0), (1, 4, 0))
    assert launch.shared_bytes <= 48 * 1024


def test_implicit_gemm_launch_numbers_pixels_across_the_batch():
    g = gpuops.window_geometry(10, 10, 3, padding=1)  # 10 x 10 output: L = 100 pixels per sample
    launch = conv_implicit_gemm_launch(g, N=3, M=100, groups=1)
    # 300 pixels in blocks of 128 -> 3 blocks; 100 filters in blocks of 64 -> 2 blocks
    assert launch.grid == (3, 2, 1) and launch.block == (128, 1, 1)
    assert list(launch.filters_of_block(1)) == list(range(64, 100))
    # sample 1, (3, 5): pixel 100 + 35 = 135 = block 1, offset 7; filter 70 = block 1, offset 6.
    # Thread t owns pixel offsets 4*(t % 16) + 0..3 (and +64) and filter offsets 4*(t // 16) + 0..3
    # (and +32): offset 7 -> t % 16 = 1, offset 6 -> t // 16 = 1, so t = 17.
    assert launch.thread_of(1, 70, 3, 5) == ((1, 1, 0), (17, 0, 0))
    # offset 69 = 64 + 5 is the second half of thread t % 16 = 1's pixels
    assert launch.thread_of(0, 0, 6, 9)[1][0] % 16 == 1


def test_implicit_gemm_refuses_more_pixels_than_32_bit_ints_count():
    g = gpuops.window_geometry(4096, 4096, 3, padding=1)
    with pytest.raises(ValueError, match="32-bit"):
        conv_implicit_gemm_launch(g, N=200, M=8, groups=1)


def test_kernel_tile_constants_match_the_cuda_source():
    text = (Path(gpuops.__file__).parent / "kernels" / "conv2d.cu").read_text()
    for name in ("IG_BM", "IG_BN", "FILTERS_PER_BLOCK", "PIXELS_PER_THREAD"):
        assert f"#define {name} {getattr(launch_module, name)}" in text, name


def test_every_filter_belongs_to_exactly_one_block():
    g = gpuops.window_geometry(9, 9, 3)
    launch = conv_tiled_launch(g, N=1, C=9, M=27, groups=3)
    covered = [m for by in range(launch.grid[1]) for m in launch.filters_of_block(by)]
    assert covered == list(range(27))


def test_row_launch_maps_elements_to_threads():
    narrow = row_launch("unfold_kernel", rows=1000, width=56)  # 64 threads per row, 4 rows per block
    assert narrow.block == (64, 4, 1) and narrow.grid == (250, 1, 1)
    assert narrow.thread_of(999, 55) == ((249, 0, 0), (55, 3, 0), (0, 0))
    tiny = row_launch("unfold_kernel", rows=100, width=7)  # 8 threads per row: a warp spans 4 rows
    assert tiny.block == (8, 32, 1) and tiny.grid == (4, 1, 1)
    many = row_launch("unfold_kernel", rows=10**6, width=56)  # the grid is capped; blocks loop
    assert many.grid == (4096, 1, 1)
    # row 4*4096 + 1: block row 4096 wraps to block 0 on its second pass; thread row 1
    assert many.thread_of(4 * 4096 + 1, 0) == ((0, 0, 0), (0, 1, 0), (1, 0))
    wide = row_launch("reflect_pad2d", rows=10, width=2048)  # 256 threads walk each row, 8 steps
    assert wide.block == (256, 1, 1) and wide.grid == (10, 1, 1)
    assert wide.thread_of(7, 1000) == ((7, 0, 0), (1000 % 256, 0, 0), (0, 3))


def test_kernel_sources_are_readable_without_a_gpu():
    files = sources_for("conv2d.cu")
    assert list(files) == ["index_math.cuh", "conv2d.cu"]
    assert "conv2d_direct" in files["conv2d.cu"] and "reflect_index" in files["index_math.cuh"]


def test_cpu_timing_reports_a_median():
    t = measure(lambda: np.ones(1000).sum(), gpu=False, warmup=1, repeat=5)
    assert t.clock == "perf_counter" and t.runs == 5 and t.median_ms >= 0


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

    from gpuops import cuda_kernels

    fake = _fake_cupy(lambda: 1)
    fake.cuda.runtime.getDeviceProperties = lambda i: {"name": b"Fake GPU"}
    fake.cuda.runtime.runtimeGetVersion = lambda: 12040
    fake.cuda.runtime.driverGetVersion = lambda: 12040
    fake.cuda.Device = lambda: types.SimpleNamespace(id=0)
    monkeypatch.setitem(__import__("sys").modules, "cupy", fake)

    def broken(filename):
        raise RuntimeError("nvrtc: error: invalid option")

    monkeypatch.setattr(cuda_kernels, "module", broken)
    env_backend("")
    info = gpuops.backend_info()
    assert not info.gpu and "the CUDA kernels failed to compile" in info.reason and "nvrtc" in info.reason
