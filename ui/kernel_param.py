"""A custom kernel: parsed from what a person types ("1 2 1; 2 4 2; 1 2 1") or from a link
(`direct_kernel=0,1,0_1,-4,1_0,1,0`), validated as a whole, never evaluated.

A kernel is a square K x K grid (1 <= K <= MAX_SIDE) of finite float32 values within +-MAX_ABS.
Anything else is refused with a ValueError that says where and why; nothing is padded, cropped,
clamped or rounded without saying so (values that float32 cannot hold exactly are reported by
`rounding_notes`). The setting's value is a tuple of rows of floats, or None (none given yet).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpuops.filters import MAX_KERNEL
from ui.state import Param

MAX_SIDE = MAX_KERNEL
MAX_ABS, LIMIT = 1e6, "1e6"  # gpuops.filters.check_custom_kernel's limit
MAX_TOKEN = 24  # characters of one typed value (a fraction included)
MAX_TEXT = MAX_SIDE * MAX_SIDE * (MAX_TOKEN + 1)
_DECIMAL = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,3})?"
_NUMBER = re.compile(rf"^{_DECIMAL}$")
_FRACTION = re.compile(rf"^({_DECIMAL})/({_DECIMAL})$")
_ROW_SPLIT = re.compile(r";[ \t]*\r?\n?|\r?\n")  # ";" and a new line after it: one break
_VALUE_SPLIT = re.compile(r"[\s,]+")

Cells = tuple[tuple[float, ...], ...]


def _shown(token: str) -> str:
    """Echo only a little of untrusted text, and only harmless characters."""
    return re.sub(r"[^A-Za-z0-9_.,+/\-]", "?", token[:12]) + ("…" if len(token) > 12 else "")


def parse_value(token: str, where: str) -> float:
    """One typed value ("0.25", "-1e-3", "1/16") as the float32 it becomes; ValueError otherwise."""
    if len(token) > MAX_TOKEN:
        raise ValueError(f"{where}: '{_shown(token)}' is longer than {MAX_TOKEN} characters")
    fraction = _FRACTION.match(token)
    if fraction:
        top, bottom = float(fraction.group(1)), float(fraction.group(2))
        if bottom == 0:
            raise ValueError(f"{where}: '{_shown(token)}' divides by zero")
        value = top / bottom
    elif _NUMBER.match(token):
        value = float(token)
    else:
        raise ValueError(f"{where}: '{_shown(token)}' is not a number (write 0.5, -2, 1e-3 or 1/16)")
    if not np.isfinite(value) or abs(value) > MAX_ABS:
        raise ValueError(f"{where}: '{_shown(token)}' is outside -{LIMIT} .. {LIMIT}")
    single = np.float32(value)
    if value != 0 and single == 0:
        raise ValueError(f"{where}: '{_shown(token)}' is too small for float32 (it would become 0)")
    return float(single)


def _grid(rows: list[list[str]]) -> Cells:
    """Rows of tokens (already split) as a checked square kernel."""
    if not rows:
        raise ValueError("the kernel is empty: type rows of numbers, e.g. 1 2 1; 2 4 2; 1 2 1")
    if len(rows) > MAX_SIDE:
        raise ValueError(f"{len(rows)} rows: a kernel has at most {MAX_SIDE}")
    width = len(rows[0])
    cells = []
    for r, row in enumerate(rows, start=1):
        if len(row) != width:
            count = f"{len(row)} value" + ("s" if len(row) != 1 else "")
            raise ValueError(f"row {r} has {count}, row 1 has {width}: every row needs the same count")
        values = []
        for c, token in enumerate(row, start=1):
            if token == "":
                raise ValueError(f"row {r}, value {c} is empty: type a number there")
            values.append(parse_value(token, f"row {r}, value {c}"))
        cells.append(tuple(values))
    if width != len(rows):
        raise ValueError(f"the kernel is {len(rows)} x {width}; it must be square (K x K)")
    if width > MAX_SIDE:
        raise ValueError(f"{width} values per row: a kernel has at most {MAX_SIDE}")
    return tuple(cells)


def _tokens(text: str) -> list[list[str]]:
    """Rows separated by ";" or new lines; values by commas (where a row has any: "1,,2" has an
    empty cell) or else by spaces."""
    if len(text) > MAX_TEXT:
        raise ValueError(f"the text is longer than {MAX_TEXT} characters")
    lines = [line.strip() for line in _ROW_SPLIT.split(text)]
    while lines and lines[-1] == "":  # a trailing ";" or new line ends the last row
        lines.pop()
    rows = []
    for r, line in enumerate(lines, start=1):
        if line == "":
            raise ValueError(f"row {r} is empty: remove it or type its values")
        rows.append([t.strip() for t in line.split(",")] if "," in line else _VALUE_SPLIT.split(line))
    return rows


def from_typed(text: str) -> Cells:
    """What a person typed, e.g. "1 2 1; 2 4 2; 1 2 1" or one row per line."""
    return _grid(_tokens(text))


def to_typed(cells: Cells) -> str:
    """The kernel as the editor shows it: one row per line, values as float32 prints them."""
    return "\n".join(" ".join(_number(v) for v in row) for row in cells)


def from_text(raw: str) -> Cells:
    """A link's form (rows joined by "_", values by ","); ValueError says what is wrong."""
    if len(raw) > MAX_TEXT:
        raise ValueError("too long")
    return _grid([[t.strip() for t in row.split(",")] for row in raw.split("_")])


