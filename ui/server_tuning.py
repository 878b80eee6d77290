"""Once per server process: the garbage collector and the lock hand-over set for many sessions.

A classroom server holds thirty sessions' figures, results and widget trees, and every rerun
allocates tens of thousands of small dicts and lists (Plotly specs). CPython's default collector
runs a young collection every 700 allocations and, every so often, a full one over that whole
heap, all under the one interpreter lock: with 20 sessions moving sliders it took about 15% of the
server's time on the 2-core machine (bench/hostile_load.py, measured with gc.callbacks). Fewer
young collections and freezing what was loaded at start-up (modules, Streamlit, Plotly's
validators: never garbage) cut that to about 5% and raised light reruns per minute by about 14%.
Nothing here changes what is collected, only how often the collector looks. The event loop is
woken once per burst of a session's messages instead of once per message (ui/wakeups.py).

The interpreter also hands its lock from thread to thread more often (every SWITCH_INTERVAL_S
instead of 5 ms). The event loop that carries every session's messages needs the lock briefly
between socket writes; beside threads busy with the largest kernels it waited up to 5 ms each
time (the "convoy effect"), and light reruns' replies queued behind. With the hostile mix
(bench/hostile_load.py, light pause 2-6 s, 60 s): light p95 1.5-1.7 s at 5 ms (three runs), 0.7
and 1.0 s at 1 ms; at 0.2 ms the switching itself cost more (p95 5.2 s).

Optional modules a page imports on first use are imported here, at the process's first run, and
not in the middle of a class: PyTorch, the Benchmarks page's peer where it is installed, takes
2.4 s to import on the 2-core machine, 0.4 s of it loading its shared library with the
interpreter lock held, and the rest its modules' Python, sharing the lock with every session
(py-spy of the hostile mix: 2.25 s of interpreter-lock time in one burst, when the first student
pressed "Run the benchmark"). Imported before gc.freeze, its objects are frozen with the rest.
CONV_EXPLORER_PRELOAD=off skips this (the test suite sets it: its servers measure nothing and
each would pay the import).
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import os
import sys
import threading

from ui import fair_share, wakeups
from viz import memo

YOUNG_THRESHOLD = 50_000  # allocations between young collections (CPython's default: 700)
OLDER_THRESHOLDS = (20, 100)  # young collections per middle one; middle ones per full one
SWITCH_INTERVAL_S = 0.001  # CPython's default: 0.005

PRELOAD = ("torch",)  # gpuops.bench imports it for the Benchmarks page's peer timings

_lock = threading.Lock()
_tuned = False


def preload_optional_imports() -> list[str]:
    """Import the PRELOAD modules that are installed (unless CONV_EXPLORER_PRELOAD=off); returns
    the names imported."""
    if os.environ.get("CONV_EXPLORER_PRELOAD", "").strip().lower() == "off":
        return []
    loaded = []
    for name in PRELOAD:
        if importlib.util.find_spec(name) is None:
            continue
        try:
            importlib.import_module(name)
        except (ImportError, OSError):  # a broken install: the page that needs it says so itself
            continue
        loaded.append(name)
    return loaded


def tune_process() -> bool:
    """Set the thresholds and freeze the objects alive now (the first call in a process only;
    the app calls it on every run, after its imports). True when this call tuned."""
    global _tuned
    with _lock:
        if _tuned:
            return False
        preload_optional_imports()
        gc.collect()
        gc.freeze()  # start-up objects move to a permanent generation no collection scans
        gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        wakeups.install()  # one event-loop wake-up per burst of a session's messages (ui/wakeups.py)
        wakeups.checkpoint = fair_share.give_way  # where a long run steps aside for short ones
        memo.before_build = fair_share.give_way  # and before it builds a figure
        _tuned = True
        return True
