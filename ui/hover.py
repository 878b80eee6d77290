"""Hover rules: what hovering a cell of a figure outlines, said as a geometry and where to draw,
so the browser answers every hover itself (ui/hover_rules.js, with the index formulas' JavaScript
twin ui/index_math.js): no rerun, no per-cell map, any grid size.

Each builder returns {chart: [rule, ...]}; a rule answers hovers on its panel `on` (every panel
when absent). `combine` joins the rules of several figures for `pick.bridge(rules=...)`.
A place to outline is a (chart, panel) pair.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuops.checks import WindowGeometry

Rules = dict[str, list[dict]]
Place = tuple[str, str]


def geometry(g: WindowGeometry, counts: tuple[int, int] | None = None) -> dict:
    """A window geometry as the JavaScript reads it; counts: output rows and columns when they
    are not the formula's (pooling's ceil_mode)."""
    fields = {f: int(getattr(g, f)) for f in WindowGeometry.__dataclass_fields__}
    return fields if counts is None else {**fields, "H_out": int(counts[0]), "W_out": int(counts[1])}


def _rule(kind: str, on: Place, **fields) -> Rules:
    chart, panel = on
    return {chart: [{"kind": kind, "on": panel, **fields}]}


def _places(places: Sequence[Place]) -> list[list[str]]:
    return [list(p) for p in places]


def combine(*parts: Rules) -> Rules:
    """The rules of several figures together (a chart's rules keep their order)."""
    out: Rules = {}
    for part in parts:
        for chart, rules in part.items():
            out.setdefault(chart, []).extend(rules)
    return out


def window(
    g: WindowGeometry,
    mode: str,
    *,
    outputs: Place,
    inputs: Place,
    inside: bool = False,
    counts: tuple[int, int] | None = None,
) -> Rules:
    """A window operation shown as outputs and inputs (own coordinates, padding at negative and
    past-the-edge ones): an output outlines its taps (inside: only those on the input; reflect:
    also the cells they copy), an input cell every output that reads it."""
    return windows(g, mode, outputs=[outputs], inputs=[inputs], inside=inside, counts=counts)


def windows(
    g: WindowGeometry,
    mode: str,
    *,
    outputs: Sequence[Place],
    inputs: Sequence[Place],
    inside: bool = False,
    counts: tuple[int, int] | None = None,
) -> Rules:
    """`window` for a page that shows its outputs and its inputs in several figures: hovering
    any of them outlines on every figure of the other side."""
    geo = geometry(g, counts)
    taps = {"kind": "taps", "g": geo, "mode": mode, "targets": _places(inputs), "inside": inside}
    readers = {"kind": "readers", "g": geo, "mode": mode, "targets": _places(outputs)}
    return combine(
        *(_rule(**taps, on=place) for place in outputs),
        *(_rule(**readers, on=place) for place in inputs),
    )


def layer_window(
    g: WindowGeometry, *, layer: str, previous: Sequence[Place], counts: tuple[int, int] | None = None
) -> Rules:
    """A layer whose channels are panels of one chart (any panel): a cell outlines the cells of
    the previous layer its window reads (inside it), on every place of `previous`; a panel "*"
    there is the hovered cell's own channel (pooling reads its own channel)."""
    rule = {"kind": "taps", "g": geometry(g, counts), "mode": "zeros", "inside": True}
    return {layer: [{**rule, "targets": _places(previous)}]}


def kernel_and_window(
    g: WindowGeometry, mode: str, out: tuple[int, int], *, kernel: Place, around: Place, image: Place
) -> Rules:
    """The kernel beside a close-up of output `out`'s window: a weight outlines the cell it
    multiplies (close-up and image); a close-up cell the weight that reads it, and with reflect
    padding a padding cell the cell it copies."""
    geo, at = geometry(g), [int(out[0]), int(out[1])]
    return combine(
        _rule("kernel_taps", kernel, g=geo, out=at, targets=_places([around, image])),
        _rule(
            "tap_of", around, g=geo, out=at, mode=mode, kernel=list(kernel), sources=_places([around, image])
        ),
    )


def unroll(
    g: WindowGeometry,
    C: int,
    M: int,
    *,
    inputs: str,
    panels: Sequence[str],
    xunroll: Place,
    ymat: Place,
    wmat: Place,
) -> Rules:
    """im2col's figures: an input cell (channel c on panels[c]) outlines its copies in X_unroll;
    an X_unroll entry the cells its column copies and the column of X_unroll and of Y; a Y cell
    the cells, X_unroll's column and its filter's row of W."""
    geo, R = geometry(g), C * g.KH * g.KW
    column = dict(g=geo, C=C, inputs=inputs, panels=list(panels))
    return combine(
        {
            inputs: [
                {"kind": "unroll_copies", "g": geo, "C": C, "panels": list(panels), "target": list(xunroll)}
            ]
        },
        _rule("unroll_column", xunroll, **column, height=R, columns=[[*xunroll, R], [*ymat, M]]),
        _rule("unroll_column", ymat, **column, height=M, columns=[[*xunroll, R]], rows=[[*wmat, R]]),
    )


def unfold_window(
    g: WindowGeometry,
    C: int,
    window: Sequence[int],
    *,
    matrix: Place,
    zoom: Place,
    image: Place,
    pixels: Sequence[Place] = (),
) -> Rules:
    """unfold's close-up beside the matrix columns `window`: a pixel (of the close-up, the image
    or any figure of `pixels`) outlines the window's entries that copy it; an entry the pixel it
    copies (close-up and image)."""
    geo, cols = geometry(g), [int(v) for v in window]
    copies = {"kind": "unfold_pixel", "g": geo, "C": C, "window": cols, "target": list(matrix)}
    return combine(
        *(_rule(**copies, on=place) for place in (zoom, image, *pixels)),
        _rule("unfold_entry", matrix, g=geo, C=C, window=cols, targets=_places([zoom, image])),
    )


def reflect_pad(
    H: int,
    W: int,
    pads: tuple[int, int, int, int],
    *,
    padded: Place,
    inputs: Sequence[Place],
) -> Rules:
    """Reflect padding (pads: left, right, top, bottom) as a padded grid and input-sized grids:
    a padded cell outlines the input cell it copies (on every input grid); an input cell every
    padded cell that copies it, and itself on the other input grids."""
    size = dict(H=int(H), W=int(W), pads=[int(p) for p in pads])
    parts = [_rule("pad_source", padded, **size, targets=_places(inputs))]
    for place in inputs:
        others = [p for p in inputs if p != place]
        parts.append(_rule("pad_copies", place, **size, targets=[list(padded)], same=_places(others)))
    return combine(*parts)


def padded_copies(H: int, W: int, pads: tuple[int, int, int, int], *, on: Place) -> Rules:
    """A reflect-padded image drawn alone (padded coordinates): a cell outlines the cell it copies
    and every other copy of that cell."""
    return _rule("pad_mirror", on, H=int(H), W=int(W), pads=[int(p) for p in pads], targets=[list(on)])


def backward(g: WindowGeometry, *, dy: Place, w: Place, flipped: Place, dx: Place) -> Rules:
    """The backward pass seen from dX and dY: a dX cell outlines the output gradients it gathers,
    the taps and the flipped taps; a dY cell the dX cells it is added into and the taps."""
    geo = geometry(g)
    return combine(
        _rule("grad_sources", dx, g=geo, outputs=[list(dy)], taps=[list(w)], flipped=[list(flipped)]),
        _rule("scatter", dy, g=geo, inputs=[list(dx)], taps=[list(w)]),
    )


def gradient_reach(g: WindowGeometry, *, on: Place, outputs: Sequence[Place]) -> Rules:
    """A grid of input cells (a count map): a cell outlines the output gradients it gathers."""
    return _rule("grad_sources", on, g=geometry(g), outputs=_places(outputs), taps=[], flipped=[])


def weight_gradient(g: WindowGeometry, *, x: Place, dy: Place, dw: Place) -> Rules:
    """dW beside x and dY: a weight outlines the output gradients and input cells it sums; an
    input cell the output gradients and weights it feeds."""
    geo = geometry(g)
    return combine(
        _rule("weight_pairs", dw, g=geo, outputs=[list(dy)], inputs=[list(x)]),
        _rule("grad_sources", x, g=geo, outputs=[list(dy)], taps=[list(dw)], flipped=[]),
    )


def channel_groups(C_in: int, C_out: int, groups: int, *, chart: str, panels: Sequence[str]) -> Rules:
    """The channel view (panels: inputs, filter bank, outputs): which channels meet in a group."""
    rule = {"kind": "channel_groups", "C_in": C_in, "C_out": C_out, "groups": groups, "chart": chart}
    return {chart: [{**rule, "panels": list(panels)}]}
