"""Time per epoch of the LeNet page's network: gpuops (this backend) against PyTorch on the same
network, weights, batches and optimiser, and the epochs each needs to reach 95% on the digits.

    python -m bench.lenet_epoch [--epochs 8] [--batch 32] [--torch-device cpu|cuda]

Prints one line per epoch and framework, then the medians. PyTorch's own threads are limited to
the cores this process may use, as NumPy's BLAS is; a comparison, not an assertion.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from gpuops import backend, lenet


def load(size: int, seed: int) -> lenet.Digits:
    from sklearn.datasets import load_digits

    raw = load_digits()
    return lenet.split_digits(raw.images, raw.target, size, seed)


def ours(data: lenet.Digits, settings: lenet.TrainSettings, epochs: int) -> list[tuple[float, float]]:
    """(seconds, test accuracy) per epoch, training through gpuops on the default backend."""
    xp = backend.default_xp()
    state = lenet.new_state(lenet.LeNetConfig(), settings)
    per_epoch = lenet.steps_per_epoch(len(data.y_train), settings.batch)
    rows = []
    for _ in range(epochs):
        start = time.perf_counter()
        state = lenet.train_steps(state, data, settings, per_epoch, xp)
        rows.append((time.perf_counter() - start, state.history[-1]["test_accuracy"]))
    return rows


def theirs(
    data: lenet.Digits, settings: lenet.TrainSettings, epochs: int, device: str
) -> list[tuple[float, float]]:
    """The same in PyTorch: same initial weights, the same permutation per epoch, SGD with momentum."""
    import torch

    F = torch.nn.functional
    cfg = lenet.LeNetConfig()
    params = {
        k: torch.tensor(v, device=device, requires_grad=True)
        for k, v in lenet.init_params(cfg, settings.seed).items()
    }
    opt = torch.optim.SGD(params.values(), lr=settings.lr, momentum=settings.momentum)
    x = torch.tensor(data.x_train, device=device)
    y = torch.tensor(data.y_train, device=device)
    xt = torch.tensor(data.x_test, device=device)

    def net(h):
        h = F.max_pool2d(
            F.relu(F.conv2d(h, params["conv1.weight"], params["conv1.bias"], padding=cfg.pad1)), 2
        )
        h = F.max_pool2d(F.relu(F.conv2d(h, params["conv2.weight"], params["conv2.bias"])), 2)
        h = F.relu(F.linear(h.flatten(1), params["fc1.weight"], params["fc1.bias"]))
        return F.linear(h, params["fc2.weight"], params["fc2.bias"])

    rows = []
    for epoch in range(epochs):
        order = torch.tensor(np.random.default_rng((settings.seed, epoch)).permutation(len(y)), device=device)
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for i in range(0, len(order), settings.batch):
            take = order[i : i + settings.batch]
            opt.zero_grad()
            F.cross_entropy(net(x[take]), y[take]).backward()
            opt.step()
        if device == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        with torch.no_grad():
            accuracy = (net(xt).argmax(1).cpu().numpy() == data.y_test).mean()
        rows.append((seconds, float(accuracy)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--torch-device", default="cpu")
    args = parser.parse_args()
    settings = lenet.TrainSettings(batch=args.batch, seed=args.seed)
    data = load(16, args.seed)
    info = backend.backend_info()
    results = {f"gpuops ({info.device if info.gpu else 'NumPy'})": ours(data, settings, args.epochs)}
    try:
        import torch

        torch.set_num_threads(len(os.sched_getaffinity(0)))
        results[f"PyTorch {torch.__version__} ({args.torch_device})"] = theirs(
            data, settings, args.epochs, args.torch_device
        )
    except ImportError:
        print("PyTorch is not installed: gpuops only")
    for name, rows in results.items():
        for epoch, (seconds, accuracy) in enumerate(rows, start=1):
            print(f"{name:40s} epoch {epoch:2d}  {seconds:6.3f} s  test accuracy {accuracy:.1%}")
    for name, rows in results.items():
        reached = next((i for i, (_, a) in enumerate(rows, start=1) if a >= 0.95), None)
        print(
            f"{name:40s} median {statistics.median(s for s, _ in rows):.3f} s per epoch; "
            f">= 95% after {reached if reached else 'more than ' + str(len(rows))} epochs"
        )


if __name__ == "__main__":
    main()
