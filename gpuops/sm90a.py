"""Kernels built for one architecture: sm_90a, where Hopper's warpgroup MMA (`wgmma`) exists.

Why this module: code for the generic target sm_90 runs on every later GPU, so it cannot use
instructions that only Hopper has; those need the architecture-specific target sm_90a, whose
code runs on compute capability 9.0 alone (H100, H200). cupy.RawModule always appends its own
target for the current device, so such a file goes through NVRTC's C API instead (the library
CuPy itself compiles with) to a cubin, which cupy.RawModule(path=...) loads. Public APIs of NVRTC
and CuPy only. The host plans a version from such a file only where `available` says the device
and the compiler can run it; anything else keeps the portable versions.
"""

from __future__ import annotations

import ctypes
import logging
import os
import tempfile
from typing import Any

from gpuops.cache import Memo

ARCH_FILES = {  # kernel file -> (NVRTC target, the only device it runs on)
    "conv2d_hopper.cu": ("sm_90a", "90"),
    "conv_backward_hopper.cu": ("sm_90a", "90"),
}
SWITCH_ENV = "CONV_EXPLORER_SM90A"  # "0": never plan sm_90a versions (the portable ones run)
_LIBRARIES = ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "nvrtc64_130_0.dll", "nvrtc64_120_0.dll")
_log = logging.getLogger(__name__)
_checked = Memo("sm90a_available", 16)
_folder: str | None = None


def needs_target(filename: str) -> bool:
    """Whether a kernel file is built for one architecture (and so through `compile_module`)."""
    return filename in ARCH_FILES


def _nvrtc() -> Any:
    """NVRTC's shared library (already loaded by CuPy where it has compiled anything)."""
    for name in _LIBRARIES:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise RuntimeError(f"NVRTC not found (tried {', '.join(_LIBRARIES)})")


def _check(lib: Any, status: int, what: str, program: Any = None) -> None:
    if status == 0:
        return
    log = ""
    if program is not None:
        size = ctypes.c_size_t()
        if lib.nvrtcGetProgramLogSize(program, ctypes.byref(size)) == 0 and size.value > 1:
            text = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(program, text)
            log = text.value.decode(errors="replace")
    raise RuntimeError(f"NVRTC {what} failed ({status}): {log}".strip())


def cubin(source: str, name: str, options: tuple[str, ...]) -> bytes:
    """NVRTC: `source` compiled with `options` (a --gpu-architecture=sm_XXa among them) to a cubin."""
    lib = _nvrtc()
    program = ctypes.c_void_p()
    _check(
        lib,
        lib.nvrtcCreateProgram(ctypes.byref(program), source.encode(), name.encode(), 0, None, None),
        "create",
    )
    try:
        encoded = [o.encode() for o in options]
        argv = (ctypes.c_char_p * len(encoded))(*encoded)
        _check(lib, lib.nvrtcCompileProgram(program, len(encoded), argv), "compile", program)
        size = ctypes.c_size_t()
        _check(lib, lib.nvrtcGetCUBINSize(program, ctypes.byref(size)), "cubin size")
        out = ctypes.create_string_buffer(size.value)
        _check(lib, lib.nvrtcGetCUBIN(program, out), "cubin")
        return out.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(program))


def compile_module(filename: str, source: str, options: tuple[str, ...]) -> Any:
    """The cupy.RawModule of an architecture-specific kernel file: NVRTC to a cubin, written to a
    private temporary folder of this process (RawModule loads modules from a path), then loaded."""
    import cupy

    global _folder
    target, _ = ARCH_FILES[filename]
    binary = cubin(source, filename, (f"--gpu-architecture={target}", *options))
    if _folder is None:
        _folder = tempfile.mkdtemp(prefix="conv-explorer-cubin-")  # mode 0700: this user's only
    fd, path = tempfile.mkstemp(suffix=".cubin", dir=_folder)
    with os.fdopen(fd, "wb") as f:
        f.write(binary)
    return cupy.RawModule(path=path)


def _device_of(filename: str) -> int | None:
    """The current device if it has this file's compute capability and CONV_EXPLORER_SM90A is
    not "0", else None."""
    if os.environ.get(SWITCH_ENV, "").strip() == "0":
        return None
    try:
        import cupy

        device = cupy.cuda.runtime.getDevice()
        capability = cupy.cuda.Device(device).compute_capability
    except Exception:  # no CuPy, no driver, no device: the portable kernels (or NumPy) run
        return None
    return device if capability == ARCH_FILES[filename][1] else None


def targets_device(filename: str = "conv2d_hopper.cu") -> bool:
    """Whether the current device is the one this file is written for (no compile: for menus)."""
    return _device_of(filename) is not None


def available(filename: str = "conv2d_hopper.cu") -> bool:
    """Whether the current device runs this file's kernels: CuPy with a device of the file's
    compute capability, NVRTC found, the file compiles there (tried once per process and device;
    a failure is logged and the portable versions run), and CONV_EXPLORER_SM90A is not "0"."""
    device = _device_of(filename)
    if device is None:
        return False

    def compiles() -> bool:
        from gpuops.launch import module

        try:
            module(filename)
        except Exception as error:  # any failure: keep the portable versions
            _log.warning("%s not used on this device: %s", filename, error)
            return False
        return True

    return _checked.get_or_make((device, filename), compiles)
