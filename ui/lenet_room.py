"""The LeNet page in a classroom room: the instructor's trained network reaches the followers live.

The instructor's page offers its network to the room (ui/classroom_ui.offer_network) as the .npz
that "Weights" downloads; the room names it by a hash of its bytes, so it is written to the shared
store once per change and a follower fetches it only when the name changes. The encoding is kept
per training state: a rerun that trained nothing encodes nothing. An untrained network is not
shared: the seeded start is the same in every session (the settings carry the seed).

A follower's page holds what the room shares: the instructor's network when there is one, else
the seeded start, as the instructor's screen does. It loads a network when the room names another
one or its own state is no longer the one it loaded (changed settings, a Follow again after
training on its own). What cannot be loaded (gone, damaged, over the cap, the store not answering)
is said on the page, and the follower keeps the network it had.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from gpuops import lenet
from ui import classroom_ui
from ui import lenet as training
from ui.classroom import SharedNetwork, StoreUnavailable

HELD = "_lenet_room"  # a follower's (room's network key or None, the TrainState set from it, its note)
ENCODED = "_lenet_room_npz"  # the instructor's (TrainState, SharedNetwork | None) last encoded


@dataclass(frozen=True)
class RoomNote:
    """What the page says about the room's network. `kind`: the Streamlit call that shows it
    (caption, info, warning); `instructors`: this follower shows the instructor's network, so its
    own counters (epoch, step, curves: they start anew on loading) are not the ones to show."""

    kind: str
    text: str
    instructors: bool = False


def network_name(state: lenet.TrainState) -> str:
    """How followers see the network named: "epoch 2, step 24, test accuracy 93.1%"."""
    if state.step == 0:
        return "loaded from a weights file"
    name = f"epoch {state.epoch}, step {state.step}"
    if state.history:
        name += f", test accuracy {state.history[-1]['test_accuracy']:.1%}"
    return name


def is_seeded_start(cfg: lenet.LeNetConfig, state: lenet.TrainState) -> bool:
    """Untrained and not loaded: what every session makes from the seed."""
    if state.step:
        return False
    start = lenet.init_params(cfg, state.seed)
    return all(np.array_equal(state.params[k], start[k]) for k in start)


def shared_network(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings) -> SharedNetwork | None:
    """This session's network for the room (None: the seeded start), encoded once per state."""
    state = training.current_state(cfg, settings)
    encoded = st.session_state.get(ENCODED)
    if encoded is None or encoded[0] is not state:
        network = None
        if not is_seeded_start(cfg, state):
            network = SharedNetwork(training.weights_npz(state), network_name(state))
        encoded = (state, network)
        st.session_state[ENCODED] = encoded
    return encoded[1]


def room_note(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings) -> RoomNote | None:
    """The room's part in this page's network, before its buttons (Train starts from what a
    follower holds): the instructor offers its network, a follower takes the room's. Returns the
    note to show (None outside a room)."""
    code = classroom_ui.offer_network(lambda: shared_network(cfg, settings))
    if code is not None:
        encoded = st.session_state.get(ENCODED)
        if encoded and encoded[1] and classroom_ui.network_refused(encoded[1].key):
            return RoomNote(
                "caption", f"This network is not shared with room {code}: it is over the server's cap."
            )
        return RoomNote(
            "caption",
            f"Room {code} shares this network: its followers load it each time training stops.",
        )
    if classroom_ui.mode() != "following":
        st.session_state.pop(HELD, None)  # exploring: a Follow again loads the room's anew
        return None
    return _follow(cfg, settings)


def _follow(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings) -> RoomNote | None:
    ss = st.session_state
    shared = classroom_ui.room_network()
    key = None if shared is None else shared.key
    state = training.current_state(cfg, settings)
    held = ss.get(HELD)
    if held is not None and held[0] == key and held[1] is state:
        return held[2]
    if shared is None:  # the instructor's network is the seeded start: so is the follower's
        fresh = lenet.new_state(cfg, settings)
        training.replace_state(cfg, settings, fresh)
        ss[HELD] = (None, fresh, None)
        return None
    try:
        training.load_weights(cfg, settings, shared.npz())
    except StoreUnavailable:  # asked again next run
        return RoomNote(
            "warning",
            "The classroom store is not answering: you keep the network you had until the "
            "instructor's arrives.",
        )
    except ValueError as exc:  # the same bytes would fail again: not asked again
        note = RoomNote("warning", f"The instructor's network could not be loaded: {exc}. You keep yours.")
        ss[HELD] = (key, state, note)
        return note
    note = RoomNote(
        "info",
        f"**The instructor's network, {shared.name}**: every figure below is computed with it. "
        "Train here trains from it once you explore on your own (pressing Train does that).",
        instructors=True,
    )
    ss[HELD] = (key, training.current_state(cfg, settings), note)
    return note
