"""Channels and groups of a convolution layer: which input channels each filter (and so each output
map) sums, and which outputs read an input channel. The rule of F.conv2d(groups=G): filter m belongs
to group m // (C_out / G) and sees the C_in / G input channels of that group; weight shape
(C_out, C_in / G, K, K). groups = C_in = C_out is the depthwise convolution."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ChannelLayout:
    C_in: int
    C_out: int
    groups: int
    K: int

    def __post_init__(self) -> None:
        for name in ("C_in", "C_out", "groups", "K"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} {getattr(self, name)} must be at least 1")
        if self.C_in % self.groups:
            raise ValueError(f"groups {self.groups} must divide the input channels {self.C_in}")
        if self.C_out % self.groups:
            raise ValueError(f"groups {self.groups} must divide the output channels (filters) {self.C_out}")

    @property
    def per_group_in(self) -> int:
        return self.C_in // self.groups

    @property
    def per_group_out(self) -> int:
        return self.C_out // self.groups

    @property
    def weight_shape(self) -> tuple[int, int, int, int]:
        return self.C_out, self.per_group_in, self.K, self.K

    @property
    def depthwise(self) -> bool:
        return self.groups == self.C_in == self.C_out

    def group_of_output(self, m: int) -> int:
        return m // self.per_group_out

    def group_of_input(self, c: int) -> int:
        return c // self.per_group_in

    def inputs_of(self, m: int) -> list[int]:
        """The input channels output map m sums (through filter m's C_in / G slices)."""
        if not 0 <= m < self.C_out:
            raise ValueError(f"output channel {m} is outside 0..{self.C_out - 1}")
        g = self.group_of_output(m)
        return list(range(g * self.per_group_in, (g + 1) * self.per_group_in))

    def outputs_of(self, c: int) -> list[int]:
        """The output maps that read input channel c."""
        if not 0 <= c < self.C_in:
            raise ValueError(f"input channel {c} is outside 0..{self.C_in - 1}")
        g = self.group_of_input(c)
        return list(range(g * self.per_group_out, (g + 1) * self.per_group_out))

    def connections(self) -> np.ndarray:
        """(C_out, C_in) int: the group of filter m where it sees input channel c, -1 where it does not
        (a block diagonal of G blocks; all one block for groups = 1)."""
        out = np.full((self.C_out, self.C_in), -1, dtype=int)
        for m in range(self.C_out):
            out[m, self.inputs_of(m)] = self.group_of_output(m)
        return out

    def weights(self) -> int:
        return int(np.prod(self.weight_shape))
