"""One cache policy for the compute core: bounded, least recently used, keys compared by repr.

Every memo in gpuops is a `Memo` (argument checks, plans, compiled modules, packed launches,
ready calls, autotune choices), so there is one rule for how big a cache gets and what it
forgets first. Arguments as a caller gave them are keyed by their repr: 1, 1.0 and True are
equal as dict keys but are different arguments to us (an int stride, a float, a bool).
Values that were already checked (shapes, geometries, launches) are keys as they are.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")
_MEMOS: list[Memo] = []


class Memo:
    """A bounded map that forgets the least recently used entry first; safe across threads."""

    def __init__(self, name: str, size: int) -> None:
        self.name, self.size = name, size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        _MEMOS.append(self)

    def get(self, key: Hashable) -> Any:
        """The value stored under key, or None."""
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def get_or_make(self, key: Hashable, make: Callable[[], T]) -> T:
        value = self.get(key)
        if value is None:
            value = make()
            self.put(key, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def snapshot(self) -> dict[Hashable, Any]:
        with self._lock:
            return dict(self._items)


def memoised(name: str, size: int) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator: remember f's results in a Memo, keyed by the repr of its arguments."""

    def wrap(f: Callable[..., T]) -> Callable[..., T]:
        memo = Memo(name, size)

        @functools.wraps(f)
        def cached(*args: Any, **kwargs: Any) -> T:
            key = repr((args, sorted(kwargs.items())))
            return memo.get_or_make(key, lambda: f(*args, **kwargs))

        cached.memo = memo  # type: ignore[attr-defined]
        return cached

    return wrap


def sizes() -> dict[str, int]:
    """Entries per cache, for tests and the benchmark report."""
    return {memo.name: len(memo) for memo in _MEMOS}
