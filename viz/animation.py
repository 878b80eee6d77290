"""Play / pause buttons and a step slider for figures whose frames run in the browser.

Every animated figure of the app (the sliding window, X_unroll's columns, the patches, the
transposed convolution's stamps) steps through named frames with Plotly.animate, so one switch
between pages looks and works the same. Frame data must be plain lists: Plotly.animate does not
decode the typed arrays Plotly's JSON uses for NumPy input (the frames would draw nothing).

The buttons and slider steps are `execute=False`: Plotly moves them and emits their events but
leaves the animate call to ui/presenter.js (mounted on every page), which makes it with the
control's own args and catches the rejection Plotly.animate gives an animation that Pause or a
slider step interrupts. Executed by Plotly itself, that expected rejection was logged as
"API call to Plotly.animate rejected" (and an unhandled promise rejection) at every Pause.
A figure with these controls therefore needs ui/presenter.js on its page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from viz.style import Style

TEXT = "#31333f"  # Streamlit's text colour: the current step reads like the page's own text


@dataclass(frozen=True)
class Controls:
    """Where and how the controls sit. y: where buttons and slider hang from, in plot fractions
    (0 = the plot's bottom edge, negative below it); buttons_pad / slider_pad: pixels further
    down (clear of tick labels and axis titles); slider_x: where the slider starts; active: the
    step shown first, where Play starts (then on to the last step and round to the one before
    `active`); ms per frame when playing; prefix: names the current step above the
    slider; step_labels: False draws the steps' own labels transparent (many steps would crowd
    under the slider); current_right: the current step named at the slider's right end."""

    prefix: str = ""
    ms: int = 700
    y: float = 0.0
    buttons_pad: int = 6
    slider_pad: int = 0
    slider_x: float = 0.3
    active: int = 0
    step_labels: bool = True
    current_right: bool = False


PLAIN = Controls()


def play_order(labels: Sequence[str], active: int) -> list[str]:
    """The frames Play runs through: from the step shown first to the last, then round from the
    first to the one before it. Plotly's `fromcurrent` continues from a step paused or dragged to
    within this list; before any step has been animated it has no current step and would start
    at the first frame, away from the one on screen."""
    labels = list(labels)
    if not labels:
        return []
    active = min(max(active, 0), len(labels) - 1)
    return labels[active:] + labels[:active]


def steps_per_second(ms: int) -> float:
    """The playing speed of `ms` per frame, in steps per second."""
    return 1000 / max(1, ms)


def controls(labels: Sequence[str], style: Style, how: Controls = PLAIN) -> dict:
    """Layout entries (updatemenus, sliders) for frames named `labels`."""
    play = dict(
        label="▶ Play",
        method="animate",
        execute=False,
        args=[
            play_order(labels, how.active),
            dict(frame=dict(duration=how.ms, redraw=True), fromcurrent=True, transition=dict(duration=0)),
        ],
    )
    pause = dict(
        label="❚❚ Pause",
        method="animate",
        execute=False,
        args=[[None], dict(frame=dict(duration=0, redraw=False), mode="immediate")],
    )
    steps = [
        dict(
            method="animate",
            execute=False,
            label=lab,
            args=[
                [lab],
                dict(mode="immediate", frame=dict(duration=0, redraw=True), transition=dict(duration=0)),
            ],
        )
        for lab in labels
    ]
    hidden = dict(font=dict(size=style.tick, color="rgba(0,0,0,0)"), tickcolor="rgba(0,0,0,0)", ticklen=0)
    return dict(
        updatemenus=[
            dict(
                type="buttons",
                buttons=[play, pause],
                direction="left",
                x=0,
                y=how.y,
                xanchor="left",
                yanchor="top",
                pad=dict(t=how.buttons_pad, r=10),
                showactive=False,
                font=dict(size=style.font),
            )
        ],
        sliders=[
            dict(
                active=how.active,
                steps=steps,
                x=how.slider_x,
                y=how.y,
                len=1 - how.slider_x,
                xanchor="left",
                yanchor="top",
                pad=dict(t=how.slider_pad, b=0),
                **({"font": dict(size=style.tick)} if how.step_labels else hidden),
                currentvalue=dict(
                    prefix=how.prefix,
                    xanchor="right" if how.current_right else "left",
                    font=dict(size=style.font, color=TEXT),
                ),
            )
        ],
    )
