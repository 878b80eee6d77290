"""Turns for script runs: short runs of light sessions go first, long ones take turns one at a time.

One server process runs every session's script on its own thread, and they share one interpreter
lock and the machine's cores. Ten sessions asking for the largest kernel at 1024 px, uploading
photos and running benchmarks then slow down every student who only moved a slider on a small
image: a 0.1 s rerun took 1.5 to 3.5 s (bench/hostile_load.py). The budget (ui/budget.py) bounds
one rerun; this bounds how much of the server long work takes at once.

- A session's use is the server its recent runs took: a run's seconds, each divided by the runs
  holding a turn beside it (a light run that took 3 s beside nine others took 0.3 s of the
  server; the seconds a turn was held would call it heavy, its thread's CPU seconds would miss
  the GPU and a benchmark's worker thread). A run counts at least MIN_RUN_S: many quick runs
  in a row (a refused setting tried again and again, ten times a second) are work too, and
  counted at their share alone they passed as light and took two of the three short turns there were then
  (hostile mix: light p95 after 10 s 0.42-0.57 s with two such sessions, 0.27 s without them).
  Use halves every HALF_LIFE_S. A session is heavy
  when its use is above HEAVY_S and above HEAVY_FACTOR times the median session's: heavy is
  what stands out from the class, whatever the class is doing.
- A run is long when its session is heavy, or once it has held its turn for LONG_S (a session's
  first run at 1024 px is not heavy yet, but it soon is long). Long runs hold at most
  HEAVY_SLOTS turns: the next long one waits.
- Short runs (of light sessions) hold at most SHORT_SLOTS turns; a run that turns long frees its
  short slot. Long runs never take a short slot, so no amount of long work stalls a slider.
- Among the runs that may start, the one whose session used least goes first (then the
  earliest). Heavy or not is settled when a run arrives; in the queue's order use decays while a
  run waits, so among heavy sessions the one that waited longest comes first.
- A session's use does not decay while its run waits in the queue: a heavy session that waited
  30 s had an eighth of its use left and its next run came as light, taking a short slot for its
  first 0.5 s at 1024 px beside the class's reruns. Hostile mix on the 2-core server, light p95
  after 10 s / quiet: 1.9-2.8x in ten runs with this rule, 2.1-3.6x (median 3.1x) in seven
  without; light p50 0.115 s against 0.145 s in alternating runs. The price: heavy sessions get
  fewer reruns (Unfold at K = 9: 62-80 against 92-97 a minute), and a student whose one upload
  made them heavy stays heavy through the waits, until they rest (only while the class is busy
  enough for long runs to queue).
- No run waits longer than MAX_WAIT_S: then it goes anyway (a stuck run never stalls a class),
  but such overdue runs go one at a time: the next waits until the last one ended or has itself
  run MAX_WAIT_S. With ten heavy sessions and one long slot, runs wait 30 s as a matter of course,
  and when every overdue run went at once, seven long runs started within 8 s beside the class
  (hostile mix on the 2-core server: the light reruns of those seconds took 0.3-0.44 s).
- A long run's thread also drops its CPU priority (ui/priority.py: a heavy session's run from its
  start, a light session's once it has held its turn LONG_S): its NumPy work lets go of the
  interpreter lock, and then it competed with light reruns for the cores. Hostile mix on the 2-core
  server, light p95 after the first 10 s: 0.18 and 0.26 s with it, 0.36 and 0.43 s without.
- A long run gives way (give_way): before each element its script sends and before GPU work it
  waits while short runs hold turns, at most GIVE_WAY_S there and GIVE_WAY_PER_RUN_S in its run.
  Nice cannot help where cores are idle: on the 16-core GPU server what light reruns share with
  a long run is the interpreter lock, which its figure building at 1024 px holds. Hostile mix,
  light p95 after 10 s: H100 0.19 and 0.20 s with it, 0.67 s without; 2-core CPU 0.40-0.75 s
  with it, 1.2-2.7 s without (same sessions). CONV_EXPLORER_GIVE_WAY=off turns it off.

Fragment runs (the classroom poll) do not pass through app.py and take no turn. The environment
variable CONV_EXPLORER_TURNS sets the slots for a server with more cores ("6" or "6,2": short
slots, long slots) or turns the queue off ("off", every run goes at once: for comparisons);
CONV_EXPLORER_TURNS_LOG names a file that gets one line per run (for bench/hostile_load.py).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from ui import priority

T = TypeVar("T")
# short runs at once: two can use two cores where NumPy lets go of the interpreter lock; beyond
# that they only share the lock more ways, and a burst of five students' reruns all finish late
# instead of one after the other (hostile mix, 2-core server, light p95 / quiet after 10 s: 2 slots
# 2.2x and 2.65x, 1 slot 2.9x and 3.0x, 3 slots 3.1x and 5.7x)
SHORT_SLOTS = 2
HEAVY_SLOTS = 1  # long runs at once
HALF_LIFE_S = 10.0
HEAVY_S = 0.5  # below this no session is heavy (a light rerun takes about 0.1 s alone)
HEAVY_FACTOR = 4.0
LONG_S = 0.5  # a light rerun takes about 0.1 s on the 2-core machine
MAX_WAIT_S = 30.0
MIN_RUN_S = 0.05  # a run counts at least this: a light rerun of the Direct page alone (0.05 CPU-s)
POLL_S = 0.1  # waiting runs look again this often: a run turning long frees its slot without a signal
FORGET_AFTER_S = 10 * HALF_LIFE_S  # a session idle this long has no use left worth keeping


@dataclass(frozen=True)
class Turn:
    """What a run learns when its turn starts."""

    waited_s: float
    heavy: bool  # the session's recent use was over HEAVY_S: the run counts as long from its start
    run: int = -1  # this run's number in the queue (for give_way)


class Turns:
    """The process-wide queue of script runs (one instance: `turns`); the clock can be replaced
    in tests."""

    def __init__(self, short_slots: int = SHORT_SLOTS, heavy_slots: int = HEAVY_SLOTS,
                 half_life_s: float = HALF_LIFE_S, heavy_s: float = HEAVY_S, heavy_factor: float = HEAVY_FACTOR,
                 long_s: float = LONG_S, max_wait_s: float = MAX_WAIT_S, min_run_s: float = MIN_RUN_S,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        if short_slots < 1 or heavy_slots < 1:
            raise ValueError(
                f"short_slots and heavy_slots must be at least 1, got {short_slots}, {heavy_slots}"
            )
        self.short_slots, self.heavy_slots = short_slots, heavy_slots
        self.half_life_s, self.heavy_s, self.heavy_factor = half_life_s, heavy_s, heavy_factor
        self.long_s, self.max_wait_s, self.min_run_s = long_s, max_wait_s, min_run_s
        self._clock = clock
        self._cond = threading.Condition()
        self._use: dict[str, tuple[float, float]] = {}  # session -> (seconds used, when last updated)
        self._running: dict[int, list] = {}  # run -> [heavy, started, its share of the server so far]
        self._shared_until = clock()  # shares are counted up to here
        self._waiting: dict[int, tuple[str, bool]] = {}  # run -> (session, heavy); numbered on arrival
        self._overdue: dict[int, float] = {}  # run -> when it started: runs that went after max_wait_s
        self._numbers = itertools.count()

    def use(self, session: str) -> float:
        """The server seconds this session's runs took, the older the less (halved every half life)."""
        with self._cond:
            return self._decayed(session, self._clock())

    def busy(self) -> tuple[int, int, int]:
        """(short runs holding a turn, long runs holding one, runs waiting)."""
        with self._cond:
            long = self._long_running(self._clock())
            return len(self._running) - long, long, len(self._waiting)

    @contextmanager
    def turn(self, session: str) -> Iterator[Turn]:
        """Hold one turn for the body: waits until this run is the first that may go."""
        run = next(self._numbers)
        start = self._clock()
        with self._cond:
            # heavy or not is settled on arrival: in the queue's order a heavy session's use decays
            # while it waits, but its run would still be long, and must not take a short slot
            heavy = self._heavy(session, start)
            use_on_arrival = self._decayed(session, start)
            self._waiting[run] = (session, heavy)
            overdue = False
            try:
                while not self._may_start(run):
                    left = self.max_wait_s - (self._clock() - start)
                    if left <= 0 and not self._overdue_running():
                        overdue = True  # it goes past the slots; the next overdue run waits for it
                        break
                    self._cond.wait(timeout=min(left, POLL_S) if left > 0 else POLL_S)
            finally:
                del self._waiting[run]
            now = self._clock()
            if use_on_arrival > 0:  # the seconds it waited do not count as the session resting
                self._use[session] = (max(use_on_arrival, self._decayed(session, now)), now)
            if overdue:
                self._overdue[run] = now
            self._share(now)
            self._running[run] = [heavy, now, 0.0]
            self._cond.notify_all()  # another slot may still be free for the next in line
        try:
            yield Turn(waited_s=now - start, heavy=heavy, run=run)
        finally:
            with self._cond:
                end = self._clock()
                self._share(end)
                self._overdue.pop(run, None)
                spent = max(self._running.pop(run)[2], self.min_run_s)
                self._use[session] = (self._decayed(session, end) + spent, end)
                self._forget_idle(end)
                self._cond.notify_all()

    def give_way(self, run: int, max_wait_s: float) -> float:
        """A long run steps aside while short runs hold turns: it waits until none does, at most
        max_wait_s. A short run, or a run not holding a turn, goes on at once. Returns the
        seconds waited."""
        start = self._clock()
        held = self._running.get(run)  # read without the lock: most checkpoints are in short runs
        if held is None or not (held[0] or start - held[1] >= self.long_s):
            return 0.0  # (called before every element a script sends: about 100 a light rerun)
        with self._cond:
            while run in self._running:
                now = self._clock()
                heavy, started, _ = self._running[run]
                long = heavy or now - started >= self.long_s
                left = max_wait_s - (now - start)
                if not long or left <= 0 or len(self._running) - self._long_running(now) == 0:
                    break
                self._cond.wait(timeout=min(left, POLL_S))
        return self._clock() - start

    # ---- under the lock ----
    def _decayed(self, session: str, now: float) -> float:
        used, when = self._use.get(session, (0.0, now))
        return used * 0.5 ** ((now - when) / self.half_life_s)

    def _heavy(self, session: str, now: float) -> bool:
        used = self._decayed(session, now)
        if used <= self.heavy_s:
            return False
        if not self.heavy_factor:
            return True
        uses = sorted(self._decayed(s, now) for s in self._use)
        return used > self.heavy_factor * uses[len(uses) // 2]

    def _share(self, now: float) -> None:
        """Split the seconds since the last start or end among the runs holding a turn."""
        if self._running:
            each = max(0.0, now - self._shared_until) / len(self._running)
            for held in self._running.values():
                held[2] += each
        self._shared_until = now

    def _long_running(self, now: float) -> int:
        return sum(heavy or now - started >= self.long_s for heavy, started, _ in self._running.values())

    def _overdue_running(self) -> bool:
        """An overdue run started less than max_wait_s ago and still holds its turn."""
        now = self._clock()
        return any(now - started < self.max_wait_s for started in self._overdue.values())

    def _may_start(self, run: int) -> bool:
        now = self._clock()
        long = self._long_running(now)
        short_free = len(self._running) - long < self.short_slots
        long_free = long < self.heavy_slots

        def fits(r: int) -> bool:
            return long_free if self._waiting[r][1] else short_free

        if not fits(run):
            return False
        first = min(
            (r for r in self._waiting if fits(r)), key=lambda r: (self._decayed(self._waiting[r][0], now), r)
        )
        return first == run

    def _forget_idle(self, now: float) -> None:
        for session in [s for s, (_, when) in self._use.items() if now - when > FORGET_AFTER_S]:
            del self._use[session]


def from_environment(value: str | None) -> Turns | None:
    """The queue CONV_EXPLORER_TURNS asks for (None: "off")."""
    if value is None or not value.strip():
        return Turns()
    if value.strip().lower() == "off":
        return None
    try:
        numbers = [int(part) for part in value.split(",")]
    except ValueError:
        numbers = []
    if len(numbers) not in (1, 2):
        raise ValueError(f"CONV_EXPLORER_TURNS: expected off, SHORT or SHORT,LONG (slots), got {value!r}")
    return Turns(numbers[0], numbers[1] if len(numbers) == 2 else HEAVY_SLOTS)


turns = from_environment(os.environ.get("CONV_EXPLORER_TURNS"))
GIVE_WAY_S = 0.25  # the longest a long run waits at one checkpoint for short runs to finish
GIVE_WAY_PER_RUN_S = 5.0  # and in all, per run: a class that never pauses cannot starve it
give_way_on = os.environ.get("CONV_EXPLORER_GIVE_WAY", "").strip().lower() != "off"
_current = threading.local()  # the run this script thread is in (set by script_turn)
LOG = os.environ.get("CONV_EXPLORER_TURNS_LOG")
_log_lock = threading.Lock()


def give_way() -> None:
    """A checkpoint of the calling script thread: if its run is long and short runs hold turns, it
    waits for them (at most GIVE_WAY_S here, GIVE_WAY_PER_RUN_S in its run). Called before each
    message a script sends (ui/wakeups.py) and before GPU work (ui/budget.gpu_work): a long run's
    Python (figures of a 1024 px image, a comparison's timing loop) shares the interpreter lock
    with every light rerun, and on a GPU server with idle cores the lock, not the cores, is what
    they share. Outside a run, with the queue off or CONV_EXPLORER_GIVE_WAY=off, it does nothing."""
    run = getattr(_current, "run", None)
    if run is None or run < 0 or turns is None or not give_way_on:
        return
    left = GIVE_WAY_PER_RUN_S - _current.gave_way_s
    if left > 0:
        _current.gave_way_s += turns.give_way(run, min(GIVE_WAY_S, left))


def adopt(job: Callable[..., T]) -> Callable[..., T]:
    """job, made ready to run on a worker thread of the calling run (a benchmark's): there it gives
    way as the run's own thread does (give_way) and runs at a long run's CPU priority from its
    start. Work moved off the script thread must not escape the turns: a benchmark's worker at full
    priority held one of the 2 cores for 20 s under the hostile mix while light reruns took 0.6-0.9 s."""
    run = getattr(_current, "run", None)

    def adopted(*args, **kwargs) -> T:
        _current.run, _current.gave_way_s = run, 0.0
        cores = priority.LongRunPriority()
        cores.demote()  # a run that moves work to a worker is long work
        try:
            return job(*args, **kwargs)
        finally:
            _current.run = None
            cores.end()

    return adopted


@contextmanager
def script_turn(run_started: float | None = None) -> Iterator[Turn | None]:
    """The app's run holds a turn of the process-wide queue (None outside a Streamlit session).
    run_started: when the run began (time.monotonic()), for the log."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or turns is None:
        yield None
        return
    arrived = time.monotonic()
    with turns.turn(ctx.session_id) as held:
        start, cpu_start = time.monotonic(), time.thread_time()
        cores = priority.LongRunPriority()  # a long run gives way on the cores (ui/priority.py)
        timer = None
        if held.heavy:
            cores.demote()
        else:  # a light session's run that has held its turn LONG_S is long from then on
            timer = threading.Timer(turns.long_s, cores.demote)
            timer.daemon = True
            timer.start()
        _current.run, _current.gave_way_s = held.run, 0.0
        try:
            yield held
        finally:
            _current.run = None
            if timer is not None:
                timer.cancel()
            cores.end()
            if LOG:  # session, heavy, seconds waited, seconds held, seconds from the run's start to the
                # queue, the script thread's CPU seconds in its turn, seconds it gave way, when it ended (time.time())
                line = (f"{ctx.session_id[:8]} {int(held.heavy)} {held.waited_s:.4f} {time.monotonic() - start:.4f} "
                        f"{arrived - (run_started or arrived):.4f} {time.thread_time() - cpu_start:.4f} "
                        f"{_current.gave_way_s:.4f} {time.time():.3f}\n")  # fmt: skip
                with _log_lock, open(LOG, "a") as f:
                    f.write(line)
