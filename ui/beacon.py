"""Room beacons: followers learn of the instructor's changes from a static file, not a rerun.

A follower's browser used to ask its worker every second whether the room changed: a fragment
rerun, about 7 ms of the worker's interpreter each (Streamlit's own floor is ~5 ms), so 40
followers of one worker spent 30% of it asking, also while the instructor's change was being
shown to them all (bench/rerun_cpu.py --followers). Under `scripts/dev.py serve` the worker that
publishes a change also writes the room's version to a small file in CONV_EXPLORER_BEACON_DIR,
which nginx serves at /beacon/CODE.json (docs/deploy.md); each follower's page mounts a
Components v2 component (ui/beacon.js) that reads it every EVERY_MS and asks for one rerun when
the version passes the one the page shows. Asking costs nginx a file read and the workers nothing.

The beacon is a hint: the store (ui/classroom.py) stays the truth, and the rerun reads the room
from it. A follower's slow poll (ui/classroom_ui.py, SLOW_POLL_S) still notices what the beacon
does not say: the instructor leaving, the room ending, the store not answering. Without the
variable (`scripts/dev.py app`, one process, rooms in memory) there is no beacon and followers
poll their worker every second as before. The workers of one deployment share the directory,
so it needs them on one machine (as `serve` runs them).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from ui.classroom import normalize_code

DIR_ENV = "CONV_EXPLORER_BEACON_DIR"
URL_PATH = "beacon/"  # relative to the page (/direct -> /beacon/CODE.json); nginx serves it
EVERY_MS = 250  # how often a follower's browser reads its room's beacon (nginx: a file read)
COMPONENT = "conv_explorer_beacon"
KEY = "room_beacon"  # the watcher's key: its trigger in st.session_state

_watch = st.components.v2.component(
    COMPONENT, js=(Path(__file__).resolve().parent / "beacon.js").read_text(encoding="utf-8")
)


def directory() -> Path | None:
    """Where this deployment's beacons live; None: no beacons (followers poll their worker)."""
    raw = os.environ.get(DIR_ENV, "").strip()
    return Path(raw) if raw else None


def _path(code: str) -> Path | None:
    where = directory()
    if where is None or normalize_code(code) != code:  # a file name only from a well-formed code
        return None
    return where / f"{code}.json"


def write(code: str, version: int) -> None:
    """Say that room `code` is at `version` (atomically: a reader sees the old file or the new)."""
    path = _path(code)
    if path is None:
        return
    with contextlib.suppress(OSError):  # a beacon not written: followers notice at the slow poll
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"v": int(version)}), encoding="utf-8")
        tmp.chmod(0o644)  # nginx's workers read it, whatever user they run as
        os.replace(tmp, path)


def remove(code: str) -> None:
    """The room ended: its beacon goes (a reader gets 404 and asks for nothing)."""
    path = _path(code)
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def read(code: str) -> int | None:
    """The version room `code`'s beacon says (for tests and tools); None without one."""
    path = _path(code)
    try:
        return int(json.loads(path.read_text(encoding="utf-8"))["v"]) if path else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def watch(code: str, shown: int | None, on_asked: Callable[[int], None]) -> None:
    """In a follower's run: the browser watches the room's beacon and asks for a rerun once it
    says a version after `shown` (the one this run applied; None: none yet).

    The rerun it asks for carries that page's widget values, those of the version it showed,
    which the session may have replaced meanwhile (its slow poll saw the change first): before
    that rerun's script, `on_asked` gets the version the asking page showed (-1: none)."""
    if _path(code) is None:
        return
    data = {"url": f"{URL_PATH}{code}.json", "shown": -1 if shown is None else shown, "every_ms": EVERY_MS}

    def asked() -> None:  # a callback: it runs before the script, with the trigger in session_state
        event = st.session_state.get(KEY)
        payload = event.get("changed") if hasattr(event, "get") else getattr(event, "changed", None)
        with contextlib.suppress(TypeError, KeyError, ValueError):  # another shape: no claim
            on_asked(int(payload["shown"]))

    _watch(data=data, key=KEY, height=0, on_changed_change=asked)
