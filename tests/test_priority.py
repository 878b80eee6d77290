"""ui/priority.py and its use in ui/fair_share.script_turn: a long run's script thread drops its CPU
priority (a heavy session's run from its start, a light session's run once it has held its turn
LONG_S), a short run keeps its own, and the thread gets its priority back at the end where the
system allows it. Read back with os.getpriority on the thread itself (Linux keeps one per thread)."""

from __future__ import annotations

import os
import threading
import time
from types import SimpleNamespace

import pytest

from ui import fair_share, priority

pytestmark = pytest.mark.skipif(not priority.SUPPORTED, reason="per-thread nice values are Linux's")


def nice_of(thread_id: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, thread_id)


def on_a_thread(body):
    """Run body() on a fresh thread (a script run's thread is fresh too) and return its result."""
    result: dict = {}

    def target() -> None:
        try:
            result["value"] = body()
        except BaseException as exc:  # handed to the test's thread
            result["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join(10)
    if "error" in result:
        raise result["error"]
    return result["value"]


def test_the_environment_sets_the_nice_value_or_turns_it_off() -> None:
    assert priority.from_environment(None) == priority.LONG_RUN_NICE == 19
    assert priority.from_environment(" ") == 19
    assert priority.from_environment("0") == 0 and priority.from_environment("10") == 10
    for bad in ("-1", "20", "low", "1.5"):
        with pytest.raises(ValueError, match="CONV_EXPLORER_LONG_RUN_NICE"):
            priority.from_environment(bad)


def test_a_demoted_thread_runs_at_the_long_run_nice_then_gets_its_own_back() -> None:
    def body():
        me = threading.get_native_id()
        before = nice_of(me)
        run = priority.LongRunPriority(nice=17)
        run.demote()
        during = nice_of(me)
        restored = run.end()
        return before, during, restored, nice_of(me), run.demoted

    before, during, restored, after, still_demoted = on_a_thread(body)
    assert during == max(17, before)
    if restored:  # a privileged process (root here and in CI) may raise a thread's priority again
        assert after == before and not still_demoted
    else:  # elsewhere the thread keeps the lower priority, and says so
        assert after == during and still_demoted and os.geteuid() != 0


def test_other_threads_keep_their_priority() -> None:
    here = threading.get_native_id()
    before = nice_of(here)

    def body():
        run = priority.LongRunPriority(nice=19)
        run.demote()
        seen = nice_of(here)
        run.end()
        return seen

    assert on_a_thread(body) == before == nice_of(here)


def test_a_demotion_that_comes_after_the_end_changes_nothing() -> None:
    """The light run's timer may fire while the run ends: it must not lower a thread that has
    gone on to other work."""

    def body():
        me = threading.get_native_id()
        before = nice_of(me)
        run = priority.LongRunPriority(nice=19)
        run.end()
        run.demote()
        return before, nice_of(me), run.demoted

    before, after, demoted = on_a_thread(body)
    assert after == before and not demoted


def test_nice_zero_leaves_long_runs_alone() -> None:
    def body():
        me = threading.get_native_id()
        before = nice_of(me)
        run = priority.LongRunPriority(nice=0)
        run.demote()
        return before, nice_of(me)

    before, during = on_a_thread(body)
    assert during == before


@pytest.fixture
def script_context(monkeypatch):
    """script_turn outside Streamlit: a script-run context with a session id, and a queue whose
    runs turn long after 0.1 s."""
    import streamlit.runtime.scriptrunner as scriptrunner

    ctx = SimpleNamespace(session_id="s-1")
    monkeypatch.setattr(scriptrunner, "get_script_run_ctx", lambda: ctx)
    queue = fair_share.Turns(long_s=0.1)
    monkeypatch.setattr(fair_share, "turns", queue)
    return ctx, queue


def nice_while_running(hold_s: float) -> tuple[int, int, int]:
    """On a fresh thread: its nice value before a run, after hold_s inside the run, and after it."""

    def body():
        me = threading.get_native_id()
        before = nice_of(me)
        with fair_share.script_turn():
            time.sleep(hold_s)
            during = nice_of(me)
        return before, during, nice_of(me)

    return on_a_thread(body)


def test_a_short_run_keeps_its_priority(script_context) -> None:
    before, during, after = nice_while_running(0.02)
    assert during == before == after


def test_a_run_that_holds_its_turn_long_steps_aside_on_the_cores(script_context) -> None:
    before, during, after = nice_while_running(0.4)
    assert before < priority.long_run_nice and during == priority.long_run_nice
    if os.geteuid() == 0:
        assert after == before


def test_a_heavy_sessions_run_steps_aside_from_its_start(script_context) -> None:
    ctx, queue = script_context
    for _ in range(3):  # three runs of 0.4 s: this session's use is far above the others'
        with queue.turn(ctx.session_id):
            time.sleep(0.4)
    for neighbour in ("n-1", "n-2", "n-3"):  # heavy is what stands out from the class
        with queue.turn(neighbour):
            pass
    assert queue._heavy(ctx.session_id, time.monotonic())
    before, during, _ = nice_while_running(0.0)
    assert before < priority.long_run_nice and during == priority.long_run_nice


def test_a_runs_worker_thread_steps_aside_and_gives_way_as_the_run_does(script_context) -> None:
    """fair_share.adopt: a benchmark's job on a worker thread runs at the long-run nice value and
    belongs to the run that started it (give_way there finds the run's number); the worker is
    clean again afterwards and the run's own thread keeps its priority."""
    from concurrent.futures import ThreadPoolExecutor

    def job() -> tuple[int, int | None]:
        return nice_of(threading.get_native_id()), fair_share._current.run

    def body():
        me = threading.get_native_id()
        with fair_share.script_turn() as held, ThreadPoolExecutor(max_workers=1) as pool:
            worker_nice, worker_run = pool.submit(fair_share.adopt(job)).result(10)
            plain_run = pool.submit(lambda: getattr(fair_share._current, "run", None)).result(10)
            return held.run, nice_of(me), worker_nice, worker_run, plain_run

    run, script_nice, worker_nice, worker_run, plain_run = on_a_thread(body)
    assert worker_nice == max(priority.LONG_RUN_NICE, script_nice)
    assert worker_run == run >= 0
    assert plain_run is None, "the worker left the run behind when the job ended"
