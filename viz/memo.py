"""One process-wide memo for the figure builders: a classroom asks for the same figures.

When an instructor moves a slider, thirty following sessions rerun with the same image and the
same settings, and each would build the same Plotly figures again: on the classroom server that
building (and validating) is most of a rerun's time, all of it under the one interpreter lock
(bench/hostile_load.py, profiled). A builder decorated with @figure_memo returns the figure it
built before for equal arguments, from any session.

- Equal means the same values: arrays by dtype, shape and bytes; numbers, strings, ranges,
  tuples, lists, dicts and (frozen) dataclasses by content. An argument of any other type, or arrays of
  more than MAX_ARRAY_BYTES in all, skips the memo (the builder runs as before).
- The figure is shared, never copied: callers must not change it (the pages hand it to
  st.plotly_chart, which reads it). Builders must be pure (their figure a function of their
  arguments): the viz modules are.
- The memo is on in the app; `enable(False)` turns it off for tests of the builders themselves.
- Nothing of Plotly or Streamlit is replaced: the figure is an ordinary go.Figure. It carries
  its key's digest (`digest_of`), which names its content: ui/charts.py serialises a figure
  with a digest once per process and lets Streamlit's cache replay the chart after.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from gpuops.cache import Memo

SLOTS = 64  # figures kept, least recently used first out
MAX_ARRAY_BYTES = 16 << 20  # larger inputs (a 1024 px image in float32 is 12 MiB) are built anew

F = TypeVar("F", bound=Callable[..., Any])

_figures = Memo("figures", SLOTS)  # the compute core's one cache policy: bounded, LRU, thread-safe


_enabled = True
_DIGEST = "_memo_digest"  # the attribute a shared figure keeps its digest in
stats = {"hits": 0, "misses": 0, "skipped": 0}


class _UnkeyableError(Exception):
    """An argument the memo cannot compare by value: the builder runs without it."""


def enable(on: bool = True) -> None:
    """Turn the memo on (the default) or off."""
    global _enabled
    _enabled = on


def clear() -> None:
    _figures.clear()


def digest_of(fig: Any) -> str | None:
    """The digest of the builder and arguments that made fig, if the memo shares it; else None.
    Equal digests mean equal figures (builders are pure)."""
    return getattr(fig, _DIGEST, None)


def _feed(h: Any, value: Any, budget: list[int]) -> None:
    """Feed a canonical encoding of value to the hash (its type first, so 1 and 1.0 differ)."""
    if value is None or isinstance(value, bool | int | float | str | bytes | complex):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    elif isinstance(value, range):
        h.update(f"range:{value.start},{value.stop},{value.step};".encode())
    elif isinstance(value, np.generic):
        h.update(f"np.{value.dtype}:{value.item()!r};".encode())
    elif isinstance(value, np.ndarray):
        budget[0] -= value.nbytes
        if budget[0] < 0:
            raise _UnkeyableError
        h.update(f"nd:{value.dtype.str}:{value.shape};".encode())
        if value.dtype == object:  # e.g. cell texts: by their values, one by one
            _feed(h, value.ravel().tolist(), budget)
        else:
            h.update(np.ascontiguousarray(value).data)
    elif isinstance(value, tuple | list):
        h.update(f"{type(value).__name__}:{len(value)}[".encode())
        for item in value:
            _feed(h, item, budget)
        h.update(b"]")
    elif isinstance(value, dict):
        h.update(f"dict:{len(value)}{{".encode())
        for k in sorted(value, key=repr):
            _feed(h, k, budget)
            _feed(h, value[k], budget)
        h.update(b"}")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(f"dc:{type(value).__module__}.{type(value).__qualname__}(".encode())
        for f in dataclasses.fields(value):
            _feed(h, f.name, budget)
            _feed(h, getattr(value, f.name), budget)
        h.update(b")")
    else:
        raise _UnkeyableError


def key_of(fn: Callable, args: tuple, kwargs: dict) -> bytes | None:
    """A digest of the builder and its arguments' values; None when an argument has no value key."""
    h = hashlib.sha256()  # of the hashes at hand the fastest over arrays here (SHA extensions: 1.4 GB/s)
    h.update(f"{fn.__module__}.{fn.__qualname__};".encode())
    try:
        _feed(h, args, [MAX_ARRAY_BYTES])
        _feed(h, kwargs, [MAX_ARRAY_BYTES])
    except _UnkeyableError:
        return None
    return h.digest()


def figure_memo(fn: F) -> F:
    """Decorate a pure figure builder: equal arguments, the figure built before (when enabled)."""

    @functools.wraps(fn)
    def memoised(*args: Any, **kwargs: Any) -> Any:
        if not _enabled:
            return fn(*args, **kwargs)
        key = key_of(fn, args, kwargs)
        if key is None:
            stats["skipped"] += 1
            return fn(*args, **kwargs)
        fig = _figures.get(key)
        if fig is not None:
            stats["hits"] += 1
            return fig
        fig = fn(*args, **kwargs)  # unlocked: two sessions may build one figure at once, both equal
        with contextlib.suppress(AttributeError, TypeError):  # a result that takes no attribute
            setattr(fig, _DIGEST, key.hex())
        stats["misses"] += 1
        _figures.put(key, fig)
        return fig

    return memoised  # type: ignore[return-value]
