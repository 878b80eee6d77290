"""Browser-side animations (Plotly frames, play/pause and a step slider): smooth on a projector."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.grids import value_grid
from viz.style import FONT_SIZE, HIGHLIGHT, finish

MAX_FRAMES = 400


def _controls(labels: list[str], prefix: str, ms: int = 700) -> dict:
    play = dict(label="▶ Play", method="animate",
                args=[None, dict(frame=dict(duration=ms, redraw=True), fromcurrent=True, transition=dict(duration=0))])  # fmt: skip
    pause = dict(label="Pause", method="animate",
                 args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate")])  # fmt: skip
    steps = [dict(method="animate", label=lab,
                  args=[[lab], dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0))])
             for lab in labels]  # fmt: skip
    return dict(
        updatemenus=[dict(type="buttons", buttons=[play, pause], direction="left", x=0, y=-0.08, xanchor="left",
                          yanchor="top", pad=dict(t=10, r=10), showactive=False)],
        sliders=[dict(active=0, steps=steps, x=0.2, y=-0.05, len=0.8, pad=dict(t=30),
                      currentvalue=dict(prefix=prefix, xanchor="right", font=dict(size=FONT_SIZE)))],
    )  # fmt: skip


def column_animation(inputs: list[np.ndarray], input_titles: list[str], tap_rows: np.ndarray, tap_cols: np.ndarray,
                     tap_channel: np.ndarray, matrices: list[tuple[str, np.ndarray]], outputs_per_column: np.ndarray,
                     title: str, frame_prefix: str = "column l = ") -> go.Figure:  # fmt: skip
    """Step through the columns of an unrolled matrix.

    inputs: small (h, w) channel planes; tap_rows/cols/channel: (L, T) the input cells each column
    reads (-1 rows mean padding, not drawn); matrices: (title, matrix) panels whose column l
    is outlined; outputs_per_column: (L, 2) the (row, col) of the output cell column l produces,
    drawn on the last input-sized panel if given as the final matrix.
    """
    L = tap_rows.shape[0]
    C = len(inputs)
    n_cols = max(C, len(matrices))
    fig = make_subplots(rows=2, cols=n_cols, subplot_titles=[*input_titles, *[""] * (n_cols - C),
                        *[t for t, _ in matrices], *[""] * (n_cols - len(matrices))],
                        vertical_spacing=0.16, horizontal_spacing=0.06)  # fmt: skip
    for c, plane in enumerate(inputs):
        fig.add_trace(value_grid(plane, 0, 0), row=1, col=c + 1)
    for i, (_, mat) in enumerate(matrices):
        fig.add_trace(value_grid(mat, 0, 0, colorscale="RdBu", reverse=False), row=2, col=i + 1)
    # highlight traces: one per input panel (taps of column l), one per matrix (column l outline)
    highlight_idx = []

    def taps_of(l: int, c: int) -> tuple[np.ndarray, np.ndarray]:
        keep = (tap_channel[l] == c) & (tap_rows[l] >= 0)
        return tap_rows[l][keep], tap_cols[l][keep]

    for c in range(C):
        r, q = taps_of(0, c)
        fig.add_trace(go.Scatter(x=q, y=r, mode="markers", hoverinfo="skip", showlegend=False,
                                 marker=dict(symbol="square-open", size=26, color=HIGHLIGHT, line=dict(width=4))),
                      row=1, col=c + 1)  # fmt: skip
        highlight_idx.append(len(fig.data) - 1)

    def column_box(mat: np.ndarray, l: int) -> dict:
        h = mat.shape[0]
        return dict(x=[l - 0.5, l + 0.5, l + 0.5, l - 0.5, l - 0.5], y=[-0.5, -0.5, h - 0.5, h - 0.5, -0.5])

    for i, (_, mat) in enumerate(matrices):
        fig.add_trace(go.Scatter(**column_box(mat, 0), mode="lines", line=dict(color=HIGHLIGHT, width=4),
                                 hoverinfo="skip", showlegend=False), row=2, col=i + 1)  # fmt: skip
        highlight_idx.append(len(fig.data) - 1)

    labels = [str(l) for l in range(min(L, MAX_FRAMES))]
    frames = []
    for l in range(len(labels)):
        data = [go.Scatter(x=taps_of(l, c)[1], y=taps_of(l, c)[0]) for c in range(C)]
        data += [go.Scatter(**column_box(mat, l)) for _, mat in matrices]
        oh, ow = outputs_per_column[l]
        frames.append(go.Frame(data=data, traces=highlight_idx, name=labels[l],
                               layout=dict(title_text=f"{title}<br><sub>column {l}: output ({oh}, {ow})</sub>")))  # fmt: skip
    fig.frames = frames
    fig.update_layout(**_controls(labels, frame_prefix))
    finish(fig, f"{title}<br><sub>column 0: output ({outputs_per_column[0][0]}, {outputs_per_column[0][1]})</sub>",
           "", "", 760)  # fmt: skip
    fig.update_yaxes(autorange="reversed", dtick=1)
    fig.update_xaxes(dtick=1 if L <= 24 else None)
    fig.update_annotations(font_size=FONT_SIZE)
    fig.update_layout(margin=dict(t=120))
    return fig


def patch_animation(plane: np.ndarray, tap_rows: np.ndarray, tap_cols: np.ndarray, pads: tuple[int, int],
                    title: str) -> go.Figure:  # fmt: skip
    """The padded plane with patch l's taps outlined, stepping through every patch position.

    tap_rows/cols: (L, KH*KW) input coordinates of each patch's taps (padding may be negative).
    """
    top, left = pads
    L = tap_rows.shape[0]
    fig = go.Figure(value_grid(plane, -top, -left))
    fig.add_trace(go.Scatter(x=tap_cols[0], y=tap_rows[0], mode="markers", hoverinfo="skip", showlegend=False,
                             marker=dict(symbol="square-open", size=max(6, min(26, 500 // max(plane.shape))),
                                         color=HIGHLIGHT, line=dict(width=3))))  # fmt: skip
    labels = [str(l) for l in range(min(L, MAX_FRAMES))]
    fig.frames = [go.Frame(data=[go.Scatter(x=tap_cols[l], y=tap_rows[l])], traces=[1], name=labels[l])
                  for l in range(len(labels))]  # fmt: skip
    fig.update_layout(**_controls(labels, "patch l = ", ms=350))
    finish(fig, title, "column (negative = padding)", "row", 560)
    fig.update_yaxes(autorange="reversed", scaleanchor="x", constrain="domain")
    return fig
