"""One process-wide memo for the figure builders: a classroom asks for the same figures.

When an instructor moves a slider, thirty following sessions rerun with the same image and the
same settings, and each would build the same Plotly figures again: on the classroom server that
building (and validating) is most of a rerun's time, all of it under the one interpreter lock
(bench/hostile_load.py, profiled). A builder decorated with @figure_memo returns the figure it
built before for equal arguments, from any session.

- Equal means the same values: arrays by dtype, shape and bytes; numbers, strings, tuples,
  lists, dicts and (frozen) dataclasses by content. An argument of any other type, or arrays of
  more than MAX_ARRAY_BYTES in all, skips the memo (the builder runs as before).
- The figure is shared, never copied: callers must not change it (the pages hand it to
  st.plotly_chart, which reads it). Builders must be pure (their figure a function of their
  arguments): the viz modules are.
- A memoised figure is frozen: its plain dict (what st.plotly_chart and to_html read, by
  to_dict(), a deep copy of the whole figure each time: ~1 ms per figure, ~6 ms per Direct rerun)
  is built once, when the figure is, and handed out shared; so is its JSON. st.plotly_chart encodes
  the dict with plotly.io.to_json on every rerun, and for a class following the instructor that
  was ~18% of the server's time (py-spy, one session toggling the stride on the Direct page):
  while the memo is on, plotly.io.to_json answers a frozen dict with the string it encoded the
  first time (the same call, the same string), and passes every other call through unchanged.
- Off until enable() (the app calls it once per process): tests of the builders themselves get
  fresh figures.
"""

from __future__ import annotations

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


def _no_checkpoint() -> None:
    pass


# Called before a figure is built (not when the memo has it): the app sets ui.fair_share.give_way
# here (ui/server_tuning.py), where a long run steps aside for short ones. Building a figure of a
# 1024 px image is tens of milliseconds of Python under the interpreter lock, between the points
# where a long run otherwise gives way (each element it sends).
before_build: Callable[[], None] = _no_checkpoint
_enabled = False
stats = {"hits": 0, "misses": 0, "skipped": 0}


class _UnkeyableError(Exception):
    """An argument the memo cannot compare by value: the builder runs without it."""


class _FrozenDict(dict):
    """A frozen figure's plain dict; its JSON is encoded once (see _to_json)."""

    __slots__ = ("json",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.json: str | None = None


class _Frozen:
    """Mixed in before a memoised figure's own class: to_dict() is the dict built at freezing."""

    _frozen_dict: _FrozenDict

    def to_dict(self) -> dict:
        return self._frozen_dict

    def to_plotly_json(self) -> dict:
        return self._frozen_dict


_frozen_classes: dict[type, type] = {}


def freeze(fig: Any) -> Any:
    """The figure, its dict built now and kept (its class becomes a subclass with _Frozen first)."""
    if isinstance(fig, _Frozen) or not hasattr(fig, "to_dict"):
        return fig
    cls = type(fig)
    frozen = _frozen_classes.setdefault(cls, type(f"Frozen{cls.__name__}", (_Frozen, cls), {}))
    fig._frozen_dict = _FrozenDict(fig.to_dict())  # a leading underscore: Plotly lets the attribute through
    fig.__class__ = frozen
    return fig


_plain_to_json: Callable[..., str] | None = None  # plotly.io.to_json as Plotly defines it


def _to_json(fig: Any, validate: bool = True, pretty: bool = False, remove_uids: bool = True,
             engine: str | None = None) -> str:  # fmt: skip
    """plotly.io.to_json, with the JSON of a frozen dict encoded once (the call st.plotly_chart
    makes: validate=False, the other arguments left as they are)."""
    assert _plain_to_json is not None
    if type(fig) is not _FrozenDict or validate or pretty or not remove_uids or engine is not None:
        return _plain_to_json(fig, validate=validate, pretty=pretty, remove_uids=remove_uids, engine=engine)
    if fig.json is None:  # two sessions may encode it at once: equal strings
        fig.json = _plain_to_json(fig, validate=False)
    return fig.json


def enable(on: bool = True) -> None:
    """Turn the memo (and the frozen figures' JSON in plotly.io.to_json) on or off."""
    global _enabled, _plain_to_json
    import plotly.io as pio

    _enabled = on
    if on and pio.to_json is not _to_json:
        _plain_to_json, pio.to_json = pio.to_json, _to_json
    elif not on and _plain_to_json is not None:
        pio.to_json = _plain_to_json


def clear() -> None:
    _figures.clear()


def _feed(h: Any, value: Any, budget: list[int]) -> None:
    """Feed a canonical encoding of value to the hash (its type first, so 1 and 1.0 differ)."""
    if value is None or isinstance(value, bool | int | float | str | bytes | complex):
        h.update(f"{type(value).__name__}:{value!r};".encode())
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
            before_build()
            return fn(*args, **kwargs)
        fig = _figures.get(key)
        if fig is not None:
            stats["hits"] += 1
            return fig
        before_build()
        fig = freeze(fn(*args, **kwargs))  # unlocked: two sessions may build one figure at once, both equal
        stats["misses"] += 1
        _figures.put(key, fig)
        return fig

    return memoised  # type: ignore[return-value]
