"""What the LeNet page shows, kept out of the page script: the metrics of a network, the input a
digit source gives, the stages' maps and what a picked cell reads, and the sentences about them.
Training and the session's networks live in ui/lenet.py."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

import gpuops
from gpuops import lenet
from ui import hover, pick
from ui import lenet as training
from ui.state import Cell
from viz.lenet import panel_id, panel_index

STAGES = (  # the feature maps drawn, with their titles
    ("conv1", "conv1 + activation: 6 maps, 16 x 16"),
    ("pool1", "pool1: 6 maps, 8 x 8"),
    ("conv2", "conv2 + activation: 16 maps, 4 x 4"),
    ("pool2", "pool2: 16 maps, 2 x 2"),
)

TRAIN_HINT = (
    "Press **Train**: each rerun trains a chunk of steps, so the page stays responsive; "
    "it resumes where it stopped."
)


def metrics(net: lenet.TrainState) -> dict[str, str | int]:
    """Epoch, step, the last test accuracy and loss (or what stands in for them before training)."""
    last = net.history[-1] if net.history else None
    return {
        "Epoch": net.epoch,
        "Step": net.step,
        "Test accuracy": f"{last['test_accuracy']:.1%}" if last else "not trained",
        "Loss": f"{last['loss']:.3f}" if last else "-",
    }


def drawn_input(cfg: lenet.LeNetConfig) -> np.ndarray:
    """The session's 8 x 8 drawing as the network's input (size x size, values in [0, 1])."""
    return lenet.upscale(training.drawing()[None] / 16.0, cfg.size)[0, 0]


def image_input(cfg: lenet.LeNetConfig, planes: np.ndarray) -> np.ndarray:
    """The sidebar image as a digit: cropped to its ink, averaged to 8 x 8, upscaled to size x size."""
    return lenet.upscale(lenet.digit_from_planes(planes)[None] / 16.0, cfg.size)[0, 0]


@dataclass(frozen=True)
class Picked:
    """A picked feature-map cell and what it depends on: `read`, the cells of the previous stage it
    reads; `field`, its receptive field in the input."""

    stage: str
    channel: int
    row: int
    col: int
    read: lenet.Span
    field: lenet.Span

    def on(self, stage: str) -> tuple[int, int, int] | None:
        """(channel, row, col) when the pick is on `stage`, else None."""
        return (self.channel, self.row, self.col) if stage == self.stage else None

    def read_on(self, stage: str) -> lenet.Span | None:
        """The cells it reads when they lie on `stage`, else None."""
        return self.read if self.read.stage == stage else None


def picked(cfg: lenet.LeNetConfig, stage: str, channel: int, row: int, col: int) -> Picked:
    spans = lenet.receptive_field(cfg, stage, channel, row, col)
    return Picked(stage, channel, row, col, spans[0], spans[-1])


def fitted_pick(cfg: lenet.LeNetConfig, cell: Cell) -> tuple[Cell, Picked]:
    """A pick from the link (any numbers) moved inside its stage, as a Cell and with what it reads."""
    stage, channel, row, col = training.unpack_pick(cfg, cell)
    return training.pack_pick(cfg, stage, channel, row, col), picked(cfg, stage, channel, row, col)


def clicked_pick(cfg: lenet.LeNetConfig, click: pick.Click | None) -> Cell | None:
    """The pick a click on a cell of a stage's maps makes (chart lenet_<stage>, one panel per
    channel); None for any other click."""
    if click is None or not click.chart.startswith("lenet_"):
        return None
    stage, channel = click.chart.removeprefix("lenet_"), panel_index(click.panel)
    if channel is None or not training.inside(cfg, stage, channel, click.row, click.col):
        return None
    return training.pack_pick(cfg, stage, channel, click.row, click.col)


def hover_rules(cfg: lenet.LeNetConfig) -> hover.Rules:
    """Hovering a cell of a stage's maps outlines, in the browser, the cells of the previous stage
    it reads: a convolution's k x k window on every channel, a pool's 2 x 2 on its own channel
    (the input is chart lenet_input)."""
    shapes = cfg.shapes()
    order = ("input", *(name for name, _ in STAGES))
    parts = []
    for prev, stage in pairwise(order):
        C, H, W = shapes[prev]
        if stage.startswith("pool"):  # 2 x 2 windows, stride 2
            g = gpuops.WindowGeometry(H, W, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1)
            previous = [(f"lenet_{prev}", "*")]
        else:
            pad = cfg.pad1 if stage == "conv1" else 0
            g = gpuops.WindowGeometry(H, W, cfg.k, cfg.k, 1, 1, pad, pad, pad, pad, 1, 1)
            previous = [(f"lenet_{prev}", panel_id(c)) for c in range(C)]
        layer = f"lenet_{stage}"
        parts.append(hover.layer_window(g, layer=layer, previous=previous, counts=shapes[stage][1:]))
    return hover.combine(*parts)


def stage_maps(acts: lenet.Activations) -> dict[str, np.ndarray]:
    """Every drawn stage's maps (C, H, W) of the one digit, on the host."""
    values = {"conv1": acts.a1, "pool1": acts.p1, "conv2": acts.a2, "pool2": acts.p2}
    return {name: gpuops.to_numpy(values[name])[0] for name, _ in STAGES}


def dense_values(acts: lenet.Activations) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fc1's units, fc2's logits and the ten probabilities of the one digit, on the host."""
    return tuple(gpuops.to_numpy(a)[:, 0] for a in (acts.a3, acts.logits, acts.probs))


def _rows_cols(span: lenet.Span) -> str:
    return f"rows {span.r0}-{span.r1}, columns {span.c0}-{span.c1}"


def pick_text(p: Picked) -> str:
    """The pick, how many values of the previous stage it reads, and its receptive field."""
    read, field = p.read, p.field
    maps = f"map {read.channels[0]}" if len(read.channels) == 1 else f"all {len(read.channels)} maps"
    depends = (
        ""
        if read.stage == "input"
        else f", and depends on input rows {field.r0}-{field.r1}, columns {field.c0}-{field.c1}"
    )
    return (
        f"**Picked: {p.stage} map {p.channel}, cell ({p.row}, {p.col})** (orange). It reads "
        f"**{read.cells()} values** of {read.stage} (red: {_rows_cols(read)} of {maps}){depends}. "
        "**Click any cell** of a feature map to pick it."
    )
