"""Channel maps against the weight tensor F.conv2d really uses: an output map changes when, and only
when, one of the input channels the map says it sums is perturbed (PyTorch as the judge)."""

from __future__ import annotations

import numpy as np
import pytest

from gpuops.maps.channels import ChannelLayout


@pytest.mark.parametrize("C_in,C_out,groups", [(6, 16, 1), (6, 6, 6), (4, 8, 2), (6, 9, 3), (1, 3, 1)])
def test_inputs_of_are_what_conv2d_reads(C_in, C_out, groups, rng, torch):
    layout = ChannelLayout(C_in, C_out, groups, 3)
    w = torch.from_numpy(rng.standard_normal(layout.weight_shape).astype(np.float32))
    x = torch.from_numpy(rng.standard_normal((1, C_in, 5, 5)).astype(np.float32))
    base = torch.nn.functional.conv2d(x, w, groups=groups)
    for c in range(C_in):
        bumped = x.clone()
        bumped[0, c] += 1.0
        changed = (torch.nn.functional.conv2d(bumped, w, groups=groups) - base).abs().amax(dim=(0, 2, 3)) > 0
        assert sorted(np.flatnonzero(changed.numpy())) == layout.outputs_of(c)
    for m in range(C_out):
        assert m in [o for c in layout.inputs_of(m) for o in layout.outputs_of(c)]
    assert (layout.connections() >= 0).sum() == C_out * C_in // groups


def test_depthwise_and_refusals():
    assert ChannelLayout(6, 6, 6, 3).depthwise and not ChannelLayout(6, 12, 6, 3).depthwise
    with pytest.raises(ValueError, match="groups 4 must divide the input channels 6"):
        ChannelLayout(6, 8, 4, 3)
    with pytest.raises(ValueError, match="groups 2 must divide the output channels"):
        ChannelLayout(6, 5, 2, 3)
    with pytest.raises(ValueError, match="output channel 7"):
        ChannelLayout(6, 6, 1, 3).inputs_of(7)
