"""The trace build's check, shared by every kernel's tests: which thread wrote each output."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpuops import launch as launch_module
from gpuops.launch import Launch


def assert_the_map_names_each_writer(launch: Launch, *arrays: Any) -> None:
    """Run `launch` built with tracing on `arrays` (its output last): every output cell was stored
    by some thread, the kernel saw the Launch's grid and block, and the thread map
    (launch.thread_of, what the app draws) names exactly that thread, cell by cell."""
    writer, dims = launch_module.traced(launch, *arrays)
    assert (writer > 0).all(), "cells that no thread stored"
    assert dims == (*launch.grid, *launch.block)
    for index in np.ndindex(arrays[-1].shape):
        assert launch.thread_of(*index).trace_id(launch.grid, launch.block) == writer[index], index
