"""The LeNet page's Streamlit side: the digits (loaded once per process), the training state per
settings in the session, and training in chunks that fit the rerun budget (ui/budget.py).

Training is an explicit action: "Train" sets a goal (a number of epochs more); every rerun then
trains one chunk of steps that fits in part of the rerun budget, shows its progress, and asks for
the next rerun until the goal is met or "Stop" is pressed. The state after each chunk is kept, so
training resumes where it stopped, and the same seed gives the same network however it was chunked.

How a chunk keeps to the budget: its steps are estimated from the seconds per step measured so far,
and a deadline (CHUNK_SHARE of the rerun budget, on CLOCK) ends it after the step that passes it,
so a slow first guess, a loaded machine or an epoch's evaluation overrun it by one step at most.
Small-batch NumPy training is interpreter work, like a heavy run's figures: a chunk goes through
the heavy lane (ui/budget.py), so one session's training at a time shares a server process's
interpreter with the light sessions. On the GPU the chunk also holds the process's GPU lock.
"""

from __future__ import annotations

import io
import time
import zipfile
from typing import Any

import numpy as np
import streamlit as st

import gpuops
from gpuops import lenet
from ui import budget, classroom_ui
from ui.state import Cell

CHUNK_SHARE = 0.6  # of the rerun budget one chunk of training may take; the figures get the rest
FIRST_GUESS_S = 0.05  # seconds per step before any step was measured (2-core CPU, batch 32: ~25 ms)
STATES_KEPT = 4  # training states per session (one per settings)
STATES, GOAL = "_lenet_states", "_lenet_goal"
CLOCK = time.monotonic  # the chunk's deadline (tests inject their own clock)
TORCH_STEPS = 20  # PyTorch steps timed for the comparison, fewer when its share runs out
TORCH_SHARE = 0.3  # of the rerun budget the comparison may take: with a chunk's share, under 1


@st.cache_resource(show_spinner="Loading scikit-learn's digits")
def digits(size: int, seed: int) -> lenet.Digits:
    """scikit-learn's 1,797 8x8 digits (shipped inside the package: no download), split 80/20 by
    a seeded shuffle and upscaled to size x size; one copy per process."""
    from sklearn.datasets import load_digits

    raw = load_digits()
    return lenet.split_digits(raw.images, raw.target, size, seed)


# a picked feature-map cell in the URL: the space names the stage (letters only), row = channel * H + row
PICK_SPACES = {"conva": "conv1", "poola": "pool1", "convb": "conv2", "poolb": "pool2"}
_SPACE_OF = {stage: space for space, stage in PICK_SPACES.items()}


def inside(cfg: lenet.LeNetConfig, stage: str, channel: int, row: int, col: int) -> bool:
    if stage not in _SPACE_OF:
        return False
    C, H, W = cfg.shapes()[stage]
    return 0 <= channel < C and 0 <= row < H and 0 <= col < W


def pack_pick(cfg: lenet.LeNetConfig, stage: str, channel: int, row: int, col: int) -> Cell:
    H = cfg.shapes()[stage][1]
    return Cell(_SPACE_OF[stage], channel * H + row, col)


def unpack_pick(cfg: lenet.LeNetConfig, cell: Cell) -> tuple[str, int, int, int]:
    """(stage, channel, row, col) of a pick, moved inside its stage (a link may hold any numbers)."""
    stage = PICK_SPACES.get(cell.space, "conv2")
    C, H, W = cfg.shapes()[stage]
    channel, row = divmod(int(cell.row), H)
    return stage, min(channel, C - 1), min(row, H - 1), min(int(cell.col), W - 1)


DRAWING = "_lenet_drawing"
DRAW_SIDE, INK = 8, 16.0  # the training digits' side and their darkest value


def drawing() -> np.ndarray:
    """This session's drawn digit (8 x 8, 0..16), blank at first."""
    return st.session_state.setdefault(DRAWING, np.zeros((DRAW_SIDE, DRAW_SIDE)))


def toggle_ink(row: int, col: int) -> None:
    """Ink a blank cell, erase an inked one; clicks outside the 8 x 8 grid do nothing."""
    if 0 <= row < DRAW_SIDE and 0 <= col < DRAW_SIDE:
        grid = drawing().copy()
        grid[row, col] = 0.0 if grid[row, col] > INK / 2 else INK
        st.session_state[DRAWING] = grid


