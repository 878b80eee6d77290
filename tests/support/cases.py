"""Random but reproducible geometry cases shared by the CPU, PyTorch and GPU tests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

# (H, W, K, stride, padding, dilation) for the index-map tests: stride > kernel, dilation, padding at
# the limit D*(K-1), non-square, 1x1, a kernel as large as the padded input
ODD_GEOMETRIES = [
    (7, 8, 3, 2, 1, 1),
    (5, 9, 2, 3, 1, 2),
    (6, 4, 3, 1, 4, 2),
    (4, 7, 1, 2, 0, 1),
    (3, 3, 5, 1, 1, 1),
    (9, 6, 4, 3, 2, 1),
    (9, 11, 3, 2, 1, 1),
    (10, 7, 2, 5, 1, 1),
    (12, 13, 3, 1, 4, 2),
    (7, 16, 4, 3, 2, 2),
    (5, 5, 1, 1, 0, 1),
]


@dataclass(frozen=True)
class ConvCase:
    N: int
    C: int
    H: int
    W: int
    M: int
    kh: int
    kw: int
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    groups: int
    padding_mode: str
    bias: bool

    def arrays(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        x = rng.standard_normal((self.N, self.C, self.H, self.W)).astype(np.float32)
        w = rng.standard_normal((self.M, self.C // self.groups, self.kh, self.kw)).astype(np.float32)
        b = rng.standard_normal(self.M).astype(np.float32) if self.bias else None
        return x, w, b

    def kwargs(self) -> dict:
        return dict(
            stride=self.stride,
            padding=self.padding,
            dilation=self.dilation,
            groups=self.groups,
            padding_mode=self.padding_mode,
        )

    def torch_layer(self, w: np.ndarray, b: np.ndarray | None, torch: Any) -> Any:
        """nn.Conv2d with these weights (the independent reference; a missing bias is zero)."""
        layer = torch.nn.Conv2d(self.C, self.M, (self.kh, self.kw), bias=True, **self.kwargs())
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(w))
            layer.bias.copy_(torch.from_numpy(b if b is not None else np.zeros(self.M, np.float32)))
        return layer


def _fits(size: int, k: int, d: int, p: int) -> bool:
    return d * (k - 1) + 1 <= size + 2 * p


def random_conv_cases(count: int, seed: int = 0) -> list[ConvCase]:
    """Valid cases with odd, non-square sizes, stride > kernel, dilation, 1x1, kernel == input."""
    rng = np.random.default_rng(seed)
    cases = [
        # hand-picked corners
        ConvCase(1, 1, 5, 5, 1, 5, 5, (1, 1), (0, 0), (1, 1), 1, "zeros", False),  # kernel == input
        ConvCase(2, 3, 7, 4, 2, 1, 1, (1, 1), (0, 0), (1, 1), 1, "zeros", True),  # 1x1
        ConvCase(1, 2, 9, 13, 3, 2, 2, (3, 4), (0, 1), (1, 1), 1, "zeros", True),  # stride > kernel
        ConvCase(1, 2, 4, 3, 2, 3, 3, (1, 1), (3, 2), (1, 1), 1, "reflect", False),  # pad at limit
        ConvCase(2, 4, 11, 6, 6, 3, 2, (2, 1), (2, 1), (3, 2), 2, "zeros", True),  # dilation, groups
        ConvCase(1, 6, 8, 8, 6, 3, 3, (1, 1), (1, 1), (1, 1), 6, "reflect", True),  # depthwise
        ConvCase(1, 3, 1, 9, 2, 1, 3, (1, 2), (0, 1), (1, 1), 1, "zeros", False),  # 1-pixel tall
        ConvCase(1, 16, 19, 23, 20, 3, 3, (1, 1), (1, 1), (1, 1), 1, "zeros", True),  # >8 filters
    ]
    while len(cases) < count:
        groups = int(rng.choice([1, 1, 1, 2, 3]))
        C = groups * int(rng.integers(1, 4))
        M = groups * int(rng.integers(1, 5))
        kh, kw = (int(v) for v in rng.integers(1, 6, size=2))
        dil = tuple(int(v) for v in rng.integers(1, 4, size=2))
        stride = tuple(int(v) for v in rng.integers(1, 5, size=2))
        H, W = (int(v) for v in rng.integers(1, 20, size=2))
        mode = str(rng.choice(["zeros", "reflect"]))
        if mode == "reflect":
            pad = (int(rng.integers(0, H)), int(rng.integers(0, W)))
        else:
            pad = tuple(int(v) for v in rng.integers(0, 4, size=2))
        if not (_fits(H, kh, dil[0], pad[0]) and _fits(W, kw, dil[1], pad[1])):
            continue
        cases.append(
            ConvCase(
                int(rng.integers(1, 3)),
                C,
                H,
                W,
                M,
                kh,
                kw,
                stride,
                pad,
                dil,
                groups,
                mode,
                bool(rng.integers(0, 2)),
            )
        )
    return cases


def case_id(case: ConvCase) -> str:
    return (
        f"N{case.N}C{case.C}x{case.H}x{case.W}-M{case.M}k{case.kh}x{case.kw}-s{case.stride}"
        f"p{case.padding}d{case.dilation}g{case.groups}-{case.padding_mode}"
    ).replace(" ", "")


def reflect_pad_cases(count: int, seed: int = 1) -> list[tuple[tuple[int, ...], tuple[int, int, int, int]]]:
    """(shape, (left, right, top, bottom)) with pads up to size-1, including 2-D/3-D/4-D inputs."""
    rng = np.random.default_rng(seed)
    cases = [
        ((3, 3), (2, 2, 2, 2)),
        ((1, 1, 3, 3), (1, 1, 2, 0)),
        ((2, 1, 5), (0, 4, 0, 0)),
        ((1, 7), (0, 0, 0, 0)),
        ((2, 3, 4, 6), (5, 5, 3, 3)),
    ]
    while len(cases) < count:
        ndim = int(rng.integers(2, 5))
        H, W = (int(v) for v in rng.integers(1, 12, size=2))
        lead = tuple(int(v) for v in rng.integers(1, 4, size=ndim - 2))
        pads = (
            int(rng.integers(0, W)),
            int(rng.integers(0, W)),
            int(rng.integers(0, H)),
            int(rng.integers(0, H)),
        )
        cases.append(((*lead, H, W), pads))
    return cases


def layer_arrays(shape: tuple, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
    """x, w, bias and the checked problem of a layer given as (N, C, H, W, M, K, stride, padding,
    dilation, groups, padding_mode): standard normal values from rng (the tensor-core tests' layers)."""
    from gpuops.conv2d import check_conv2d

    N, C, H, W, M, K, S, P, D, G, mode = shape
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((M, C // G, K, K)).astype(np.float32)
    b = rng.standard_normal(M).astype(np.float32)
    return x, w, b, check_conv2d(x.shape, w.shape, b.shape, S, P, D, G, mode)


def random_depthwise_cases(count: int, seed: int = 0) -> list[ConvCase]:
    """Filters that see one channel (1-3 filters a channel) with the square windows and strides
    tiled's v15 kernels are built for (3x3, 5x5; stride 1, 2; no dilation), any padding and size."""
    rng = np.random.default_rng(seed)
    cases: list[ConvCase] = []
    while len(cases) < count:
        k, s = int(rng.choice([3, 5])), int(rng.choice([1, 2]))
        C = int(rng.integers(1, 6))
        H, W = (int(v) for v in rng.integers(2, 40, size=2))
        mode = str(rng.choice(["zeros", "reflect"]))
        top = min(H, W) - 1 if mode == "reflect" else 3
        pad = tuple(int(v) for v in rng.integers(0, top + 1, size=2))
        if not (_fits(H, k, 1, pad[0]) and _fits(W, k, 1, pad[1])):
            continue
        M = C * int(rng.integers(1, 4))
        bias = bool(rng.integers(0, 2))
        cases.append(ConvCase(int(rng.integers(1, 4)), C, H, W, M, k, k, (s, s), pad, (1, 1), C, mode, bias))
    return cases