def to_text(cells: Cells | None) -> str:
    if cells is None:
        return ""
    return "_".join(",".join(_number(v) for v in row) for row in cells)


def _number(value: float) -> str:
    """The shortest text that reads back as the same float32 value."""
    text = np.format_float_positional(np.float32(value), unique=True, trim="-")
    if len(text) > 12:  # very large or very small: scientific is shorter, still exact
        text = np.format_float_scientific(np.float32(value), unique=True, trim="-")
    return text


def rounding_notes(text: str, limit: int = 3) -> list[str]:
    """Typed values that float32 holds only approximately, said rather than silently changed:
    0.1 reads back as 0.1 (no note), 0.123456789 becomes 0.12345679 (a note)."""
    notes = []
    for r, row in enumerate(_tokens(text), start=1):
        for c, token in enumerate(row, start=1):
            value = parse_value(token, f"row {r}, value {c}")
            fraction = _FRACTION.match(token)
            typed = float(fraction.group(1)) / float(fraction.group(2)) if fraction else float(token)
            if float(_number(value)) != typed:
                notes.append(f"{_shown(token)} is {_number(value)} in float32")
    return notes[:limit]


def normalised(cells: Cells) -> Cells:
    """Scaled so the weights sum to 1 (a blur keeps the brightness); ValueError when they sum to
    about 0 (an edge filter: there is nothing to scale)."""
    arr = np.asarray(cells, dtype=np.float64)
    total = float(arr.sum())
    if abs(total) <= 1e-6 * max(1.0, float(np.abs(arr).sum())):
        raise ValueError("the weights sum to 0 (an edge filter): there is no sum to scale to 1")
    return as_cells(arr / total)


def flipped(cells: Cells) -> Cells:
    """Rotated by 180 degrees: correlating with the flipped kernel is the true convolution."""
    return as_cells(np.asarray(cells, dtype=np.float64)[::-1, ::-1])


def as_cells(grid: Any) -> Cells:
    """A 2-D array-like as the setting's value (float32 values, as the kernel will hold them)."""
    arr = np.asarray(grid, dtype=np.float32)
    return tuple(tuple(float(v) for v in row) for row in arr)


def identity(k: int) -> Cells:
    out = np.zeros((k, k), np.float32)
    out[(k - 1) // 2, (k - 1) // 2] = 1.0
    return as_cells(out)


@dataclass(frozen=True)
class KernelParam(Param):
    """A Param holding a custom kernel (None: none given). A link's kernel that is not a square
    grid of numbers is refused with a notice, never padded or cropped."""

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
