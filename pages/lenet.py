"""LeNet-5 (PMPP ch. 16): the network the convolution layer lives in, trained here by our own
kernels."""

import numpy as np
import streamlit as st

from gpuops import lenet
from ui import lenet as training
from ui import lenet_room as room
from ui import lenet_view as view
from ui import navigation, pick, state
from ui.common import backend_name, figure, lazy_expander, shown_errors, style
from ui.state import Cell, Param
from viz import lenet as viz

navigation.through_app()  # a freshly started server may run this file alone (ui/navigation.py)

ACTIVATION = Param("lenet_act", "relu", "Activation", "radio", choices=lenet.ACTIVATIONS)
POOL = Param(
    "lenet_pool",
    "max",
    "Pooling",
    "radio",
    choices=lenet.POOLS,
    help="max: the largest value of each 2 x 2 window. avg: their mean (PMPP's subsampling).",
)
BATCH = Param("lenet_batch", 32, "Batch size", "select_slider", choices=(8, 16, 32, 64, 128))
LR = Param(
    "lenet_lr",
    50,
    "Learning rate",
    "slider",
    lo=1,
    hi=200,
    help="In thousandths (50e-3 = 0.05). SGD with momentum 0.9, as torch.optim.SGD.",
)
SEED = Param(
    "lenet_seed", 0, "Seed", "number", lo=0, hi=9999, help="Initial weights, data split and batch order."
)
EPOCHS = Param("lenet_epochs", 3, "Epochs per Train", "slider", lo=1, hi=20)
SOURCE = Param("lenet_src", "test", "Digit", "radio", choices=("test", "draw", "image"))
DIGIT = Param("lenet_digit", 0, "Test digit number", "number", lo=0, hi=359)
PICK = Param("lenet_pick", Cell("convb", 0, 0), choices=tuple(training.PICK_SPACES))
PARAMS = [ACTIVATION, POOL, BATCH, LR, SEED, EPOCHS, SOURCE, DIGIT, PICK]
DRAW_CHART = "lenet_draw"
SOURCES = {"test": "a test digit", "draw": "draw one", "image": "the sidebar image"}

state.use(PARAMS)
sty = style()
st.title("LeNet-5: the network around the layer")
st.caption(
    "PMPP's chapter 16 builds convolution into LeNet-5: convolution, activation, 2 x 2 subsampling "
    "(pooling), twice, then fully connected layers and ten probabilities. This one is sized for "
    "scikit-learn's 8 x 8 digits (shown at 16 x 16) and trained here, forward and backward, by this "
    f"app's kernels ({backend_name()}): conv2d, conv2d_backward, max/avg_pool2d and their backward, "
    "GEMM for the dense layers."
)


def settings() -> tuple[lenet.LeNetConfig, lenet.TrainSettings]:
    cols = st.columns([1, 1, 1.3, 1.3, 0.8])
    act = state.widget(ACTIVATION, container=cols[0])
    pool = state.widget(POOL, container=cols[1])
    batch = state.widget(BATCH, container=cols[2])
    lr = state.widget(LR, container=cols[3], format="%de-3")  # the value counts thousandths
    seed = state.widget(SEED, container=cols[4])
    cfg = lenet.LeNetConfig(activation=act, pool=pool)
    return cfg, lenet.TrainSettings(batch=int(batch), lr=int(lr) / 1000, seed=int(seed))


def section_train(cfg: lenet.LeNetConfig, run: lenet.TrainSettings) -> bool:
    """Train / Stop / Reset, a chunk of training when a goal is set, the curves (a follower: the
    instructor's network). Returns whether another chunk should follow (the page reruns)."""
    st.subheader("Train")
    note = room.room_note(cfg, run)
    a, b, c, d = st.columns([1.4, 0.7, 0.7, 2.2], vertical_alignment="bottom")
    epochs = state.widget(EPOCHS, container=a)
    if b.button("Train", type="primary", icon=":material/play_arrow:", key="lenet_train"):
        training.set_goal(cfg, run, int(epochs))
    if c.button("Stop", icon=":material/stop:", key="lenet_stop"):
        training.stop()
    if d.button("Reset to the seeded start", icon=":material/restart_alt:", key="lenet_reset"):
        training.reset(cfg, run)
    more = False
    if training.goal_of(cfg, run) is not None:
        bar = st.progress(0.0, text="training")
        more = training.train_chunk(cfg, run, bar)
    if note is not None:
        getattr(st, note.kind)(note.text)
        if note.instructors:
            return more
    net = training.current_state(cfg, run)
    for col, (label, value) in zip(st.columns(4), view.metrics(net).items(), strict=True):
        col.metric(label, value)
    if net.history:
        figure(
            viz.curves_figure(net.history, sty),
            "lenet_curves",
            "Accuracy on the training batches as they were seen, and on the held-out fifth after each epoch.",
        )
    elif not more:
        st.info(view.TRAIN_HINT, icon=":material/school:")
    return more


