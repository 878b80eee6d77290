"""ui/fair_share.py: which waiting script run gets its turn, the cap on long runs, a run that
turns long freeing its short slot, use that halves every half life and splits among runs at once, the
longest wait, and the slots under many threads. Pure threading (no Streamlit); a replaceable
clock stands for the seconds a run took."""

from __future__ import annotations

import threading
import time

import pytest

from ui.fair_share import HEAVY_SLOTS, SHORT_SLOTS, Turns, from_environment


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def spend(turns: Turns, clock: Clock, session: str, seconds: float) -> None:
    """One finished run of `seconds` (on the replaceable clock)."""
    with turns.turn(session):
        clock.t += seconds


def wait_until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the queue"
        time.sleep(0.005)


class Waiter(threading.Thread):
    """A run that waits for its turn on a thread, notes when it started, and holds the turn
    until `release` is set."""

    def __init__(self, turns: Turns, session: str, order: list[str]) -> None:
        super().__init__(daemon=True)
        self.turns, self.session, self.order = turns, session, order
        self.release = threading.Event()
        self.started = threading.Event()
        self.heavy: bool | None = None

    def run(self) -> None:
        with self.turns.turn(self.session) as held:
            self.order.append(self.session)
            self.heavy = held.heavy
            self.started.set()
            self.release.wait(5)


def queue_up(turns: Turns, sessions: list[str], order: list[str]) -> list[Waiter]:
    """Start one waiter per session, in this order, each holding or waiting before the next arrives."""
    waiters = []
    _, _, waiting = turns.busy()
    for s in sessions:
        w = Waiter(turns, s, order)
        w.start()
        wait_until(lambda w=w, n=waiting: w.started.is_set() or turns.busy()[2] == n + 1)
        waiting += not w.started.is_set()
        waiters.append(w)
    return waiters


def release_in_turn(order: list[str], waiters: list[Waiter], first: int) -> None:
    """Let each waiter that got the only free turn finish, one after the other (the first of
    them is order[first])."""
    by_session = {w.session: w for w in waiters}
    for step in range(len(waiters)):
        wait_until(lambda step=step: len(order) == first + step + 1)
        by_session[order[-1]].release.set()
    for w in waiters:
        w.join(5)


def test_use_halves_every_half_life_and_is_forgotten_when_idle() -> None:
    clock = Clock()
    turns = Turns(half_life_s=10.0, clock=clock)
    spend(turns, clock, "a", 4.0)
    assert turns.use("a") == pytest.approx(4.0)
    clock.t += 10.0
    assert turns.use("a") == pytest.approx(2.0)
    clock.t += 20.0
    spend(turns, clock, "a", 1.0)  # 0.5 left, which halves on during the new second, plus that second
    assert turns.use("a") == pytest.approx(0.5 * 0.5**0.1 + 1.0)
    assert turns.use("never ran") == 0.0
    clock.t += 1000.0
    spend(turns, clock, "b", 0.1)  # a release forgets sessions idle for ten half lives
    assert "a" not in turns._use and "b" in turns._use


def test_runs_at_the_same_time_share_the_server_their_use_split() -> None:
    clock = Clock()
    turns = Turns(short_slots=2, clock=clock)
    order: list[str] = []
    a, b = queue_up(turns, ["a", "b"], order)
    wait_until(lambda: len(order) == 2)
    clock.t += 2.0  # both held a turn: each had half the server
    a.release.set()
    a.join(5)
    clock.t += 1.0  # b alone
    b.release.set()
    b.join(5)
    assert turns.use("a") == pytest.approx(1.0 * 0.5 ** (1.0 / 10.0))
    assert turns.use("b") == pytest.approx(2.0)


def test_many_quick_runs_in_a_row_count_as_work() -> None:
    """A refused setting tried ten times a second: each run is 5 ms, but counts MIN_RUN_S."""
    clock = Clock()
    turns = Turns(heavy_s=0.5, heavy_factor=4.0, min_run_s=0.05, clock=clock)
    for i in range(5):  # a class: one 30 ms run each
        spend(turns, clock, f"student {i}", 0.03)
    for _ in range(30):  # three seconds of quick runs
        spend(turns, clock, "rapid", 0.005)
        clock.t += 0.095
    assert turns.use("student 0") == pytest.approx(0.05 * 0.5 ** (3.0 / 10.0 + 4 * 0.03 / 10.0))
    assert turns.use("rapid") > 30 * 0.05 * 0.5 ** (3.0 / 10.0)  # not 30 x 5 ms
    with turns.turn("rapid") as held:
        assert held.heavy
    with turns.turn("student 1") as held:
        assert not held.heavy
    plain = Turns(heavy_s=0.5, heavy_factor=4.0, min_run_s=0.0, clock=clock)  # counted at their seconds only
    for i in range(5):
        spend(plain, clock, f"student {i}", 0.03)
    for _ in range(30):
        spend(plain, clock, "rapid", 0.005)
        clock.t += 0.095
    with plain.turn("rapid") as held:
        assert not held.heavy


