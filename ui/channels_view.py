"""What the Channels page says, kept out of the page script: which groups the channel counts allow,
and the sentences about a picked output map, a picked input channel and the layer's weights."""

from __future__ import annotations

from gpuops.maps.channels import ChannelLayout


def allowed_groups(c_in: int, c_out: int) -> list[int]:
    """The groups F.conv2d accepts for these channel counts: the common divisors."""
    return [g for g in range(1, min(c_in, c_out) + 1) if c_in % g == 0 and c_out % g == 0]


def nearest_groups(groups: int, allowed: list[int]) -> int:
    """The largest allowed number of groups not above `groups` (1 is always allowed)."""
    return max(g for g in allowed if g <= groups)


def _span(channels: list[int]) -> str:
    return str(channels[0]) if len(channels) == 1 else f"{channels[0]}-{channels[-1]}"


def output_text(layout: ChannelLayout, m: int) -> str:
    """Output map m: its filter, its group, the input channels it sums, products per pixel."""
    inputs, K = layout.inputs_of(m), layout.K
    return (
        f"**Output map {m}** is filter {m} (group {layout.group_of_output(m)}) slid over input "
        f"channels **{_span(inputs)}**: each output pixel sums {len(inputs)} x {K} x {K} = "
        f"{len(inputs) * K**2} products (+ bias)."
    )


def input_text(layout: ChannelLayout, c: int) -> str:
    """Input channel c: its group and the filters (output maps) that read it."""
    outputs = layout.outputs_of(c)
    return (
        f"**Input channel {c}** (group {layout.group_of_input(c)}) is read by filters and output maps "
        f"**{_span(outputs)}** ({len(outputs)} of {layout.C_out})."
    )


def weights_text(layout: ChannelLayout) -> str:
    """The layer's weight count, against the same layer without groups."""
    L = layout
    dense = L.C_out * L.C_in * L.K**2
    return (
        f"Weights: {L.weights():,} = C_out {L.C_out} x C_in/G {L.per_group_in} x K {L.K} x K {L.K}; "
        f"without groups it would be {dense:,} ({dense // L.weights()}x as many). The same number "
        "of multiply-adds per output pixel saved: groups make a layer cheaper and its channels "
        "independent."
    )
