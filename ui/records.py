"""What a page computed in one rerun, as the record types its sections read.

They live here, not in the page scripts: Streamlit executes a page's file again on every rerun,
and a class statement there built the class again each time (a frozen dataclass of eleven
fields: 1.8 ms of interpreter time per rerun, found with py-spy under the hostile load test)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

import gpuops
from gpuops.maps import conv_backward
from viz.unfold_fold import Overview


@dataclass(frozen=True)
class Conv:
    """One computed convolution (Direct page) and what the page draws from it."""

    kernel: np.ndarray
    weight: np.ndarray
    groups: int
    g: gpuops.WindowGeometry
    mode: str
    ran: str
    launch: object
    out: np.ndarray  # (M, H_out, W_out)
    out_pixels: np.ndarray  # RGB for showing
    shown_as: str
    key: tuple


@dataclass(frozen=True)
class Example:
    """The small single-channel example every section of the backward page draws: x (H, W),
    w (K, K), dY (H_out, W_out) and what the chosen kernels computed from them (on the GPU when
    there is one)."""

    g: gpuops.WindowGeometry
    x: np.ndarray
    w: np.ndarray
    dy: np.ndarray
    dx: np.ndarray
    dw: np.ndarray
    plan: gpuops.BackwardPlan
    fmt: str
    note: str
    key: tuple

    @property
    def w_flipped(self) -> np.ndarray:
        return conv_backward.flipped(self.w)


class Folded(NamedTuple):
    """What the Unfold / fold page shows of unfold and fold, kept per image and settings."""

    overview: Overview  # block means of the patch matrix, small enough to draw
    folded: np.ndarray  # fold(unfold(x))
    counts: np.ndarray  # how many patches hold each pixel
    restored: np.ndarray  # folded / counts where covered, 0 elsewhere
    err: float  # the largest |restored - x| on covered pixels
    uncovered: int  # pixels no patch holds