def clear_drawing() -> None:
    st.session_state[DRAWING] = np.zeros((DRAW_SIDE, DRAW_SIDE))


def _key(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings) -> tuple:
    return (cfg, settings)


def current_state(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings) -> lenet.TrainState:
    """This session's network for these settings (a fresh seeded one the first time)."""
    states: dict = st.session_state.setdefault(STATES, {})
    key = _key(cfg, settings)
    if key not in states:
        if len(states) >= STATES_KEPT:
            states.pop(next(iter(states)))
        states[key] = lenet.new_state(cfg, settings)
    return states[key]


def replace_state(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings, state: lenet.TrainState) -> None:
    """This session's network for these settings is `state` from now on (training toward a goal stops)."""
    st.session_state.setdefault(STATES, {})[_key(cfg, settings)] = state
    stop()


def reset(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings) -> None:
    """The Reset button: back to the seeded start (a classroom follower explores on its own from here)."""
    replace_state(cfg, settings, lenet.new_state(cfg, settings))
    classroom_ui.own_action("reset the network")


def set_goal(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings, epochs: int) -> None:
    """Train `epochs` more epochs from where this network is (one chunk per rerun). A classroom
    follower explores on its own from here: it trains the network it holds, the instructor's."""
    state = current_state(cfg, settings)
    per_epoch = lenet.steps_per_epoch(len(digits(cfg.size, settings.seed).y_train), settings.batch)
    st.session_state[GOAL] = (_key(cfg, settings), state.step, (state.epoch + epochs) * per_epoch)
    classroom_ui.own_action("pressed Train")


def stop() -> None:
    st.session_state.pop(GOAL, None)


def goal_of(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings) -> tuple[int, int] | None:
    """(step the goal started at, step it ends at) while training these settings, else None."""
    goal = st.session_state.get(GOAL)
    if goal is None or goal[0] != _key(cfg, settings):
        return None
    return goal[1], goal[2]


def seconds_per_step(state: lenet.TrainState) -> float:
    if state.timed_steps == 0:
        return FIRST_GUESS_S
    return sum(state.layer_seconds.values()) / state.timed_steps


def train_chunk(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings, progress: Any) -> bool:
    """Train one chunk toward the goal: the steps estimated to fit CHUNK_SHARE of the rerun budget,
    ended early by that deadline (the module's docstring says why). `progress`: an st.progress to
    move. Returns whether more chunks are needed."""
    span = goal_of(cfg, settings)
    state = current_state(cfg, settings)
    if span is None:
        return False
    start, end = span
    if state.step >= end:
        stop()
        return False
    share = CHUNK_SHARE * budget.CPU_SECONDS
    steps = max(1, min(end - state.step, int(share / seconds_per_step(state))))
    deadline = 0.0  # set once the lane is ours: waiting for it holds no interpreter

    def moved(done: int) -> bool:
        progress.progress(
            (state.step + done - start) / (end - start), text=f"step {state.step + done} of {end}"
        )
        return CLOCK() < deadline

    exploring = classroom_ui.mode() == "exploring"  # a class's runs never wait for the lane
    with budget.heavy_lane(budget.HEAVY_SIZE, in_class=not exploring), budget.gpu_work():
        deadline = CLOCK() + share
        new = lenet.train_steps(
            state, digits(cfg.size, settings.seed), settings, steps, gpuops.default_xp(), moved
        )
    st.session_state[STATES][_key(cfg, settings)] = new
    if new.step >= end:
        stop()
        return False
    return True


def weights_npz(state: lenet.TrainState) -> bytes:
    """The trained weights as an .npz named like PyTorch's state dict (conv1.weight, ...)."""
    buf = io.BytesIO()
    np.savez(buf, **state.params)
    return buf.getvalue()


