"""PMPP's LeNet-5 (ch. 16), sized for 8x8 digits upscaled to 16x16, forward and backward through
gpuops only: conv2d, conv2d_backward, max_pool2d / avg_pool2d and their backward, and gemm for
the dense layers. Activations, softmax and the optimiser are elementwise array code on the
same backend (NumPy or CuPy).

    input 1 x 16 x 16
    conv1  6 @ 5x5, padding 2 -> 6 x 16 x 16 -> activation -> pool 2x2 -> 6 x 8 x 8
    conv2 16 @ 5x5            -> 16 x 4 x 4  -> activation -> pool 2x2 -> 16 x 2 x 2 = 64
    fc1   64 -> 32 -> activation;  fc2 32 -> 10 -> softmax

Weights are named as PyTorch names them (conv1.weight, ...), so a state dict loads both ways.
Dense layers keep samples in columns: (features, N), the layout gemm takes, (M, K) @ (K, L).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

import numpy as np

from gpuops.backend import array_module, to_numpy
from gpuops.conv2d import conv2d
from gpuops.conv_backward import conv2d_backward, conv2d_grad_weight
from gpuops.im2col import gemm
from gpuops.pool import avg_pool2d, avg_pool2d_backward, max_pool2d, max_pool2d_backward

ACTIVATIONS = ("relu", "tanh")
POOLS = ("max", "avg")
CLASSES = 10
# the stages a sample passes, in order; each has a feature map the page can show
STAGES = ("input", "conv1", "pool1", "conv2", "pool2", "fc1", "output")
TIMED_LAYERS = ("conv1", "pool1", "conv2", "pool2", "dense", "softmax + update")


@dataclass(frozen=True)
class LeNetConfig:
    """The network's sizes and choices (all of them shape the weights or the arithmetic)."""

    size: int = 16  # input side after upscaling the 8x8 digits
    c1: int = 6
    c2: int = 16
    k: int = 5
    hidden: int = 32
    activation: str = "relu"
    pool: str = "max"

    def __post_init__(self) -> None:
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} must be one of {ACTIVATIONS}")
        if self.pool not in POOLS:
            raise ValueError(f"pool {self.pool!r} must be one of {POOLS}")
        for name in ("size", "c1", "c2", "k", "hidden"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} {getattr(self, name)} must be at least 1")
        if self.flat < 1:
            raise ValueError(
                f"input size {self.size} is too small for two {self.k}x{self.k} convolutions and pools"
            )

    @property
    def pad1(self) -> int:
        return (
            self.k // 2
        )  # conv1 keeps the input's size, as LeNet-5's 32x32 -> 28x28 does not: ours is small

    def shapes(self) -> dict[str, tuple[int, int, int]]:
        """(C, H, W) of one sample at each convolutional stage."""
        s1 = self.size + 2 * self.pad1 - self.k + 1
        p1 = s1 // 2
        s2 = p1 - self.k + 1
        p2 = s2 // 2
        return {
            "input": (1, self.size, self.size),
            "conv1": (self.c1, s1, s1),
            "pool1": (self.c1, p1, p1),
            "conv2": (self.c2, s2, s2),
            "pool2": (self.c2, p2, p2),
        }

    @property
    def flat(self) -> int:
        s = self.size + 2 * (self.k // 2) - self.k + 1
        p2 = (s // 2 - self.k + 1) // 2
        return self.c2 * p2 * p2 if p2 > 0 else 0

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        return {
            "conv1.weight": (self.c1, 1, self.k, self.k),
            "conv1.bias": (self.c1,),
            "conv2.weight": (self.c2, self.c1, self.k, self.k),
            "conv2.bias": (self.c2,),
            "fc1.weight": (self.hidden, self.flat),
            "fc1.bias": (self.hidden,),
            "fc2.weight": (CLASSES, self.hidden),
            "fc2.bias": (CLASSES,),
        }


def check_params(cfg: LeNetConfig, arrays: dict[str, Any]) -> dict[str, np.ndarray]:
    """Weights from outside (an uploaded .npz): exactly the network's names and shapes, finite
    numbers; returned as float32 host arrays. Anything else is a ValueError saying what differs."""
    expected = cfg.param_shapes()
    missing = sorted(set(expected) - set(arrays))
    extra = sorted(set(arrays) - set(expected))
    if missing or extra:
        raise ValueError(
            f"the weights must be named {sorted(expected)}; missing {missing}, unexpected {extra}"
        )
    out = {}
    for name, shape in expected.items():
        a = np.asarray(arrays[name])
        if a.shape != shape:
            raise ValueError(f"{name} has shape {a.shape}, this network needs {shape}")
        if a.dtype.kind not in "fiu" or not np.isfinite(a).all():
            raise ValueError(f"{name} must hold finite real numbers")
        out[name] = a.astype(np.float32)
    return out


def init_params(cfg: LeNetConfig, seed: int) -> dict[str, np.ndarray]:
    """PyTorch's default initialisation (uniform in +-1/sqrt(fan_in), weights and biases), seeded."""
    rng = np.random.default_rng(seed)
    params = {}
    for name, shape in cfg.param_shapes().items():
        weight_shape = cfg.param_shapes()[name.replace(".bias", ".weight")]
        fan_in = int(np.prod(weight_shape[1:]))
        bound = 1.0 / np.sqrt(fan_in)
        params[name] = rng.uniform(-bound, bound, shape).astype(np.float32)
    return params


# ---- the layers' pieces that are not kernels ---------------------------------------------------------
def activate(z: Any, kind: str) -> Any:
    xp = array_module(z)
    return xp.maximum(z, 0) if kind == "relu" else xp.tanh(z)


def activation_grad(da: Any, z: Any, a: Any, kind: str) -> Any:
    """dL/dz from dL/da: relu passes where z > 0 (PyTorch: the gradient at 0 is 0); tanh' = 1 - a^2."""
    return da * (z > 0) if kind == "relu" else da * (1 - a * a)


def softmax_columns(logits: Any) -> Any:
    """Softmax of each column (classes, N), shifted by the column's max for stability."""
    xp = array_module(logits)
    e = xp.exp(logits - logits.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def _pool(cfg: LeNetConfig, a: Any) -> tuple[Any, Any]:
    if cfg.pool == "max":
        return max_pool2d(a, 2, return_indices=True)
    return avg_pool2d(a, 2), None


def _pool_backward(cfg: LeNetConfig, dp: Any, a: Any, indices: Any) -> Any:
    if cfg.pool == "max":
        return max_pool2d_backward(dp, a, 2, indices=indices)
    return avg_pool2d_backward(dp, a.shape, 2)


class _Clock:
    """Wall time per layer, the device synchronised at each mark (so a layer's kernels count to it)."""

    def __init__(self, xp: ModuleType, into: dict[str, float] | None) -> None:
        self.into, self.xp = into, xp
        self.last = time.perf_counter() if into is not None else 0.0

    def mark(self, layer: str) -> None:
        if self.into is None:
            return
        if self.xp is not np:
            self.xp.cuda.get_current_stream().synchronize()
        now = time.perf_counter()
        self.into[layer] = self.into.get(layer, 0.0) + (now - self.last)
        self.last = now


@dataclass
class Activations:
    """Everything the forward pass computed, kept for the backward pass and for the pictures."""

    x: Any
    z1: Any
    a1: Any
    p1: Any
    i1: Any
    z2: Any
    a2: Any
    p2: Any
    i2: Any
    flat: Any  # (features, N)
    z3: Any
    a3: Any
    logits: Any  # (classes, N)
    probs: Any  # (classes, N)


def forward(cfg: LeNetConfig, params: dict[str, Any], x: Any, clock: _Clock | None = None) -> Activations:
    """x (N, 1, size, size) on the params' backend -> every stage's values."""
    clock = clock or _Clock(array_module(x), None)
    act = cfg.activation
    z1 = conv2d(x, params["conv1.weight"], params["conv1.bias"], padding=cfg.pad1)
    a1 = activate(z1, act)
    clock.mark("conv1")
    p1, i1 = _pool(cfg, a1)
    clock.mark("pool1")
    z2 = conv2d(p1, params["conv2.weight"], params["conv2.bias"])
    a2 = activate(z2, act)
    clock.mark("conv2")
    p2, i2 = _pool(cfg, a2)
    clock.mark("pool2")
    flat = p2.reshape(p2.shape[0], -1).T
    z3 = gemm(params["fc1.weight"], flat) + params["fc1.bias"][:, None]
    a3 = activate(z3, act)
    logits = gemm(params["fc2.weight"], a3) + params["fc2.bias"][:, None]
    clock.mark("dense")
    probs = softmax_columns(logits)
    return Activations(x, z1, a1, p1, i1, z2, a2, p2, i2, flat, z3, a3, logits, probs)


def loss_and_grads(
    cfg: LeNetConfig, params: dict[str, Any], x: Any, labels: Any, clock: _Clock | None = None
) -> tuple[float, int, dict[str, Any]]:
    """(mean cross-entropy, correct predictions, gradient of the loss for every parameter)."""
    xp = array_module(x)
    clock = clock or _Clock(xp, None)
    s = forward(cfg, params, x, clock)
    N = x.shape[0]
    picked = s.probs[labels, xp.arange(N)]
    loss = float(-xp.log(xp.maximum(picked, 1e-30)).mean())
    correct = int((s.probs.argmax(axis=0) == labels).sum())
    clock.mark("softmax + update")
    act = cfg.activation
    dlogits = s.probs.copy()
    dlogits[labels, xp.arange(N)] -= 1
    dlogits /= N
    grads = {
        "fc2.weight": gemm(dlogits, xp.ascontiguousarray(s.a3.T)),
        "fc2.bias": dlogits.sum(axis=1),
    }
    dz3 = activation_grad(gemm(xp.ascontiguousarray(params["fc2.weight"].T), dlogits), s.z3, s.a3, act)
    grads["fc1.weight"] = gemm(dz3, xp.ascontiguousarray(s.flat.T))
    grads["fc1.bias"] = dz3.sum(axis=1)
    dflat = gemm(xp.ascontiguousarray(params["fc1.weight"].T), dz3)
    dp2 = xp.ascontiguousarray(dflat.T).reshape(s.p2.shape)
    clock.mark("dense")
    dz2 = activation_grad(_pool_backward(cfg, dp2, s.a2, s.i2), s.z2, s.a2, act)
    clock.mark("pool2")
    dp1, grads["conv2.weight"], grads["conv2.bias"] = conv2d_backward(dz2, s.p1, params["conv2.weight"])
    clock.mark("conv2")
    dz1 = activation_grad(_pool_backward(cfg, dp1, s.a1, s.i1), s.z1, s.a1, act)
    clock.mark("pool1")
    grads["conv1.weight"] = conv2d_grad_weight(dz1, x, params["conv1.weight"].shape, padding=cfg.pad1)
    grads["conv1.bias"] = dz1.sum(axis=(0, 2, 3))
    clock.mark("conv1")
    return loss, correct, grads


def predict(cfg: LeNetConfig, params: dict[str, Any], x: Any, batch: int = 512) -> np.ndarray:
    """(N, classes) probabilities on the host, in batches, computed on the backend of the params
    (x is moved there)."""
    xp = array_module(params["conv1.weight"])
    out = [
        to_numpy(forward(cfg, params, xp.asarray(x[i : i + batch])).probs).T
        for i in range(0, x.shape[0], batch)
    ]
    return np.concatenate(out) if out else np.zeros((0, CLASSES), np.float32)


# ---- data: scikit-learn's 8x8 digits, upscaled ---------------------------------------------------------
@dataclass(frozen=True)
class Digits:
    """Train and test images (N, 1, size, size) in [0, 1] on the host, labels int64."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def upscale(images: np.ndarray, size: int) -> np.ndarray:
    """(N, h, w) -> (N, 1, size, size) by repeating pixels (size a multiple of h, w): the digit's
    cells stay visible as blocks."""
    N, h, w = images.shape
    if size % h or size % w:
        raise ValueError(f"size {size} must be a multiple of the image sides {h} x {w}")
    up = images.repeat(size // h, axis=1).repeat(size // w, axis=2)
    return up.reshape(N, 1, size, size).astype(np.float32)


def split_digits(
    images: np.ndarray, labels: np.ndarray, size: int, seed: int, test_share: float = 0.2
) -> Digits:
    """A seeded shuffle, the last test_share of it for testing; pixels scaled by 1/16 (the set's range)."""
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = len(labels) - round(test_share * len(labels))
    x = upscale(images[order] / 16.0, size)
    y = labels[order].astype(np.int64)
    return Digits(x[:cut], y[:cut], x[cut:], y[cut:])


def digit_from_planes(planes: np.ndarray, side: int = 8) -> np.ndarray:
    """Any picture (C, H, W) in [0, 1] as a digit of the training set: side x side, ink bright on a
    dark ground, 0..16. Dark ink on light paper is inverted; the ink's bounding box, made square
    around its centre, is averaged down to side x side and stretched to the set's range."""
    grey = np.asarray(planes, np.float64).mean(axis=0)
    if grey.mean() > 0.5:  # a light background: the ink is the dark part
        grey = 1.0 - grey
    grey = grey - grey.min()
    ink = np.argwhere(grey > 0.25 * grey.max()) if grey.max() > 0 else np.zeros((0, 2), int)
    if len(ink) == 0:
        return np.zeros((side, side))
    (r0, c0), (r1, c1) = ink.min(axis=0), ink.max(axis=0) + 1
    half = max(r1 - r0, c1 - c0, side) / 2 * 1.15  # a margin, as the set's digits have
    cy, cx = (r0 + r1) / 2, (c0 + c1) / 2
    edges = np.linspace(-half, half, side + 1)
    out = np.zeros((side, side))
    for i in range(side):
        rows = np.arange(int(np.floor(cy + edges[i])), int(np.ceil(cy + edges[i + 1])))
        rows = rows[(rows >= 0) & (rows < grey.shape[0])]
        for j in range(side):
            cols = np.arange(int(np.floor(cx + edges[j])), int(np.ceil(cx + edges[j + 1])))
            cols = cols[(cols >= 0) & (cols < grey.shape[1])]
            if rows.size and cols.size:
                out[i, j] = grey[np.ix_(rows, cols)].mean()
    return out * (16.0 / out.max()) if out.max() > 0 else out


# ---- training: explicit, in resumable chunks of steps ------------------------------------------------
@dataclass
class TrainState:
    """Everything training needs to carry on exactly where it stopped (host arrays)."""

    cfg: LeNetConfig
    params: dict[str, np.ndarray]
    velocity: dict[str, np.ndarray]
    seed: int
    step: int = 0
    epoch: int = 0
    order: np.ndarray | None = None  # this epoch's sample order
    history: list[dict[str, float]] = field(default_factory=list)  # one row per evaluation
    layer_seconds: dict[str, float] = field(default_factory=dict)
    timed_steps: int = 0
    running: tuple[float, int, int] = (0.0, 0, 0)  # this epoch so far: loss sum, correct, samples

    def copy(self) -> TrainState:
        return replace(
            self,
            params={k: v.copy() for k, v in self.params.items()},
            velocity={k: v.copy() for k, v in self.velocity.items()},
            order=None if self.order is None else self.order.copy(),
            history=[dict(r) for r in self.history],
            layer_seconds=dict(self.layer_seconds),
        )


@dataclass(frozen=True)
class TrainSettings:
    batch: int = 32
    lr: float = 0.05
    momentum: float = 0.9
    seed: int = 0


def new_state(cfg: LeNetConfig, settings: TrainSettings) -> TrainState:
    params = init_params(cfg, settings.seed)
    return TrainState(cfg, params, {k: np.zeros_like(v) for k, v in params.items()}, settings.seed)


def sgd_update(
    params: dict[str, Any], velocity: dict[str, Any], grads: dict[str, Any], lr: float, momentum: float
) -> None:
    """PyTorch's SGD with momentum (dampening 0): v = momentum v + g; p -= lr v. In place."""
    for name, g in grads.items():
        velocity[name] *= momentum
        velocity[name] += g
        params[name] -= lr * velocity[name]


def train_steps(
    state: TrainState,
    data: Digits,
    settings: TrainSettings,
    steps: int,
    xp: ModuleType = np,
    on_step: Callable[[int], bool | None] | None = None,
) -> TrainState:
    """At most `steps` more minibatch steps from where `state` stopped (a new state; the old one
    is kept). Each epoch walks a fresh permutation seeded by (seed, epoch); an evaluation row is
    added at every epoch's end. The same seed and settings give the same weights however the steps
    are chunked. `on_step(steps done)` runs after each step; returning False stops there (a caller
    with a deadline)."""
    state = state.copy()
    params = {k: xp.asarray(v) for k, v in state.params.items()}
    velocity = {k: xp.asarray(v) for k, v in state.velocity.items()}
    n = len(data.y_train)
    per_epoch = -(-n // settings.batch)
    x_all, y_all = xp.asarray(data.x_train), xp.asarray(data.y_train)
    loss_sum, correct_sum, seen = state.running
    for done in range(steps):
        if state.order is None:
            state.order = np.random.default_rng((state.seed, state.epoch)).permutation(n)
        k = state.step % per_epoch
        take = xp.asarray(state.order[k * settings.batch : (k + 1) * settings.batch])
        clock = _Clock(xp, state.layer_seconds)
        loss, correct, grads = loss_and_grads(state.cfg, params, x_all[take], y_all[take], clock)
        sgd_update(params, velocity, grads, settings.lr, settings.momentum)
        clock.mark("softmax + update")
        state.timed_steps += 1
        loss_sum, correct_sum, seen = loss_sum + loss * len(take), correct_sum + correct, seen + len(take)
        state.step += 1
        if state.step % per_epoch == 0:
            state.epoch += 1
            state.order = None
            state.params = {k: to_numpy(v) for k, v in params.items()}
            test_acc = accuracy(state.cfg, params, data.x_test, data.y_test)
            state.history.append(
                {
                    "epoch": state.epoch,
                    "step": state.step,
                    "loss": loss_sum / seen,
                    "train_accuracy": correct_sum / seen,
                    "test_accuracy": test_acc,
                }
            )
            loss_sum, correct_sum, seen = 0.0, 0, 0
        if on_step is not None and on_step(done + 1) is False:
            break
    state.running = (loss_sum, correct_sum, seen)
    state.params = {k: to_numpy(v) for k, v in params.items()}
    state.velocity = {k: to_numpy(v) for k, v in velocity.items()}
    return state


def accuracy(cfg: LeNetConfig, params: dict[str, Any], x: np.ndarray, y: np.ndarray) -> float:
    """Share of x classified as y, computed on the params' backend."""
    if len(y) == 0:
        return 0.0
    probs = predict(cfg, params, x)
    return float((probs.argmax(axis=1) == y).mean())


def steps_per_epoch(n: int, batch: int) -> int:
    return -(-n // batch)


# ---- which cells a feature-map cell reads (the pick across layers) -------------------------------------
CONV_STAGES = ("conv1", "pool1", "conv2", "pool2")


@dataclass(frozen=True)
class Span:
    """Rows r0..r1 and columns c0..c1 (inclusive) of a stage's map, in `channels` of it."""

    stage: str
    channels: tuple[int, ...]
    r0: int
    r1: int
    c0: int
    c1: int

    def cells(self) -> int:
        return len(self.channels) * (self.r1 - self.r0 + 1) * (self.c1 - self.c0 + 1)


def _step_back(cfg: LeNetConfig, stage: str, r0: int, r1: int) -> tuple[int, int]:
    """The rows of the previous stage that rows r0..r1 of `stage` read (unclipped: may include padding)."""
    if stage.startswith("pool"):  # 2 x 2 windows, stride 2
        return 2 * r0, 2 * r1 + 1
    pad = cfg.pad1 if stage == "conv1" else 0
    return r0 - pad, r1 - pad + cfg.k - 1


def reads(cfg: LeNetConfig, stage: str, channel: int, row: int, col: int) -> Span:
    """The cells of the previous stage that cell (row, col) of `channel` in `stage` reads: a k x k
    window over every channel for a convolution (clipped at the map: padding is not drawn), the
    2 x 2 window of the same channel for a pool."""
    return receptive_field(cfg, stage, channel, row, col)[0]


def receptive_field(cfg: LeNetConfig, stage: str, channel: int, row: int, col: int) -> list[Span]:
    """What cell (row, col) of `channel` in `stage` depends on, stage by stage back to the input:
    the previous stage first. Channels: a pool reads its own channel; a convolution every channel
    (so everything before it counts all channels)."""
    if stage not in CONV_STAGES:
        raise ValueError(f"stage {stage!r} must be one of {CONV_STAGES}")
    shapes = cfg.shapes()
    C, H, W = shapes[stage]
    if not (0 <= channel < C and 0 <= row < H and 0 <= col < W):
        raise ValueError(f"cell {channel}, ({row}, {col}) is outside {stage}'s {C} maps of {H} x {W}")
    order = ("input", *CONV_STAGES)
    spans = []
    r0 = r1 = row
    c0 = c1 = col
    channels: tuple[int, ...] = (channel,)
    for i in range(order.index(stage), 0, -1):
        here, prev = order[i], order[i - 1]
        r0, r1 = _step_back(cfg, here, r0, r1)
        c0, c1 = _step_back(cfg, here, c0, c1)
        if here.startswith("conv"):
            channels = tuple(range(shapes[prev][0]))
        _, Hp, Wp = shapes[prev]
        spans.append(Span(prev, channels, max(r0, 0), min(r1, Hp - 1), max(c0, 0), min(c1, Wp - 1)))
    return spans
