"""A custom kernel as a URL setting: `dc_kernel=0,1,0_1,-4,1_0,1,0` (rows joined by "_", values by
","; an empty value is an empty cell). A `Param` whose value is a tuple of rows of floats (NaN for
an empty cell) or None, parsed from untrusted text without evaluating it: at most 15 x 15 cells of
plain decimal numbers, anything else ignored with a notice."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ui.state import Param

_NUMBER = re.compile(r"^-?(\d{1,9}(\.\d{0,8})?|\.\d{1,8})(e-?\d{1,2})?$")
MAX_SIDE = 15
MAX_TEXT = MAX_SIDE * MAX_SIDE * 14

Cells = tuple[tuple[float, ...], ...]


def to_text(cells: Cells | None) -> str:
    if cells is None:
        return ""
    return "_".join(",".join("" if math.isnan(v) else f"{v:.6g}" for v in row) for row in cells)


def from_text(raw: str) -> Cells:
    """Parse `to_text`'s form; ValueError says what is wrong (never echoes more than a little)."""
    if len(raw) > MAX_TEXT:
        raise ValueError("too long")
    rows = raw.split("_")
    if len(rows) > MAX_SIDE:
        raise ValueError(f"more than {MAX_SIDE} rows")
    cells = []
    for row in rows:
        values = row.split(",")
        if len(values) > MAX_SIDE:
            raise ValueError(f"more than {MAX_SIDE} values in a row")
        parsed = []
        for v in values:
            v = v.strip()
            if v == "":
                parsed.append(float("nan"))
            elif _NUMBER.match(v):
                parsed.append(float(v))
            else:
                raise ValueError("not a list of numbers")
        cells.append(tuple(parsed))
    if len({len(r) for r in cells}) != 1:
        raise ValueError("rows of different lengths")
    return tuple(cells)


@dataclass(frozen=True)
class KernelParam(Param):
    """A Param holding a custom kernel (None: none given)."""

    def parse(self, raw: str) -> tuple[Any, str | None]:
        try:
            return from_text(raw), None
        except ValueError as exc:
            return (
                self.default,
                f"`{self.key}` in the link is not a kernel like 0,1,0_1,-4,1_0,1,0 ({exc}); ignored",
            )

    def text(self, value: Any) -> str:
        return to_text(value)


def as_cells(grid: Any) -> Cells:
    """A 2-D array-like (a data editor's frame, a list of lists) as the setting's value."""
    arr = np.asarray(grid, dtype=np.float64)
    return tuple(tuple(float(v) for v in row) for row in arr)


def fit_to(cells: Cells | None, k: int) -> Cells:
    """The kernel as k x k: cut or zero-extended around its centre (None: the k x k identity), so
    changing K keeps what was typed in the middle."""
    out = np.zeros((k, k))
    if cells is None:
        out[(k - 1) // 2, (k - 1) // 2] = 1.0
        return as_cells(out)
    src = np.asarray(cells, dtype=np.float64)
    h, w = src.shape
    for i in range(k):
        for j in range(k):
            si, sj = i - (k - 1) // 2 + (h - 1) // 2, j - (k - 1) // 2 + (w - 1) // 2
            if 0 <= si < h and 0 <= sj < w:
                out[i, j] = src[si, sj]
    return as_cells(out)