def test_heavy_is_what_stands_out_from_the_class() -> None:
    clock = Clock()
    turns = Turns(heavy_s=0.5, heavy_factor=4.0, clock=clock)
    for i in range(5):  # a class whose runs each took 0.3 s of the server
        spend(turns, clock, f"student {i}", 0.3)
    spend(turns, clock, "1.0 s", 1.0)
    spend(turns, clock, "1.5 s", 1.5)
    spend(turns, clock, "0.4 s", 0.4)
    heavy = {}
    for session in ("student 0", "0.4 s", "1.0 s", "1.5 s"):
        with turns.turn(session) as held:
            heavy[session] = held.heavy
    assert heavy == {"student 0": False, "0.4 s": False, "1.0 s": False, "1.5 s": True}  # 4 x 0.3 = 1.2 s
    quiet = Turns(heavy_s=0.5, heavy_factor=4.0, clock=clock)
    spend(quiet, clock, "alone", 0.45)
    with quiet.turn("alone") as held:  # over 4 x the median (itself), but under heavy_s
        assert not held.heavy


def test_the_lightest_waiting_session_goes_first_not_the_earliest() -> None:
    clock = Clock()
    turns = Turns(short_slots=1, heavy_slots=1, heavy_s=1.0, heavy_factor=0, clock=clock)
    spend(turns, clock, "used 0.9 s", 0.9)
    spend(turns, clock, "used 0.5 s", 0.5)
    order: list[str] = []
    [holder] = queue_up(turns, ["holder"], order)
    wait_until(lambda: order == ["holder"])
    waiters = queue_up(turns, ["used 0.9 s", "used 0.5 s", "new"], order)  # arrival order
    first = len(order)
    holder.release.set()
    holder.join(5)
    release_in_turn(order, waiters, first)
    assert order == ["holder", "new", "used 0.5 s", "used 0.9 s"]
    assert not any(w.heavy for w in waiters)


def test_equal_use_goes_in_arrival_order() -> None:
    turns = Turns(short_slots=1, clock=Clock())
    order: list[str] = []
    [holder] = queue_up(turns, ["holder"], order)
    waiters = queue_up(turns, ["x", "y", "z"], order)
    first = len(order)
    holder.release.set()
    holder.join(5)
    release_in_turn(order, waiters, first)
    assert order == ["holder", "x", "y", "z"]


def test_heavy_sessions_take_turns_one_at_a_time_the_least_used_first() -> None:
    clock = Clock()
    turns = Turns(short_slots=1, heavy_slots=1, heavy_s=1.0, heavy_factor=0, clock=clock)
    for session, seconds in (("h 5 s", 5.0), ("h 3 s", 3.0), ("h 2 s", 2.0)):
        spend(turns, clock, session, seconds)
    order: list[str] = []
    [first] = queue_up(turns, ["h 2 s"], order)
    wait_until(lambda: order == ["h 2 s"])
    assert first.heavy and turns.busy() == (0, 1, 0)
    waiters = queue_up(turns, ["h 5 s", "h 3 s"], order)
    time.sleep(0.05)
    assert order == ["h 2 s"], "a second heavy run started beside the first"
    [light] = queue_up(turns, ["light"], order)  # heavy runs never hold the short slot
    wait_until(lambda: order == ["h 2 s", "light"])
    light.release.set()
    start = len(order)
    first.release.set()
    first.join(5)
    release_in_turn(order, waiters, start)
    assert order == ["h 2 s", "light", "h 3 s", "h 5 s"]
    assert turns.busy() == (0, 0, 0)


