"""The LeNet of gpuops.lenet: one training step's gradients against PyTorch autograd in float64
on the same weights and batch (every parameter), reproducible chunked training, and the
accuracy it reaches on scikit-learn's digits."""

from __future__ import annotations

import numpy as np
import pytest

from gpuops import lenet
from tests.support.helpers import BACKENDS, on, require

backends = pytest.mark.parametrize("xp", BACKENDS, indirect=True)


def torch_loss(cfg: lenet.LeNetConfig, params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, torch):
    """The same network written with torch.nn.functional in float64: (loss, {name: leaf tensor})."""
    F = torch.nn.functional
    p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    act = F.relu if cfg.activation == "relu" else torch.tanh
    pool = (lambda a: F.max_pool2d(a, 2)) if cfg.pool == "max" else (lambda a: F.avg_pool2d(a, 2))
    h = torch.tensor(x, dtype=torch.float64)
    h = pool(act(F.conv2d(h, p["conv1.weight"], p["conv1.bias"], padding=cfg.pad1)))
    h = pool(act(F.conv2d(h, p["conv2.weight"], p["conv2.bias"])))
    h = act(F.linear(h.flatten(1), p["fc1.weight"], p["fc1.bias"]))
    logits = F.linear(h, p["fc2.weight"], p["fc2.bias"])
    return F.cross_entropy(logits, torch.tensor(y)), p


@backends
@pytest.mark.parametrize("activation", lenet.ACTIVATIONS)
@pytest.mark.parametrize("pool", lenet.POOLS)
def test_one_step_gradients_equal_torch_autograd_in_float64(activation, pool, xp, rng, torch):
    cfg = lenet.LeNetConfig(activation=activation, pool=pool)
    params = lenet.init_params(cfg, seed=int(rng.integers(1000)))
    x = rng.random((12, 1, cfg.size, cfg.size)).astype(np.float32)
    y = rng.integers(0, 10, 12)
    loss, correct, grads = lenet.loss_and_grads(
        cfg, {k: xp.asarray(v) for k, v in params.items()}, *on(xp, x, y)
    )
    ref, leaves = torch_loss(cfg, params, x, y, torch)
    ref.backward()
    assert loss == pytest.approx(float(ref.detach()), rel=1e-5)
    assert 0 <= correct <= 12
    assert set(grads) == set(cfg.param_shapes())
    for name, leaf in leaves.items():
        got = grads[name].get() if hasattr(grads[name], "get") else grads[name]
        assert got.shape == tuple(leaf.shape), name
        scale = float(leaf.grad.abs().max())
        np.testing.assert_allclose(got, leaf.grad.numpy(), rtol=1e-4, atol=1e-5 * scale + 1e-7, err_msg=name)


def _small_data(seed: int = 3) -> lenet.Digits:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 17, (90, 8, 8)).astype(np.float64)
    return lenet.split_digits(images, rng.integers(0, 10, 90), 16, seed=seed)


def test_training_in_chunks_equals_training_at_once():
    """Resumable: 2 + 3 + 4 steps (crossing an epoch of 3 steps) give bit-identical weights to 9."""
    data = _small_data()
    settings = lenet.TrainSettings(batch=25, seed=5)
    cfg = lenet.LeNetConfig()
    start = lenet.new_state(cfg, settings)
    once = lenet.train_steps(start, data, settings, 9)
    chunked = start
    for steps in (2, 3, 4):
        chunked = lenet.train_steps(chunked, data, settings, steps)
    assert once.step == chunked.step == 9 and once.epoch == chunked.epoch == 3
    for name in once.params:
        np.testing.assert_array_equal(once.params[name], chunked.params[name], err_msg=name)
    assert [r["loss"] for r in once.history] == [r["loss"] for r in chunked.history]
    assert start.step == 0 and not start.history  # the state it started from is untouched


def test_a_step_callback_that_returns_false_ends_the_chunk_there():
    """A deadline's stop: on_step answering False after step 4 of at most 8 leaves a state at
    step 4 (past an epoch of 3 steps) equal to 4 plain steps, and the rest resumes from it to
    the weights of 8 steps at once."""
    data = _small_data()
    settings = lenet.TrainSettings(batch=25, seed=5)
    start = lenet.new_state(lenet.LeNetConfig(), settings)
    seen = []

    def until_four(done: int) -> bool:
        seen.append(done)
        return done < 4

    stopped = lenet.train_steps(start, data, settings, 8, on_step=until_four)
    assert seen == [1, 2, 3, 4] and stopped.step == 4 and stopped.epoch == 1
    four = lenet.train_steps(start, data, settings, 4)
    eight = lenet.train_steps(start, data, settings, 8)
    resumed = lenet.train_steps(stopped, data, settings, 4)
    for name in four.params:
        np.testing.assert_array_equal(stopped.params[name], four.params[name], err_msg=name)
        np.testing.assert_array_equal(resumed.params[name], eight.params[name], err_msg=name)