def section_weights(cfg: lenet.LeNetConfig, run: lenet.TrainSettings) -> None:
    """Download this network's weights; load weights (an instructor's, shared as a file)."""
    net = training.current_state(cfg, run)
    left, right = st.columns([1, 1.6])
    left.download_button(
        "Weights (.npz, PyTorch's names)",
        training.weights_npz(net),
        file_name=f"lenet_seed{run.seed}_epoch{net.epoch}.npz",
        icon=":material/download:",
        on_click="ignore",
        key="lenet_weights",
    )
    with right, lazy_expander("Load weights (.npz): a network shared as a file", "lenet_load_box") as shown:
        if not shown:
            return
        upload = st.file_uploader("Weights file", type=["npz"], key="lenet_upload")
        with shown_errors("Loading the weights"):
            if training.load_upload(cfg, run, upload):
                st.success(f"Loaded {upload.name}: training resumes from them.", icon=":material/upload:")


def section_filters_and_times(cfg: lenet.LeNetConfig, run: lenet.TrainSettings) -> None:
    net = training.current_state(cfg, run)
    left, right = (st.container(), st.container()) if sty.presentation else st.columns([1.2, 1])
    with left:
        figure(
            viz.filters_figure(net.params["conv1.weight"], sty),
            "lenet_filters",
            "The first layer's six 5 x 5 filters: random at the start, edge and stroke detectors "
            "after training.",
        )
    with right:
        ours = training.layer_ms(net)
        if not ours:
            st.caption("Time per layer appears after the first training steps.")
            return
        reference = None
        if st.toggle("Beside PyTorch (CPU) on the same network", key="lenet_torch"):
            reference = training.torch_layer_ms(cfg, run)
            if reference is None:
                st.caption("PyTorch is not installed on this server.")
        figure(
            viz.layer_times_figure(ours, reference, backend_name(), sty),
            "lenet_times",
            "Forward + backward per step, averaged over every step so far. PMPP: the convolution layers "
            "dominate.",
        )


def digit_input(cfg: lenet.LeNetConfig, run: lenet.TrainSettings) -> tuple[np.ndarray, int | None]:
    """The 16 x 16 input the network sees, and its label when it is a test digit."""
    a, b = st.columns([1.4, 1])
    source = state.widget(SOURCE, container=a, format_func=SOURCES.get)
    data = training.digits(cfg.size, run.seed)
    if source == "test":
        i = int(state.widget(DIGIT, container=b, hi=len(data.y_test) - 1))
        return data.x_test[i, 0], int(data.y_test[i])
    if source == "draw":
        with b:
            if st.button("Clear", icon=":material/ink_eraser:", key="lenet_clear"):
                training.clear_drawing()
            figure(
                viz.drawing_figure(training.drawing(), sty),
                DRAW_CHART,
                "Click cells to ink them (click again to erase): 8 x 8, like the training digits.",
                pickable=True,
                download=False,
            )
        return view.drawn_input(cfg), None
    b.caption(
        "Upload a digit in the sidebar (dark on light or light on dark): it is cropped to its ink, "
        "averaged down to 8 x 8 like the training set, and shown at 16 x 16."
    )
    return view.image_input(cfg, st.session_state["image"].planes), None


def current_pick(cfg: lenet.LeNetConfig) -> view.Picked:
    """The picked feature-map cell, kept inside its stage (the link's is stored), and what it reads."""
    cell, picked = view.fitted_pick(cfg, state.get(PICK) or PICK.default)
    state.put(PICK, cell)
    return picked


def apply_click(click: pick.Click | None, cfg: lenet.LeNetConfig) -> None:
    """A click on the drawing inks a cell; one on a feature map's cell picks it."""
    if click is not None and click.chart == DRAW_CHART:
        training.toggle_ink(click.row, click.col)
    elif (cell := view.clicked_pick(cfg, click)) is not None:
        state.put(PICK, cell)


def section_digit(cfg: lenet.LeNetConfig, run: lenet.TrainSettings) -> None:
    """A digit through the network: the ten probabilities, and every stage's maps; a clicked cell
    and the cells of the previous stage it reads."""
    st.subheader("A digit through the network")
    image, label = digit_input(cfg, run)
    acts = training.forward_on_device(cfg, training.current_state(cfg, run), image)
    hidden, logits, probs = view.dense_values(acts)
    p = current_pick(cfg)
    left, right = st.columns([1, 1.4])
    with left:
        figure(
            viz.digit_figure(image, sty, read=p.field),
            "lenet_input",
            "Red: the input cells the picked cell depends on (its receptive field).",
            pickable=True,  # hover outlines land here; a click on it picks nothing
        )
    with right:
        figure(
            viz.probabilities_figure(probs, label, sty),
            "lenet_probs",
            "Softmax of the last layer: what the network believes it sees.",
        )
    st.markdown(view.pick_text(p))
    maps = view.stage_maps(acts)
    for name, title in view.STAGES:
        figure(
            viz.maps_figure(maps[name], title, sty, picked=p.on(name), read=p.read_on(name)),
            f"lenet_{name}",
            pickable=True,
            download=False,
        )
    figure(
        viz.dense_figure(hidden, logits, sty),
        "lenet_dense",
        "pool2's 64 values, flattened, feed fc1 (GEMM); fc1 feeds fc2; softmax gives the "
        "probabilities above.",
        download=False,
    )


with shown_errors("The settings"):
    cfg, run = settings()
    apply_click(pick.bridge(rules=view.hover_rules(cfg), style=sty.outline_style()), cfg)
    with shown_errors("Training"):
        more = section_train(cfg, run)
        section_weights(cfg, run)
    section_filters_and_times(cfg, run)
    with shown_errors("The digit"):
        section_digit(cfg, run)
    if more:
        state.rerun()  # the next chunk of training: every figure above showed this one's result