def test_a_heavy_run_stays_heavy_while_it_waits() -> None:
    clock = Clock()
    turns = Turns(short_slots=2, heavy_slots=1, heavy_s=1.0, heavy_factor=0, half_life_s=10.0, clock=clock)
    spend(turns, clock, "holder", 3.0)
    spend(turns, clock, "waiter", 1.5)
    order: list[str] = []
    [holder] = queue_up(turns, ["holder"], order)
    [waiter] = queue_up(turns, ["waiter"], order)
    clock.t += 20.0  # the waiter's use is 0.375 s now, but its run is as long as ever
    time.sleep(0.3)  # a few looks at the queue
    assert order == ["holder"] and turns.busy() == (0, 1, 1)
    holder.release.set()
    waiter.started.wait(5)
    assert order == ["holder", "waiter"] and waiter.heavy
    waiter.release.set()
    for w in (holder, waiter):
        w.join(5)


def test_a_run_that_turns_long_frees_its_short_slot_and_takes_the_long_one() -> None:
    clock = Clock()
    turns = Turns(short_slots=1, heavy_slots=1, heavy_s=1.0, heavy_factor=0, long_s=0.5, clock=clock)
    spend(turns, clock, "heavy", 3.0)
    order: list[str] = []
    [first_run] = queue_up(turns, ["first run at 1024 px"], order)  # a new session: not heavy
    wait_until(lambda: len(order) == 1)
    assert turns.busy() == (1, 0, 0)
    [light, heavy] = queue_up(turns, ["light", "heavy"], order)
    time.sleep(0.05)
    assert order == ["first run at 1024 px", "heavy"], "the long slot was free, the short one not"
    heavy.release.set()
    heavy.join(5)
    clock.t += 0.6  # the first run has now held its turn for longer than long_s
    wait_until(lambda: order[-1] == "light")  # its short slot is free
    assert turns.busy() == (1, 1, 0)
    [heavy_again] = queue_up(turns, ["heavy"], order)
    time.sleep(0.05)
    assert order[-1] == "light", "the long run holds the long slot"
    first_run.release.set()
    wait_until(lambda: order[-1] == "heavy")
    light.release.set()
    heavy_again.release.set()
    for w in (first_run, light, heavy_again):
        w.join(5)
    assert turns.busy() == (0, 0, 0)


def test_no_run_waits_longer_than_the_longest_wait() -> None:
    turns = Turns(short_slots=1, max_wait_s=0.3, long_s=60)
    order: list[str] = []
    [stuck] = queue_up(turns, ["stuck"], order)
    t0 = time.monotonic()
    with turns.turn("next") as held:
        waited = time.monotonic() - t0
    stuck.release.set()
    stuck.join(5)
    assert 0.25 <= waited < 2.0
    assert held.waited_s == pytest.approx(waited, abs=0.1)


def test_a_run_that_raises_gives_its_turn_back() -> None:
    turns = Turns(short_slots=1, max_wait_s=5.0)
    with pytest.raises(RuntimeError), turns.turn("a"):
        raise RuntimeError("the page failed")
    assert turns.busy() == (0, 0, 0)
    t0 = time.monotonic()
    with turns.turn("b"):
        pass
    assert time.monotonic() - t0 < 1.0