def test_same_seed_same_network_other_seed_other_network():
    cfg = lenet.LeNetConfig()
    a, b, c = (lenet.init_params(cfg, s) for s in (1, 1, 2))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert not np.array_equal(a["conv1.weight"], c["conv1.weight"])


def test_upscale_repeats_pixels_and_refuses_other_sizes():
    img = np.arange(4.0).reshape(1, 2, 2)
    up = lenet.upscale(img, 4)
    assert up.shape == (1, 1, 4, 4)
    np.testing.assert_array_equal(up[0, 0], [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]])
    with pytest.raises(ValueError, match="multiple"):
        lenet.upscale(img, 5)


def test_bad_config_is_refused():
    with pytest.raises(ValueError, match="activation 'sigmoid'"):
        lenet.LeNetConfig(activation="sigmoid")
    with pytest.raises(ValueError, match="too small"):
        lenet.LeNetConfig(size=8)


def test_reaches_95_percent_on_the_digits():
    """scikit-learn's 8x8 digits upscaled to 16x16: six epochs of the default settings reach at
    least 95% on the held-out fifth (seeded, so the same on every run)."""
    datasets = require("sklearn.datasets", "the digits the LeNet page trains on").load_digits()
    data = lenet.split_digits(datasets.images, datasets.target, 16, seed=0)
    settings = lenet.TrainSettings()
    state = lenet.new_state(lenet.LeNetConfig(), settings)
    state = lenet.train_steps(
        state, data, settings, 6 * lenet.steps_per_epoch(len(data.y_train), settings.batch)
    )
    assert state.history[-1]["test_accuracy"] >= 0.95, state.history
    assert state.history[-1]["loss"] < state.history[0]["loss"]


def test_weights_round_trip_through_npz_and_bad_weights_are_refused(tmp_path):
    cfg = lenet.LeNetConfig()
    params = lenet.init_params(cfg, 4)
    np.savez(tmp_path / "w.npz", **params)
    with np.load(tmp_path / "w.npz") as npz:
        loaded = lenet.check_params(cfg, {k: npz[k] for k in npz.files})
    assert all(np.array_equal(loaded[k], params[k]) for k in params)
    wrong = dict(params, **{"fc1.weight": np.zeros((5, 5))})
    with pytest.raises(ValueError, match=r"fc1.weight has shape \(5, 5\), this network needs \(32, 64\)"):
        lenet.check_params(cfg, wrong)
    with pytest.raises(ValueError, match=r"missing \['conv2.bias'\], unexpected \['x'\]"):
        lenet.check_params(cfg, {**{k: v for k, v in params.items() if k != "conv2.bias"}, "x": np.zeros(1)})
    with pytest.raises(ValueError, match="finite"):
        lenet.check_params(cfg, dict(params, **{"conv1.bias": np.full(6, np.nan, np.float32)}))


@pytest.mark.parametrize(
    "stage,channel,row,col", [("conv1", 2, 0, 15), ("pool1", 1, 3, 4), ("conv2", 5, 1, 2), ("pool2", 9, 1, 0)]
)
def test_receptive_field_is_where_the_gradient_reaches(stage, channel, row, col, rng, torch):
    """Independent of the interval arithmetic: with tanh and average pooling (every path carries
    gradient) and random weights, the input pixels with a non-zero gradient of the picked cell are
    exactly the input span receptive_field names; the previous stage's span likewise."""
    cfg = lenet.LeNetConfig(activation="tanh", pool="avg")
    params = {k: torch.tensor(v, dtype=torch.float64) for k, v in lenet.init_params(cfg, 11).items()}
    F = torch.nn.functional
    x = torch.tensor(rng.random((1, 1, cfg.size, cfg.size)), requires_grad=True)
    values = {"input": x}
    values["conv1"] = torch.tanh(F.conv2d(x, params["conv1.weight"], params["conv1.bias"], padding=cfg.pad1))
    values["pool1"] = F.avg_pool2d(values["conv1"], 2)
    values["conv2"] = torch.tanh(F.conv2d(values["pool1"], params["conv2.weight"], params["conv2.bias"]))
    values["pool2"] = F.avg_pool2d(values["conv2"], 2)
    for v in values.values():
        if v is not x:
            v.retain_grad()
    values[stage][0, channel, row, col].backward()
    spans = lenet.receptive_field(cfg, stage, channel, row, col)
    for span in (spans[0], spans[-1]):
        grad = values[span.stage].grad[0].abs().numpy()
        reached = np.argwhere(grad > 0)
        assert sorted({int(c) for c in reached[:, 0]}) == list(span.channels), span
        assert (reached[:, 1].min(), reached[:, 1].max()) == (span.r0, span.r1), span
        assert (reached[:, 2].min(), reached[:, 2].max()) == (span.c0, span.c1), span
