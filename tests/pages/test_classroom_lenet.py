"""The instructor's trained LeNet reaches the room's followers (ui/lenet_room.py) through the real
app: an instructor session and follower sessions of one process share the in-memory room store.

AppTest runs no timers: a follower's `run()` stands for its poll's rerun. Training is made to end
in one chunk (one run): no deadline, and a chunk sized for a whole epoch at batch 128 (12 steps).
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from gpuops import lenet
from tests.support.helpers import require

require("streamlit", "the app's classroom tests")
require("sklearn", "the digits the LeNet page trains on")
from tests.support.apptest import AppTest, open_page  # noqa: E402
from ui import classroom_ui  # noqa: E402
from ui import lenet as training  # noqa: E402
from ui.classroom import SharedNetwork, StoreUnavailable  # noqa: E402

QUERY = {"lenet_epochs": "1", "lenet_batch": "128"}  # the page's fastest training: 12 steps an epoch
CFG = lenet.LeNetConfig()
RUN = lenet.TrainSettings(batch=128, lr=0.05, seed=0)
PER_EPOCH = -(-1437 // 128)


@pytest.fixture(autouse=True)
def fresh_rooms(monkeypatch):
    """NumPy, a store of our own per test, no cached network bytes, training in one chunk a run."""
    from gpuops import backend
    from ui import shared

    monkeypatch.setenv("CONV_EXPLORER_BACKEND", "numpy")
    for var in ("CONV_EXPLORER_INSTRUCTOR_KEY", "CONV_EXPLORER_REDIS_URL", "CONV_EXPLORER_ROOM_NETWORK_MB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(training, "CLOCK", lambda: 0.0)  # no deadline: the estimate alone sizes chunks
    monkeypatch.setattr(training, "seconds_per_step", lambda state: training.FIRST_GUESS_S)
    monkeypatch.setattr(training, "CHUNK_SHARE", 2 * PER_EPOCH * training.FIRST_GUESS_S / 2.0)
    backend.reset_backend()
    shared.store.clear()
    classroom_ui._network_bytes.clear()
    yield
    shared.store.clear()
    classroom_ui._network_bytes.clear()
    backend.reset_backend()


def button(at: AppTest, label: str):
    found = [b for b in at.button if b.label.startswith(label)]
    assert found, f"no button {label!r}: {[b.label for b in at.button]}"
    return found[0]


def texts(at: AppTest, *kinds: str) -> str:
    return "\n".join(m.value for kind in kinds for m in getattr(at, kind))


def clean(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def instructor() -> tuple[AppTest, str]:
    at = open_page("lenet", QUERY)
    button(at, "Start a room").click().run()
    return clean(at), at.session_state["_room_teach"][0]


def follower(code: str) -> AppTest:
    at = open_page(None, {"room": code})
    at.run()  # the poll: on the instructor's page now
    return clean(at)


def train(at: AppTest) -> None:
    at.button(key="lenet_train").click().run()
    clean(at)
    assert training.GOAL not in at.session_state, "one Train ends in one run here"


def network(at: AppTest) -> lenet.TrainState:
    return at.session_state[training.STATES][(CFG, RUN)]


def same_weights(a: lenet.TrainState, b: dict[str, np.ndarray]) -> bool:
    return a.params.keys() == b.keys() and all(np.array_equal(a.params[k], b[k]) for k in b)


def count_network_puts(monkeypatch) -> list[str]:
    backend = classroom_ui.registry().backend
    puts, put = [], backend.put

    def counted(key, value, ttl_s, *, only_new=False):
        if key.startswith("ce:network:"):
            puts.append(key)
        return put(key, value, ttl_s, only_new=only_new)

    monkeypatch.setattr(backend, "put", counted)
    return puts


def test_followers_get_the_instructors_network_and_each_new_one_once(monkeypatch):
    puts = count_network_puts(monkeypatch)
    teacher, code = instructor()
    student = follower(code)
    assert classroom_ui.registry().snapshot(code).network_key is None  # the seeded start: not shared
    assert same_weights(network(student), lenet.init_params(CFG, RUN.seed))
    assert f"Room {code} shares this network" in texts(teacher, "caption")

    train(teacher)
    assert network(teacher).step == PER_EPOCH and len(puts) == 1
    student.run()
    clean(student)
    assert same_weights(network(student), network(teacher).params)
    assert f"The instructor's network, epoch 1, step {PER_EPOCH}, test accuracy" in texts(student, "info")
    assert not student.metric, "the follower's own counters (step 0) are not shown"
    assert student.session_state["_room_follow"] == code

    # reruns that change no weights write none: not the instructor's, not a setting of theirs
    teacher.run()
    teacher.number_input(key="w_lenet_digit").set_value(7).run()
    student.run()
    assert len(puts) == 1 and student.number_input(key="w_lenet_digit").value == 7

    train(teacher)  # a second Train: the follower follows
    assert len(puts) == 2
    before = network(student)
    student.run()
    assert network(student) is not before and same_weights(network(student), network(teacher).params)
    assert f"epoch 2, step {2 * PER_EPOCH}" in texts(student, "info")


def test_a_follower_who_joins_late_gets_the_network_and_one_fetch_serves_the_process(monkeypatch):
    teacher, code = instructor()
    train(teacher)
    reads, network_of = [], classroom_ui.registry().network
    monkeypatch.setattr(classroom_ui.registry(), "network", lambda key: reads.append(key) or network_of(key))
    late = [follower(code), follower(code)]
    for student in late:
        assert same_weights(network(student), network(teacher).params)
        student.run()  # nothing new: nothing loaded again
    assert len(reads) == 1


def test_a_followers_train_breaks_away_and_trains_from_the_instructors_network():
    teacher, code = instructor()
    train(teacher)
    student = follower(code)
    version = classroom_ui.registry().snapshot(code).version
    instructors = {k: v.copy() for k, v in network(teacher).params.items()}

    student.button(key="lenet_train").click().run()  # breaks away; the app's rerun shows it
    clean(student)
    assert student.session_state["_room_follow"] is None
    assert "You pressed Train, so you are exploring on your own" in texts(student, "info")
    # an independent expectation: one epoch from the instructor's weights, fresh momentum, step 0
    start = lenet.TrainState(CFG, instructors, {k: np.zeros_like(v) for k, v in instructors.items()}, 0)
    expected = lenet.train_steps(start, training.digits(CFG.size, RUN.seed), RUN, PER_EPOCH)
    for _ in range(3):  # the page's own chunks
        if training.GOAL not in student.session_state:
            break
        student.run()
    assert same_weights(network(student), expected.params)
    assert not same_weights(network(student), instructors)
    teacher.run()
    assert classroom_ui.registry().snapshot(code).version == version  # nothing reached the room
    assert same_weights(network(teacher), instructors)

    button(student, f"Follow {code} again").click().run()
    clean(student)
    assert same_weights(network(student), instructors)


def npz_of(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


BAD_NETWORKS = [
    ("damaged", "the instructor's network arrived damaged"),
    ("not a zip", "the file is not an .npz of weights (BadZipFile)"),
    ("other names", "the weights must be named"),
    ("other shapes", "conv1.weight has shape (6, 1, 3, 3)"),
]


def test_a_bad_network_gives_a_notice_and_the_follower_keeps_its_own():
    """Four bad networks in turn reach one follower (one room: each is a new snapshot); each gives
    its notice, the follower keeps the seeded start and follows on; the next good one loads."""
    teacher, code = instructor()
    student = follower(code)
    store = classroom_ui.registry()
    good = lenet.init_params(CFG, 7)
    data = {
        "damaged": npz_of(good),
        "not a zip": b"PK\x03\x04 and then nothing a zip reader wants",
        "other names": npz_of({"weight": np.zeros(3)}),
        "other shapes": npz_of({**good, "conv1.weight": np.zeros((6, 1, 3, 3))}),
    }
    secret = teacher.session_state["_room_teach"][1]
    settings = dict(store.snapshot(code).settings)
    for case, message in BAD_NETWORKS:
        bad = SharedNetwork(data[case], f"{case}, step 99")
        store.publish(code, secret, {"page": "lenet", "settings": settings, "network": bad})
        if case == "damaged":  # the store's entry changed after it was named
            store.backend.put(f"ce:network:{bad.key}", data[case][:-8] + b"tampered", 600)
        student.run()
        clean(student)
        assert f"The instructor's network could not be loaded: {message}" in texts(student, "warning"), case
        assert same_weights(network(student), lenet.init_params(CFG, RUN.seed)), case
        assert student.session_state["_room_follow"] == code, case
        student.run()  # the same bytes are not tried again; the notice stays
        assert "could not be loaded" in texts(clean(student), "warning"), case

    train(teacher)  # the instructor's next network arrives
    student.run()
    assert same_weights(network(clean(student)), network(teacher).params)
    assert "could not be loaded" not in texts(student, "warning")


def test_while_the_store_does_not_answer_the_follower_keeps_its_network(monkeypatch):
    teacher, code = instructor()
    student = follower(code)
    store = classroom_ui.registry()
    network_of = store.network

    def unavailable(key):
        raise StoreUnavailable("Redis at redis://***@x: ConnectionError")

    monkeypatch.setattr(store, "network", unavailable)
    train(teacher)
    student.run()
    assert "The classroom store is not answering" in texts(clean(student), "warning")
    assert same_weights(network(student), lenet.init_params(CFG, RUN.seed))
    monkeypatch.setattr(store, "network", network_of)
    student.run()
    assert same_weights(network(clean(student)), network(teacher).params)


def test_a_network_over_the_servers_cap_is_not_shared_and_the_instructor_is_told(monkeypatch):
    monkeypatch.setenv("CONV_EXPLORER_ROOM_NETWORK_MB", "0.001")  # 1,048 bytes: under the weights' size
    teacher, code = instructor()
    student = follower(code)
    train(teacher)  # the run ends with the rerun the refusal asks for: its notice
    assert "Your network is not shared: the network's weights are" in texts(clean(teacher), "warning")
    assert "a room holds at most 1 KB (CONV_EXPLORER_ROOM_NETWORK_MB)" in texts(teacher, "warning")
    assert teacher.session_state["_room_teach"][0] == code  # still instructing
    assert f"This network is not shared with room {code}" in texts(teacher, "caption")
    snap = classroom_ui.registry().snapshot(code)
    assert snap.network_key is None and snap.page == "lenet"
    student.run()
    assert same_weights(network(clean(student)), lenet.init_params(CFG, RUN.seed))