def test_slots_and_the_heavy_cap_hold_under_many_threads() -> None:
    # real clock: a few runs make a session heavy; no run lasts long enough to turn long
    turns = Turns(short_slots=2, heavy_slots=1, heavy_s=0.01, heavy_factor=0, long_s=60)
    lock = threading.Lock()
    now = {"short": 0, "heavy": 0}
    most = {"short": 0, "heavy": 0}
    done = []

    def session(name: str, hold_s: float) -> None:
        for _ in range(15):
            with turns.turn(name) as held:
                kind = "heavy" if held.heavy else "short"
                with lock:
                    now[kind] += 1
                    most[kind] = max(most[kind], now[kind])
                time.sleep(hold_s)
                with lock:
                    now[kind] -= 1
        done.append(name)

    threads = [threading.Thread(target=session, args=(f"s{i}", 0.004 if i % 2 else 0.0005)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(done) == 8
    assert most == {"short": 2, "heavy": 1}
    assert turns.busy() == (0, 0, 0)


def test_slots_must_be_positive() -> None:
    for short, heavy in ((0, 1), (2, 0)):
        with pytest.raises(ValueError, match="at least 1"):
            Turns(short, heavy)


def test_the_environment_sets_the_slots_or_turns_the_queue_off() -> None:
    default = from_environment(None)
    assert (default.short_slots, default.heavy_slots) == (SHORT_SLOTS, HEAVY_SLOTS)
    assert from_environment(" off ") is None
    six = from_environment("6")
    assert (six.short_slots, six.heavy_slots) == (6, HEAVY_SLOTS)
    assert (from_environment("6,2").short_slots, from_environment("6,2").heavy_slots) == (6, 2)
    for bad in ("six", "1,2,3", "2,0", "0", ","):
        with pytest.raises(ValueError):
            from_environment(bad)


@pytest.mark.usefixtures("numpy_backend")
def test_the_app_takes_a_turn_per_run_and_a_long_wait_says_why(monkeypatch) -> None:
    """app.py holds a turn of the process-wide queue for its whole run; a run that waited more
    than WAIT_NOTICE_S shows a toast that says why (here a queue that reports a 5 s wait)."""
    from contextlib import contextmanager

    from tests.apptest import open_page
    from ui import fair_share

    runs: list[str] = []

    class SlowQueue:
        @contextmanager
        def turn(self, session: str):
            runs.append(session)
            yield fair_share.Turn(waited_s=5.0, heavy=True)

    monkeypatch.setattr(fair_share, "turns", SlowQueue())
    at = open_page("direct")
    assert len(runs) == 2 and len(set(runs)) == 1  # the first run and the page switch, one session
    toasts = [t.value for t in at.toast]
    assert any("Waited 5 s for a turn" in t and "lighter recent work first" in t for t in toasts), toasts


class Holder(threading.Thread):
    """A run on the real clock that takes its turn, then holds it until `release` is set."""

    def __init__(self, turns: Turns, session: str) -> None:
        super().__init__(daemon=True)
        self.turns, self.session = turns, session
        self.release, self.holding = threading.Event(), threading.Event()
        self.run_number = -1

    def run(self) -> None:
        with self.turns.turn(self.session) as held:
            self.run_number = held.run
            self.holding.set()
            self.release.wait(10)


def hold(turns: Turns, session: str) -> Holder:
    holder = Holder(turns, session)
    holder.start()
    assert holder.holding.wait(5)
    return holder


def test_a_long_run_gives_way_until_the_short_runs_finish() -> None:
    turns = Turns(short_slots=2, heavy_slots=1, long_s=1.0)
    long_run = hold(turns, "1024 px")
    time.sleep(1.05)  # it has held its turn past long_s: long now
    short = hold(turns, "slider")  # short for its first second
    threading.Timer(0.3, short.release.set).start()
    waited = turns.give_way(long_run.run_number, max_wait_s=3.0)
    assert 0.25 <= waited < 1.0, "it waited for the short run, and no longer"
    short.join(5)
    assert turns.give_way(long_run.run_number, max_wait_s=3.0) < 0.05, "no short run left: it goes on"
    long_run.release.set()
    long_run.join(5)


def heavy_and_light_queue() -> Turns:
    """A queue on the real clock where session "heavy" is heavy (its runs long from their start)
    and every other session's runs stay short."""
    turns = Turns(short_slots=3, heavy_slots=1, heavy_s=0.01, heavy_factor=0, long_s=60)
    with turns.turn("heavy"):
        time.sleep(0.05)
    return turns


def test_a_short_run_never_gives_way_and_a_long_one_waits_at_most_its_limit() -> None:
    turns = heavy_and_light_queue()
    a, b = hold(turns, "a"), hold(turns, "b")
    t0 = time.monotonic()
    assert turns.give_way(a.run_number, max_wait_s=3.0) < 0.05, "a short run goes on at once"
    assert turns.give_way(12345, max_wait_s=3.0) < 0.05, "a run holding no turn goes on at once"
    assert time.monotonic() - t0 < 0.5
    heavy = hold(turns, "heavy")  # a heavy session's run is long from its start; a and b never finish
    waited = turns.give_way(heavy.run_number, max_wait_s=0.3)
    assert 0.25 <= waited < 1.0
    for h in (a, b, heavy):
        h.release.set()
        h.join(5)


def test_give_way_checkpoints_wait_only_inside_a_long_run_and_at_most_the_per_run_cap(monkeypatch) -> None:
    """fair_share.give_way(), the checkpoint the script thread calls: nothing outside a run, at
    most GIVE_WAY_S at one checkpoint and GIVE_WAY_PER_RUN_S in one run, nothing when turned off."""
    from ui import fair_share

    turns = heavy_and_light_queue()
    monkeypatch.setattr(fair_share, "turns", turns)
    monkeypatch.setattr(fair_share, "give_way_on", True)  # whatever CONV_EXPLORER_GIVE_WAY says here
    monkeypatch.setattr(fair_share, "GIVE_WAY_S", 0.2)
    monkeypatch.setattr(fair_share, "GIVE_WAY_PER_RUN_S", 0.5)
    short = hold(turns, "slider that never finishes")

    t0 = time.monotonic()
    fair_share.give_way()  # no run on this thread
    assert time.monotonic() - t0 < 0.05

    with turns.turn("heavy") as held:
        assert held.heavy
        fair_share._current.run, fair_share._current.gave_way_s = held.run, 0.0
        try:
            waits = []
            for _ in range(5):
                t0 = time.monotonic()
                fair_share.give_way()
                waits.append(time.monotonic() - t0)
            assert all(w < 0.45 for w in waits), waits  # one checkpoint: at most GIVE_WAY_S
            assert 0.45 <= sum(waits) < 1.2, waits  # one run: at most GIVE_WAY_PER_RUN_S
            assert waits[-1] < 0.05, "the run's allowance is spent"
            fair_share._current.gave_way_s = 0.0
            monkeypatch.setattr(fair_share, "give_way_on", False)  # CONV_EXPLORER_GIVE_WAY=off
            t0 = time.monotonic()
            fair_share.give_way()
            assert time.monotonic() - t0 < 0.05
        finally:
            fair_share._current.run = None
    short.release.set()
    short.join(5)


def test_overdue_runs_go_one_at_a_time() -> None:
    """A run that waited max_wait_s goes past the slots, but the next overdue one waits until it
    ends (or has itself run max_wait_s): ten heavy sessions queueing for one long slot must not
    all start at once when their waits run out."""
    turns = Turns(short_slots=1, max_wait_s=0.3, long_s=60)
    order: list[str] = []
    [stuck] = queue_up(turns, ["stuck"], order)
    [first, second] = queue_up(turns, ["first overdue", "second overdue"], order)
    wait_until(lambda: len(order) == 2)
    time.sleep(0.1)  # the second's wait has run out too, but the first still holds its turn
    assert order == ["stuck", "first overdue"] and turns.busy()[2] == 1
    first.release.set()
    wait_until(lambda: len(order) == 3)
    assert order[-1] == "second overdue"
    for w in (stuck, second):
        w.release.set()
    for w in (stuck, first, second):
        w.join(5)
    assert turns.busy() == (0, 0, 0)


def test_an_overdue_run_that_runs_long_lets_the_next_one_go() -> None:
    """No run waits for ever: an overdue run that has run max_wait_s no longer holds the next back."""
    turns = Turns(short_slots=1, max_wait_s=0.3, long_s=60)
    order: list[str] = []
    [stuck] = queue_up(turns, ["stuck"], order)
    [first] = queue_up(turns, ["first overdue"], order)
    wait_until(lambda: len(order) == 2)
    t0 = time.monotonic()
    with turns.turn("second overdue"):
        waited = time.monotonic() - t0
    assert 0.25 <= waited < 2.0, "it waited for the first overdue run's max_wait_s, then went"
    for w in (stuck, first):
        w.release.set()
        w.join(5)


def test_waiting_in_the_queue_is_not_rest() -> None:
    """A heavy session whose run waited 30 s for the long slot is as heavy when it starts: its
    use halves with the time it rested, not the time it queued."""
    clock = Clock()
    turns = Turns(short_slots=1, heavy_slots=1, heavy_s=1.0, heavy_factor=0, half_life_s=10.0, clock=clock)
    spend(turns, clock, "holder", 3.0)
    spend(turns, clock, "waiter", 2.0)
    order: list[str] = []
    [holder] = queue_up(turns, ["holder"], order)
    [waiter] = queue_up(turns, ["waiter"], order)
    clock.t += 30.0  # three half lives in the queue
    holder.release.set()
    waiter.started.wait(5)
    clock.t += 1.0
    waiter.release.set()
    waiter.join(5)
    holder.join(5)
    assert turns.use("waiter") >= 2.0, "the wait decayed the session's use"
    with turns.turn("waiter") as again:
        assert again.heavy, "its next run came as light and would take a short slot"