def load_weights(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings, data: bytes) -> None:
    """Replace this session's network for these settings with uploaded weights (an .npz with PyTorch's
    names, as weights_npz writes): its history starts anew, training resumes from them."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"the file is not an .npz of weights ({type(exc).__name__})") from None
    params = lenet.check_params(cfg, arrays)
    state = lenet.TrainState(cfg, params, {k: np.zeros_like(v) for k, v in params.items()}, settings.seed)
    replace_state(cfg, settings, state)


LOADED = "_ln_loaded"  # the file id of the last weights file loaded (a rerun must not load it again)


def load_upload(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings, upload: Any) -> bool:
    """Load an uploaded weights file (st.file_uploader's) once: True when it was loaded just now."""
    if upload is None or st.session_state.get(LOADED) == upload.file_id:
        return False
    load_weights(cfg, settings, upload.getvalue())
    st.session_state[LOADED] = upload.file_id
    classroom_ui.own_action("loaded a weights file")
    return True


def forward_on_device(
    cfg: lenet.LeNetConfig, state: lenet.TrainState, image: np.ndarray
) -> lenet.Activations:
    """One image (size x size) through the network on the app's backend."""
    with budget.gpu_work():
        params = {k: gpuops.asarray(v) for k, v in state.params.items()}
        return lenet.forward(cfg, params, gpuops.asarray(image[None, None]))


def layer_ms(state: lenet.TrainState) -> dict[str, float]:
    """Milliseconds per training step by layer (forward + backward), averaged over every step so far."""
    if state.timed_steps == 0:
        return {}
    return {k: 1e3 * state.layer_seconds.get(k, 0.0) / state.timed_steps for k in lenet.TIMED_LAYERS}


@st.cache_data(max_entries=16, show_spinner="Timing PyTorch on the same network")
def torch_layer_ms(cfg: lenet.LeNetConfig, settings: lenet.TrainSettings) -> dict[str, float] | None:
    """PyTorch (CPU) on the same network and batch size, ms per training step by layer, when torch
    is installed (it is a test dependency, not an app one): None otherwise. Measured once per
    process and settings (a training session's reruns reuse it), TORCH_STEPS steps or as many as
    fit TORCH_SHARE of the rerun budget; the first call of a process also pays torch's import."""
    try:
        import torch
    except ImportError:
        return None
    F = torch.nn.functional
    params = {
        k: torch.tensor(v, requires_grad=True) for k, v in lenet.init_params(cfg, settings.seed).items()
    }
    x = torch.rand(settings.batch, 1, cfg.size, cfg.size)
    y = torch.randint(0, 10, (settings.batch,))
    act = F.relu if cfg.activation == "relu" else torch.tanh
    pool = (lambda a: F.max_pool2d(a, 2)) if cfg.pool == "max" else (lambda a: F.avg_pool2d(a, 2))
    stages = {
        "conv1": lambda h: act(F.conv2d(h, params["conv1.weight"], params["conv1.bias"], padding=cfg.pad1)),
        "pool1": pool,
        "conv2": lambda h: act(F.conv2d(h, params["conv2.weight"], params["conv2.bias"])),
        "pool2": pool,
        "dense": lambda h: F.linear(
            act(F.linear(h.flatten(1), params["fc1.weight"], params["fc1.bias"])),
            params["fc2.weight"],
            params["fc2.bias"],
        ),
    }
    totals = dict.fromkeys(lenet.TIMED_LAYERS, 0.0)
    deadline, steps = CLOCK() + TORCH_SHARE * budget.CPU_SECONDS, 0
    while steps < TORCH_STEPS and (steps == 0 or CLOCK() < deadline):
        steps += 1
        h, taped = x, []
        for name, stage in stages.items():  # each layer on a detached input: its backward is timed apart
            inp = h.detach().requires_grad_()
            t = time.perf_counter()
            h = stage(inp)
            totals[name] += time.perf_counter() - t
            taped.append((name, inp, h))
        logits = h.detach().requires_grad_()
        t = time.perf_counter()
        F.cross_entropy(logits, y).backward()
        totals["softmax + update"] += time.perf_counter() - t
        grad = logits.grad
        for name, inp, out in reversed(taped):
            t = time.perf_counter()
            out.backward(grad)
            totals[name] += time.perf_counter() - t
            grad = inp.grad
    return {k: 1e3 * v / steps for k, v in totals.items()}
