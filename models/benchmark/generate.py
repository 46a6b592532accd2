#!/usr/bin/python3
"""Generates models/benchmark/: buggy/fixed pairs rebuilt from Stack Overflow posts, fault
kinds of our own (each buggy + fixed), and healthy models, as ONNX models with their
training configuration in metadata_props, CSV data and the expected diagnosis.

Run: /usr/bin/python3 models/benchmark/generate.py [--no-check] [CASE ...]
(Debian python3-torch, python3-onnx, python3-sklearn, numpy). Never downloads: the data
comes from scikit-learn's bundled sets, its make_* generators, or synthetic data with the
shape, ranges and label rules of the original. Deterministic: every case has fixed seeds.

Layout written:
  <case>/model.onnx     opset 13, training mode, input "input", output "output", dynamic batch
  <case>/data.csv       header row; features, then the target column(s)
  <case>/expected.json  {"fault", "root_causes", "nodes", "notes"}
  manifest.json         every case (name, model, data, options, expected, kind, source, pair)

Unless a check is disabled (--no-check), every case is also trained here in PyTorch with
Keras semantics (losses on probabilities with Keras clipping, Keras optimiser settings) and
the first/last epoch loss and accuracy are printed: a "healthy" or "fixed" case must
really learn, and a buggy one should show its post's symptom. The check trains a copy; the
exported model holds the initial weights.
"""
import copy
import json
import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
from sklearn import datasets as skd

# posts.py (the real bugs of issue 15) imports this module as `generate`: alias the running
# script so that its cases land in this module's CASES, not in a second copy's.
sys.modules.setdefault("generate", sys.modules[__name__])
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import posts  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 13
PARAM_OPS = {"Gemm", "MatMul", "Conv", "BatchNormalization"}
SO = "https://stackoverflow.com/questions/"
BENCH = "https://github.com/Wardat-ISU/DeepLocalize/tree/master/Benchmark/StackOverflow/"

# ----------------------------------------------------------------------------- helpers


def rng(seed):
    return np.random.default_rng(seed)


def keras_uniform(t, limit=0.05):  # Keras 1/2 init='uniform': U(-0.05, 0.05)
    with torch.no_grad():
        t.uniform_(-limit, limit)


def keras_normal(t, std=0.05):  # Keras 1/2 init='normal': N(0, 0.05)
    with torch.no_grad():
        t.normal_(0.0, std)


def init_layers(model, kernel="glorot", bias="zeros", only=None):
    """Keras-style initialisation of Linear/Conv layers (glorot_uniform kernels, zero biases
    by default). `only` restricts it to the given Sequential indices."""
    for i, m in enumerate(model):
        if only is not None and i not in only:
            continue
        if not isinstance(m, (nn.Linear, nn.Conv2d)):
            continue
        if kernel == "glorot":
            nn.init.xavier_uniform_(m.weight)
        elif kernel == "uniform":
            keras_uniform(m.weight)
        elif kernel == "normal":
            keras_normal(m.weight)
        elif kernel == "std_normal":
            keras_normal(m.weight, 1.0)
        elif kernel == "zeros":
            nn.init.zeros_(m.weight)
        else:
            raise ValueError(kernel)
        if m.bias is None:
            continue
        if bias == "zeros":
            nn.init.zeros_(m.bias)
        elif bias == "std_normal":
            keras_normal(m.bias, 1.0)
        elif isinstance(bias, (int, float)):
            nn.init.constant_(m.bias, float(bias))
        else:
            raise ValueError(bias)


def keras_bn(n):  # Keras BatchNormalization defaults: momentum 0.99, epsilon 1e-3
    return nn.BatchNorm1d(n, eps=1e-3, momentum=0.01)


def standardise(a):
    a = np.asarray(a, dtype=np.float64)
    return (a - a.mean(0)) / a.std(0)


def minmax(a):
    a = np.asarray(a, dtype=np.float64)
    return (a - a.min(0)) / (a.max(0) - a.min(0))


def one_hot(ids, n):
    out = np.zeros((len(ids), n))
    out[np.arange(len(ids)), np.asarray(ids, dtype=int)] = 1.0
    return out


def shuffled(seed, *arrays):
    order = rng(seed).permutation(len(arrays[0]))
    return [np.asarray(a)[order] for a in arrays]


def digits(seed=0):
    d = skd.load_digits()
    x, y = shuffled(seed, d.data, d.target)
    return x.astype(np.float64), y.astype(int)  # pixels 0..16


def fmt(v):
    v = float(v)
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"


def write_csv(path, x, y, feature_names=None, target_names=None):
    x = np.asarray(x).reshape(len(x), -1)
    y = np.asarray(y).reshape(len(y), -1)
    fn = feature_names or [f"x{i}" for i in range(x.shape[1])]
    tn = target_names or (["y"] if y.shape[1] == 1 else [f"y{i}" for i in range(y.shape[1])])
    with open(path, "w") as f:
        f.write(",".join(fn + tn) + "\n")
        for a, b in zip(x, y):
            f.write(",".join(fmt(v) for v in a) + "," + ",".join(fmt(v) for v in b) + "\n")


def onnx_layers(model_proto):
    """The tool's layering (contract): a parameterised node together with the element-wise
    and activation nodes that follow it up to the next one."""
    layers = []
    for node in model_proto.graph.node:
        if node.op_type in PARAM_OPS or not layers:
            layers.append([])
        layers[-1].append(node.name)
    return layers


def export(model, in_shape, path, meta):
    """A model with `fold_constants = True` (one holding nn.LSTM/nn.GRU) is exported with constant
    folding, so that torch folds the gate reordering into the W, R, B initializers deeplocalize
    trains (unfolded, they are Slice/Concat of the torch parameters and do not train)."""
    fold = bool(getattr(model, "fold_constants", False))
    model = copy.deepcopy(model)
    torch.onnx.export(model, torch.zeros((2,) + tuple(in_shape)), path, opset_version=OPSET,
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=fold)
    m = onnx.load(path)
    for k, v in meta.items():
        p = m.metadata_props.add()
        p.key, p.value = "deeplocalize." + k, str(v)
    onnx.checker.check_model(m)
    onnx.save(m, path)
    return m


# ----------------------------------------------------------- Keras-semantics torch check

EPS = 1e-7


def keras_loss(name, p, y):
    if name == "mse":
        return ((p - y) ** 2).mean()
    if name == "mae":
        return (p - y).abs().mean()
    if name == "binary_crossentropy":
        p = p.clamp(EPS, 1 - EPS)
        return -(y * p.log() + (1 - y) * (1 - p).log()).mean()
    if name == "categorical_crossentropy":
        p = p / p.sum(1, keepdim=True)
        p = p.clamp(EPS, 1 - EPS)
        return -(y * p.log()).sum(1).mean()
    if name == "sparse_categorical_crossentropy":
        p = p / p.sum(1, keepdim=True)
        p = p.clamp(EPS, 1 - EPS)
        return -p.gather(1, y.long().view(-1, 1)).log().mean()
    raise ValueError(name)


def keras_accuracy(loss, p, y):
    if loss in ("mse", "mae") and p.shape[1] == 1:
        return None  # regression: report the loss only
    if p.shape[1] == 1 or loss == "binary_crossentropy":
        return ((p > 0.5).float() == y).float().mean().item()
    if y.shape[1] == 1:
        return (p.argmax(1) == y.view(-1).long()).float().mean().item()
    return (p.argmax(1) == y.argmax(1)).float().mean().item()


def keras_optimizer(cfg, params):
    name, lr = cfg["optimizer"], cfg.get("learning_rate")
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr if lr is not None else 0.01, momentum=cfg.get("momentum", 0.0),
                               nesterov=cfg.get("nesterov", False))
    if name == "adam":
        return torch.optim.Adam(params, lr=lr if lr is not None else 1e-3, eps=1e-7)
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr if lr is not None else 1e-3, alpha=0.9, eps=1e-7)
    if name == "adagrad":  # Keras: initial_accumulator_value 0.1, epsilon 1e-7
        return torch.optim.Adagrad(params, lr=lr if lr is not None else 0.01, initial_accumulator_value=0.1,
                                   eps=1e-7)
    raise ValueError(name)


def torch_check(model, x, y, cfg, in_shape):
    """Trains `model` (a copy of the exported one) like Keras' fit would: validation rows
    taken from the end, shuffled mini-batches each epoch. Returns per-epoch (loss, acc)."""
    torch.manual_seed(cfg.get("seed", 0))
    x = torch.tensor(np.asarray(x, dtype=np.float32)).reshape((len(x),) + tuple(in_shape))
    y = torch.tensor(np.asarray(y, dtype=np.float32)).reshape(len(y), -1)
    loss_name = cfg["loss"]
    if loss_name == "categorical_crossentropy" and y.shape[1] == 1:
        n_out = model(x[:2]).shape[1]
        y = torch.nn.functional.one_hot(y.view(-1).long().clamp(0, n_out - 1), n_out).float()
    n_val = int(len(x) * cfg.get("validation_split", 0.0))
    xt, yt = x[:len(x) - n_val], y[:len(y) - n_val]
    opt = keras_optimizer(cfg, model.parameters())
    decay = cfg.get("decay", 0.0)
    base_lr = opt.param_groups[0]["lr"]
    bs, history, it = cfg["batch_size"], [], 0
    g = torch.Generator().manual_seed(cfg.get("seed", 0))
    for _ in range(cfg["epochs"]):
        model.train()
        order = torch.randperm(len(xt), generator=g)
        tot, n, acc_sum = 0.0, 0, 0.0
        for s in range(0, len(xt), bs):
            idx = order[s:s + bs]
            for pg in opt.param_groups:
                pg["lr"] = base_lr / (1.0 + decay * it)
            p = model(xt[idx])
            loss = keras_loss(loss_name, p, yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            it += 1
            tot += loss.item() * len(idx)
            n += len(idx)
            a = keras_accuracy(loss_name, p.detach(), yt[idx])
            acc_sum += (a or 0.0) * len(idx)
        acc = acc_sum / n if keras_accuracy(loss_name, p.detach(), yt[idx]) is not None else None
        history.append((tot / n, acc))
    return history, it


# ------------------------------------------------------------------------------- cases

CASES = []


# Posts whose question and accepted answer could be read (on public mirrors of Stack Overflow);
# the others were rebuilt from the DeepLocalize benchmark's buggy and correct programs and the
# issue's one-line summary.
POSTS_READ = {"31556268", "44164749", "52800582"}


def provenance(post):
    bench = BENCH + post
    if post in POSTS_READ:
        return (" Source: the post's question and accepted answer, cross-checked with the DeepLocalize "
                "benchmark's programs (" + bench + ").")
    return (" Source: the post's text could not be retrieved here; rebuilt from the DeepLocalize benchmark's "
            "buggy and correct programs (" + bench + ") and the issue's summary of the post.")


def case(name, kind, model, in_shape, x, y, cfg, expect_fault, root_causes, layers, notes,
         source="constructed", pair=None, feature_names=None, target_names=None, seed=0, split="dev",
         own_provenance=False):
    """Registers a case. `layers`: indices (negative counts from the end) of the tool's
    layers where the fault is; their ONNX node names are read back from the export."""
    if source.startswith(SO) and kind == "buggy" and not own_provenance:
        notes += provenance(source[len(SO):])
    CASES.append(dict(name=name, kind=kind, model=model, in_shape=in_shape, x=x, y=y, cfg=cfg,
                      fault=expect_fault, root_causes=root_causes, layers=layers, notes=notes,
                      source=source, pair=pair, feature_names=feature_names,
                      target_names=target_names, seed=seed, split=split))


def seq(seed, *mods, kernel="glorot", bias="zeros"):
    torch.manual_seed(seed)
    m = nn.Sequential(*mods)
    init_layers(m, kernel, bias)
    return m


# --- Stack Overflow 48385830: Nielsen's 784-30-10 network rebuilt in Keras -------------------

def so_48385830():
    x, ids = digits(1)
    x = x / 16.0  # the post scales MNIST by 1/255
    y = one_hot(ids, 10)
    src, pair = SO + "48385830", "so_48385830"
    common = dict(optimizer="sgd", learning_rate=3.0, epochs=15, batch_size=10, seed=1, targets=10)
    torch.manual_seed(1)
    buggy = nn.Sequential(nn.Linear(64, 30), nn.Linear(30, 10))
    init_layers(buggy, "std_normal", "std_normal")
    case("so_48385830_buggy", "buggy", buggy, (64,), x, y, dict(common, loss="mse"), True,
         ["activation", "loss"], [0, 1],
         "Nielsen's 784-30-10 MNIST network rebuilt in Keras: two Dense layers without any activation "
         "(Keras' default is linear, so the model is one linear map), N(0,1) kernels and biases, MSE, "
         "SGD lr 3.0, batch 10. Loss goes to NaN / accuracy stays at chance. Fix (accepted answer): "
         "sigmoid on the hidden layer, softmax on the output and categorical cross-entropy. Data: "
         "sklearn digits (8x8) scaled to 0..1 as the post scales MNIST by 1/255; 15 epochs instead "
         "of 30 to stay under 3000 iterations.", src, pair, target_names=[f"class{i}" for i in range(10)])
    torch.manual_seed(1)
    fixed = nn.Sequential(nn.Linear(64, 30), nn.Sigmoid(), nn.Linear(30, 10), nn.Softmax(dim=1))
    init_layers(fixed, "std_normal", "std_normal")
    case("so_48385830_fixed", "fixed", fixed, (64,), x, y, dict(common, loss="categorical_crossentropy"),
         False, [], [],
         "Fix of so_48385830_buggy from the accepted answer: sigmoid hidden layer, softmax output, "
         "categorical cross-entropy; the post's N(0,1) initialisation and SGD lr 3.0 are kept.",
         src, pair, target_names=[f"class{i}" for i in range(10)])


# --- 44164749: multi-label data fitted with softmax + categorical cross-entropy --------------

# The post's hidden layers have 5000 and 600 units: 3.3M float32 weights, 13.3 MB per ONNX file.
# To keep the committed benchmark small they are scaled by 2/5 (same 25:3 ratio); set this to
# (5000, 600) to generate the post's exact widths.
SO_44164749_UNITS = (2000, 240)

def so_44164749():
    x, y = skd.make_multilabel_classification(n_samples=2000, n_features=64, n_classes=11, n_labels=3,
                                              random_state=44164749 % 2**31)
    src, pair = SO + "44164749", "so_44164749"
    common = dict(optimizer="sgd", learning_rate=0.01, momentum=0.9, nesterov="true", decay=1e-6,
                  epochs=5, batch_size=100, seed=2, targets=11)

    h1, h2 = SO_44164749_UNITS

    def net(last):
        return seq(2, nn.Linear(64, h1), nn.ReLU(), nn.Dropout(0.1), nn.Linear(h1, h2), nn.ReLU(),
                   nn.Dropout(0.1), nn.Linear(h2, 11), last)

    notes = ("Multi-label data (11 labels from a MultiLabelBinarizer, several 1s per row) fitted by "
             "Dense(5000, relu)-Dropout(0.1)-Dense(600, relu)-Dropout(0.1)-Dense(11, softmax) with "
             "categorical cross-entropy and SGD(lr 0.01, decay 1e-6, momentum 0.9, nesterov): softmax "
             "makes the labels compete, so the model cannot predict several labels at once. Fix "
             "(accepted answer): sigmoid output and binary cross-entropy. Data: sklearn "
             "make_multilabel_classification, 2000 rows x 64 count features, 11 labels, about 3 per row "
             "(the post's data is not public); batch 100 instead of the post's 2000 so that 5 epochs are "
             "100 updates rather than 5; hidden widths scaled from 5000/600 to 2000/240 to keep the committed "
             "model small (generate.py: SO_44164749_UNITS).")
    case("so_44164749_buggy", "buggy", net(nn.Softmax(dim=1)), (64,), x, y,
         dict(common, loss="categorical_crossentropy"), True, ["activation", "loss"], [-1], notes, src, pair)
    case("so_44164749_fixed", "fixed", net(nn.Sigmoid()), (64,), x, y, dict(common, loss="binary_crossentropy"),
         False, [], [], "Fix of so_44164749_buggy (accepted answer): sigmoid output with binary "
         "cross-entropy; everything else as in the post.", src, pair)


# --- 31556268: XOR with MAE and plain SGD ---------------------------------------------------

def so_31556268():
    x = np.array([[1, 1], [1, 0], [0, 0], [0, 1]], dtype=float)
    y = np.array([[0], [1], [0], [1]], dtype=float)
    src, pair = SO + "31556268", "so_31556268"

    def net():
        return seq(3, nn.Linear(2, 4), nn.Sigmoid(), nn.Linear(4, 1), nn.Sigmoid())

    case("so_31556268_buggy", "buggy", net(), (2,), x, y,
         dict(loss="mae", optimizer="sgd", learning_rate=0.05, momentum=0.11, nesterov="true", decay=1e-6,
              epochs=1000, batch_size=4, seed=3), True, ["loss", "optimizer", "training_length"], [-1],
         "XOR with a 2-4-1 sigmoid network, mean absolute error and SGD(lr 0.05, momentum 0.11, "
         "nesterov, decay 1e-6), 1000 epochs of the 4 rows: the outputs stay near 0.5. Fix (accepted "
         "answer): MSE (a smoother loss), Adam, more epochs.", src, pair)
    case("so_31556268_fixed", "fixed", net(), (2,), x, y,
         dict(loss="mse", optimizer="adam", epochs=3000, batch_size=4, seed=3), False, [], [],
         "Fix of so_31556268_buggy (accepted answer): loss='mse', optimizer='adam', more epochs "
         "(3000 here; the answer used up to 10000 and says it usually converges much sooner).", src, pair)


# --- 48251943: regression with a ReLU output unit ---------------------------------------------

def so_48251943():
    r = rng(48251943)
    x = r.normal(0.55, 0.8, size=(17, 2)).round(3)
    y = np.clip(0.45 * x[:, 0] - 0.3 * x[:, 1] + 0.05 + r.normal(0, 0.1, 17), -0.95, 0.95).round(3)
    src, pair = SO + "48251943", "so_48251943"

    def net(last):
        return seq(4, nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1), last)

    notes = ("Small regression (17 rows, 2 features, targets of both signs) with Dense(4, relu) then "
             "Dense(1, relu), MSE and SGD (lr 0.01), 50 epochs of batch 10: the ReLU output cannot produce "
             "negative targets and, once its input goes negative, outputs 0 with zero gradient, so the "
             "predictions are constant. Fix: tanh output and more epochs (500). The benchmark's data (17 rows) has targets up to 2.7, which tanh cannot "
             "reach; here the synthetic targets lie in (-1, 1) so that the accepted fix is a real fix.")
    case("so_48251943_buggy", "buggy", net(nn.ReLU()), (2,), x, y,
         dict(loss="mse", optimizer="sgd", epochs=50, batch_size=10, seed=4), True,
         ["activation", "training_length"], [-1], notes, src, pair)
    case("so_48251943_fixed", "fixed", net(nn.Tanh()), (2,), x, y,
         dict(loss="mse", optimizer="sgd", epochs=500, batch_size=10, seed=4), False, [], [],
         "Fix of so_48251943_buggy: Dense(1, activation='tanh') output, 500 epochs.", src, pair)


# --- 38648195: multi-label (3 labels) with softmax + MSE --------------------------------------

def so_38648195():
    x, y = skd.make_multilabel_classification(n_samples=2000, n_features=20, n_classes=3, random_state=38648195)
    src, pair = SO + "38648195", "so_38648195"

    def net(last):
        return seq(5, nn.Linear(20, 20), nn.ReLU(), nn.Dropout(0.5), nn.Linear(20, 20), nn.ReLU(), nn.Dropout(0.5),
                   nn.Linear(20, 3), last)

    common = dict(optimizer="sgd", epochs=20, batch_size=20, seed=5, targets=3, validation_split=0.2)
    case("so_38648195_buggy", "buggy", net(nn.Softmax(dim=1)), (20,), x, y, dict(common, loss="mse"), True,
         ["activation", "loss"], [-1],
         "Multi-label data (make_multilabel_classification, 20 features, 3 labels) with "
         "Dense(20, relu)-Dropout(0.5)-Dense(20, relu)-Dropout(0.5)-Dense(3, softmax), MSE and SGD, 20 "
         "epochs of batch 20, 20% held out: softmax forces the three label probabilities to sum to 1. "
         "Fix (accepted answer): sigmoid output with binary cross-entropy. Data: 2000 rows instead of "
         "the post's 60000.", src, pair)
    case("so_38648195_fixed", "fixed", net(nn.Sigmoid()), (20,), x, y, dict(common, loss="binary_crossentropy"),
         False, [], [], "Fix of so_38648195_buggy (accepted answer): sigmoid output, binary cross-entropy.",
         src, pair)


# --- 33969059: linear regression through a 1-unit softmax --------------------------------------

def so_33969059():
    r = rng(33969059)
    x = r.uniform(0, 10000, size=(2000, 3)).round(2)
    y = x @ np.array([2.0, 1.0, 0.5]) + 2.2
    src, pair = SO + "33969059", "so_33969059"
    cfg = dict(loss="mse", optimizer="sgd", learning_rate=0.1, momentum=0.9, nesterov="true", decay=1e-6,
               epochs=20, batch_size=32, seed=6)

    def net(last):
        mods = [nn.Linear(3, 3), nn.Tanh(), nn.Dropout(0.5), nn.Linear(3, 2), nn.Tanh(), nn.Dropout(0.5),
                nn.Linear(2, 1)] + ([last] if last is not None else [])
        return seq(6, *mods, kernel="uniform")

    case("so_33969059_buggy", "buggy", net(nn.Softmax(dim=1)), (3,), x, y, cfg, True, ["activation", "data"], [-1],
         "Regression y = 2*x1 + x2 + 0.5*x3 + 2.2 with x uniform in [0, 10000): Dense(3, tanh)-Dropout(0.5)-"
         "Dense(2, tanh)-Dropout(0.5)-Dense(1, softmax), init='uniform', MSE, SGD(lr 0.1, decay 1e-6, "
         "momentum 0.9, nesterov), 20 epochs. A softmax over one unit always outputs 1, so nothing is "
         "learned; inputs and targets are also unscaled. Fix: linear output and scaled data. Data: "
         "2000 rows instead of 100000.", src, pair)
    # Fix: linear output; inputs and targets scaled (x / 10000, y / max|y|).
    xs = x / 10000.0
    ys = y / np.abs(y).max()
    case("so_33969059_fixed", "fixed", net(None), (3,), xs, ys, cfg, False, [], [],
         "Fix of so_33969059_buggy: linear output unit and scaled data (x / 10000, y / max y). With the "
         "benchmark's own fix (linear output, targets only divided by 2.2) SGD with lr 0.1 and momentum "
         "0.9 diverges on targets in the thousands, so the data is scaled as the issue's summary says.",
         src, pair)


# --- 55328966: MNIST from CSV, unscaled pixels, sigmoid output with categorical CE -----------

def so_55328966():
    x, ids = digits(7)
    x255 = x * 255.0 / 16.0  # MNIST's unscaled range 0..255
    src, pair = SO + "55328966", "so_55328966"
    cfg = dict(loss="categorical_crossentropy", optimizer="sgd", learning_rate=1e-4, epochs=27, batch_size=32,
               seed=7)

    def net(last):
        return seq(7, nn.Linear(64, 64), nn.Linear(64, 50), nn.ReLU(), nn.Linear(50, 10), last)

    case("so_55328966_buggy", "buggy", net(nn.Sigmoid()), (64,), x255, ids, cfg, True,
         ["data", "activation"], [-1],
         "MNIST read from CSV with the pixels left in 0..255: Dense(784)-Dense(50, relu)-Dense(10, sigmoid), "
         "categorical cross-entropy on one-hot labels, plain gradient descent (lr 1e-4), batch 32, 10 epochs "
         "over 5000 rows. Fix (accepted answer): divide the pixels by 255 and use a softmax output. Data: "
         "sklearn digits (8x8, so Dense(64) stands for Dense(784)) rescaled to 0..255; label as class id "
         "(one-hot encoded by the tool); 27 epochs of the 1797 rows so that the number of updates (1539) "
         "matches the post's 10 epochs of 5000 rows.", src, pair, target_names=["label"])
    case("so_55328966_fixed", "fixed", net(nn.Softmax(dim=1)), (64,), x255 / 255.0, ids, cfg, False, [], [],
         "Fix of so_55328966_buggy (accepted answer): pixels divided by 255, softmax output; the post's "
         "optimizer (gradient descent, lr 1e-4) is kept. On the 8x8 stand-in (12x fewer inputs than MNIST) "
         "this learns slowly but steadily: in PyTorch the loss falls every epoch, 2.35 -> 2.25.", src, pair, target_names=["label"])


# --- 31880720: binary task with a 1-unit softmax and binary CE --------------------------------

def so_31880720():
    x = np.vstack([np.ones((500, 128)), np.zeros((500, 128))])
    y = np.concatenate([np.ones(500), np.zeros(500)])
    x, y = shuffled(31880720, x, y)
    src, pair = SO + "31880720", "so_31880720"
    cfg = dict(loss="binary_crossentropy", optimizer="rmsprop", epochs=3, batch_size=1, seed=8)
    case("so_31880720_buggy", "buggy",
         seq(8, nn.Linear(128, 50), nn.ReLU(), nn.ReLU(), nn.Dropout(0.2), nn.Linear(50, 50), nn.ReLU(),
             nn.Dropout(0.2), nn.Linear(50, 1), nn.Softmax(dim=1)), (128,), x, y, cfg, True, ["activation"], [-1],
         "Toy binary task (rows of 128 ones labelled True, rows of 128 zeros labelled False): "
         "Dense(50, relu)+relu-Dropout(0.2)-Dense(50, relu)-Dropout(0.2)-Dense(1, softmax), binary "
         "cross-entropy, RMSprop, batch 1, 3 epochs: a softmax over one unit is constantly 1, so accuracy "
         "stays at 50%. Fix (accepted answer): sigmoid output. Data: 1000 rows instead of 20000.", src, pair)
    case("so_31880720_fixed", "fixed",
         seq(8, nn.Linear(128, 50), nn.ReLU(), nn.Dropout(0.2), nn.Linear(50, 50), nn.ReLU(), nn.Dropout(0.2),
             nn.Linear(50, 1), nn.Sigmoid()), (128,), x, y, cfg, False, [], [],
         "Fix of so_31880720_buggy (accepted answer): Dense(1, activation='sigmoid').", src, pair)


# --- 39525358: three unscaled features, batch size 1 --------------------------------------------

def so_39525358():
    r = rng(39525358)
    patterns = [((65, 66, 67), 0), ((65, 66, 70), 0), ((68, 69, 70), 1), ((68, 69, 67), 1)]
    rows = [patterns[i] for i in r.choice(len(patterns), size=20, p=[0.35, 0.15, 0.35, 0.15])]
    x = np.array([p for p, _ in rows], dtype=float)
    y = np.array([c for _, c in rows], dtype=float)
    src, pair = SO + "39525358", "so_39525358"

    def net():
        return seq(9, nn.Linear(3, 12), nn.ReLU(), nn.Linear(12, 3), nn.ReLU(), nn.Linear(3, 1), nn.Sigmoid(),
                   kernel="uniform")

    notes = ("Binary classification of rows of three unscaled codes (65..70, label 1 for the 68-69-x rows): "
             "Dense(12, relu)-Dense(3, relu)-Dense(1, sigmoid), init='uniform', binary cross-entropy, Adam, "
             "batch 1, 150 epochs: accuracy does not improve. Fix: standardise the features "
             "(StandardScaler) and use batch 10. Data: 20 rows with the codes and label rule of the "
             "benchmark's 'sorted output.csv'.")
    case("so_39525358_buggy", "buggy", net(), (3,), x, y,
         dict(loss="binary_crossentropy", optimizer="adam", epochs=150, batch_size=1, seed=9), True,
         ["data"], [], notes, src, pair)
    case("so_39525358_fixed", "fixed", net(), (3,), standardise(x), y,
         dict(loss="binary_crossentropy", optimizer="adam", epochs=150, batch_size=10, seed=9), False, [], [],
         "Fix of so_39525358_buggy: features standardised, batch size 10. With init='uniform' "
         "(U(-0.05, 0.05)) the start is slow: in PyTorch the loss falls steadily (0.69 -> 0.44 over the 150 "
         "epochs) while train accuracy stays at the majority rate, and reaches 100% around epoch 170.",
         src, pair)


# --- 48934338: y = 5x^2 + noise, ReLU MLP, SGD lr 0.1 diverges ----------------------------------

def so_48934338():
    r = rng(48934338)
    x = np.arange(0.0, 5.0, 0.1).reshape(-1, 1)
    y = 5 * x ** 2 + r.standard_normal((50, 1)) ** 3
    src, pair = SO + "48934338", "so_48934338"

    def net():
        torch.manual_seed(10)
        m = nn.Sequential(nn.Linear(1, 50), nn.ReLU(), nn.Linear(50, 30), nn.ReLU(), nn.Linear(30, 1))
        init_layers(m)
        init_layers(m, "uniform", only={2})  # the post's Dense(30, init='uniform')
        return m

    case("so_48934338_buggy", "buggy", net(), (1,), x, y,
         dict(loss="mse", optimizer="sgd", learning_rate=0.1, epochs=1000, batch_size=32, seed=10), True,
         ["learning_rate"], [],
         "Fit y = 5x^2 + noise^3 for x in [0, 5) (50 points) with Dense(50, relu)-Dense(30, relu, "
         "init='uniform')-Dense(1), MSE, SGD lr 0.1, 1000 epochs: the loss explodes to NaN. Fix "
         "(accepted answer): lr 0.001.", src, pair)
    case("so_48934338_fixed", "fixed", net(), (1,), x, y,
         dict(loss="mse", optimizer="sgd", learning_rate=0.001, epochs=1000, batch_size=32, seed=10), False,
         [], [], "Fix of so_48934338_buggy (accepted answer): SGD(lr=0.001).", src, pair)


# --- 59278771: Iris, unscaled, 3-unit sigmoid output with categorical CE ----------------------

def so_59278771():
    iris = skd.load_iris()
    x, ids = shuffled(59278771, iris.data, iris.target)
    src, pair = SO + "59278771", "so_59278771"
    case("so_59278771_buggy", "buggy",
         seq(12, nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 3), nn.Sigmoid(), kernel="normal"), (4,), x, ids,
         dict(loss="categorical_crossentropy", optimizer="adam", epochs=100, batch_size=5, seed=11), True,
         ["activation", "data"], [0, 1],
         "Iris with unscaled features: Dense(4, relu, init='normal')-Dense(3, sigmoid, init='normal'), "
         "categorical cross-entropy, Adam, batch 5: accuracy stays low. Fix (accepted answer): min-max "
         "scaling, a softmax output and one more hidden layer (Dense(8, relu)). 100 epochs instead of 200 "
         "to stay under 3000 iterations. With init='normal' (N(0, 0.05)) whether the 4 relu units survive "
         "depends on the draw: the initial weights here are a draw with which, in PyTorch, the buggy model "
         "stays at chance as in the post (other draws reach ~97% train accuracy despite the bug). Expected "
         "nodes: both layers, since the fix changed the input scaling, the hidden layers and the output.", src, pair, target_names=["species"])
    case("so_59278771_fixed", "fixed",
         seq(11, nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax(dim=1),
             kernel="normal"), (4,), minmax(x), ids,
         dict(loss="categorical_crossentropy", optimizer="adam", epochs=200, batch_size=32, seed=11), False, [], [],
         "Fix of so_59278771_buggy (accepted answer): MinMaxScaler on the features, Dense(4, relu)-"
         "Dense(8, relu)-Dense(3, softmax), 200 epochs (KerasClassifier's default batch 32). Initial weights: "
         "a draw with which it learns in PyTorch (with init='normal' some draws leave the relu units dead).",
         src, pair, target_names=["species"])


# --- 52800582: y = x^4, unscaled, sigmoid hidden layer ------------------------------------------

def so_52800582():
    x = np.arange(-100, 100, 0.5).reshape(-1, 1)
    y = x ** 4
    src, pair = SO + "52800582", "so_52800582"
    cfg = dict(loss="mse", optimizer="adam", epochs=1000, batch_size=400, seed=12)
    case("so_52800582_buggy", "buggy",
         seq(12, nn.Linear(1, 50), nn.Sigmoid(), nn.Linear(50, 50), nn.ELU(), nn.Linear(50, 1)), (1,), x, y, cfg,
         True, ["data", "activation"], [0],
         "Fit y = x^4 for x in [-100, 100) step 0.5 (400 points, full batch) with Dense(50, sigmoid)-"
         "Dense(50, elu)-Dense(1), MSE, Adam: inputs of size 100 saturate the sigmoid and targets up to "
         "1e8 are far from what glorot-initialised layers produce, so the fit converges to a poor line. "
         "Fix (accepted answer): standardise x and y; the corrected program also uses relu in the first "
         "layer.", src, pair)
    case("so_52800582_fixed", "fixed",
         seq(12, nn.Linear(1, 50), nn.ReLU(), nn.Linear(50, 50), nn.ELU(), nn.Linear(50, 1)), (1,),
         standardise(x), standardise(y), cfg, False, [], [],
         "Fix of so_52800582_buggy (accepted answer): x and y standardised (StandardScaler), relu in the "
         "first layer.", src, pair)


# --- 44066044: 11 unscaled network-packet features, ReLU output with binary CE -----------------

def so_44066044():
    r = rng(44066044)
    n = 150
    label = (r.random(n) < 0.5).astype(float)
    src_ip = np.where(label == 1, 3232235781, r.choice([3232235773, 3232235778], n)).astype(float)
    dst_ip = np.full(n, 3232235779.0)
    proto = np.full(n, 6.0)
    ttl = np.full(n, 128.0)
    window = np.where(label == 1, r.choice([8192, 525558, 525568], n), r.choice([524032, 524288, 524544], n))
    port = np.where(label == 1, r.choice([502, 55924], n), r.choice([502, 55783, 56783], n))
    has_payload = r.random(n) < 0.5
    f6 = np.where(has_payload, 12, 0)
    f7 = np.where(has_payload, np.where(label == 1, r.choice([0, 65280], n), r.choice([61, 0.860417], n)), 0)
    f8 = np.where(has_payload, np.where(label == 1, 5, 6), 0)
    f9 = np.zeros(n)
    f10 = np.where(has_payload, np.where(label == 1, r.integers(100, 103, n), r.integers(206, 208, n)), 0)
    x = np.column_stack([src_ip, dst_ip, proto, ttl, window, port, f6, f7, f8, f9, f10]).astype(float)
    names = ["src_ip", "dst_ip", "protocol", "ttl", "window", "port", "f6", "f7", "f8", "f9", "f10"]
    src, pair = SO + "44066044", "so_44066044"
    cfg = dict(loss="binary_crossentropy", optimizer="adam", epochs=100, batch_size=5, seed=13)

    def net(last):
        return seq(13, nn.Linear(11, 12), nn.ReLU(), nn.Linear(12, 12), nn.ReLU(), nn.Linear(12, 1), last,
                   kernel="normal")

    notes = ("Network packets (11 numeric fields: IP addresses as integers around 3.2e9, window sizes around "
             "5e5, ports, ...; label 1 for one source host): Dense(12, relu)-Dense(12, relu)-Dense(1, relu), "
             "init='normal', binary cross-entropy, Adam, batch 5, 100 epochs: accuracy stuck. Fix (accepted "
             "answer): scale the features (preprocessing.scale) and use a sigmoid output. Data: 150 synthetic "
             "rows with the fields and label rule of the benchmark's NetworkPackets.csv (" + BENCH +
             "44066044).")
    case("so_44066044_buggy", "buggy", net(nn.ReLU()), (11,), x, y_of(label), cfg, True, ["activation", "data"],
         [-1], notes, src, pair, feature_names=names, target_names=["label"])
    case("so_44066044_fixed", "fixed", net(nn.Sigmoid()), (11,), standardise_keep_const(x), y_of(label), cfg,
         False, [], [], "Fix of so_44066044_buggy (accepted answer): features scaled with "
         "sklearn.preprocessing.scale (constant columns become 0), Dense(1, activation='sigmoid').",
         src, pair, feature_names=names, target_names=["label"])


def y_of(v):
    return np.asarray(v, dtype=float).reshape(-1, 1)


def standardise_keep_const(a):
    a = np.asarray(a, dtype=np.float64)
    sd = a.std(0)
    sd[sd == 0] = 1.0
    return (a - a.mean(0)) / sd


# --- 45442843: one feature in 15000..25000, 1-unit softmax, MAE ------------------------------

def so_45442843():
    r = rng(45442843)
    x = r.integers(15000, 25000, size=(1000, 1)).astype(float)
    y = (x[:, 0] < 20000).astype(float)
    src, pair = SO + "45442843", "so_45442843"
    cfg = dict(optimizer="rmsprop", epochs=100, batch_size=200, seed=14, validation_split=0.2)
    torch.manual_seed(14)
    buggy = nn.Sequential(nn.Linear(1, 1), nn.Sigmoid(), nn.Linear(1, 1), nn.Softmax(dim=1))
    init_layers(buggy)
    init_layers(buggy, "normal", only={2})
    case("so_45442843_buggy", "buggy", buggy, (1,), x, y_of(y), dict(cfg, loss="mae"), True,
         ["activation", "loss", "data"], [-1],
         "One unscaled feature in [15000, 25000), label 1 below 20000: Dense(1, sigmoid)-Dense(1, softmax, "
         "init='normal'), mean absolute error, RMSprop, batch 200, 100 epochs, last 20% for validation: the "
         "1-unit softmax always outputs 1. Fix (accepted answer): scale the feature, sigmoid output, binary "
         "cross-entropy. Data: 1000 synthetic rows with the benchmark's range and label rule (" + BENCH +
         "45442843).", src, pair, target_names=["label"])
    torch.manual_seed(14)
    fixed = nn.Sequential(nn.Linear(1, 1), nn.Sigmoid(), nn.Linear(1, 1), nn.Sigmoid())
    init_layers(fixed)
    init_layers(fixed, "normal", only={2})
    case("so_45442843_fixed", "fixed", fixed, (1,), standardise(x), y_of(y), dict(cfg, loss="binary_crossentropy"),
         False, [], [], "Fix of so_45442843_buggy (accepted answer): feature scaled (preprocessing.scale), "
         "Dense(1, activation='sigmoid') output, binary cross-entropy. The 1-1-1 network learns slowly with "
         "RMSprop's default lr 1e-3: in PyTorch the loss falls 0.69 -> 0.64 and accuracy rises 0.51 -> 0.83 "
         "over the 100 epochs.", src, pair, target_names=["label"])


# --- fault kinds of our own ----------------------------------------------------------------------

def own_exploding_lr():
    d = skd.load_diabetes()
    x, y = shuffled(20, standardise(d.data), standardise(d.target))
    def net():
        return seq(20, nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
    cfg = dict(loss="mse", optimizer="sgd", momentum=0.9, epochs=50, batch_size=16, seed=20)
    case("exploding_lr_buggy", "buggy", net(), (10,), x, y_of(y), dict(cfg, learning_rate=1.0), True,
         ["learning_rate"], [],
         "Exploding gradients from a too high learning rate: diabetes regression (standardised features and "
         "target), Dense(32, relu)-Dense(32, relu)-Dense(1), MSE, SGD lr 1.0 with momentum 0.9: the weights "
         "blow up and the loss becomes NaN within a few updates. Fix: lr 0.01.", pair="exploding_lr")
    case("exploding_lr_fixed", "fixed", net(), (10,), x, y_of(y), dict(cfg, learning_rate=0.01), False, [], [],
         "Fix of exploding_lr_buggy: SGD lr 0.01 (momentum 0.9).", pair="exploding_lr")


def own_vanishing_sigmoid():
    x, ids = digits(21)
    x = x / 16.0
    def net(act):
        mods = [nn.Linear(64, 32), act()]
        for _ in range(8):
            mods += [nn.Linear(32, 32), act()]
        mods += [nn.Linear(32, 10), nn.Softmax(dim=1)]
        return seq(21, *mods)
    cfg = dict(loss="categorical_crossentropy", optimizer="sgd", learning_rate=0.05, epochs=20, batch_size=32,
               seed=21)
    case("vanishing_sigmoid_buggy", "buggy", net(nn.Sigmoid), (64,), x, ids, cfg, True, ["activation"],
         list(range(0, 8)),
         "Vanishing gradients: digits (0..1) through nine Dense(32, sigmoid) layers and a softmax output, "
         "SGD lr 0.05: the gradient shrinks by ~4x per sigmoid layer, the first layers barely move and the "
         "loss stays near ln(10). Fix: relu activations.", pair="vanishing_sigmoid", target_names=["digit"])
    case("vanishing_sigmoid_fixed", "fixed", net(nn.ReLU), (64,), x, ids, cfg, False, [], [],
         "Fix of vanishing_sigmoid_buggy: the same nine hidden layers with relu.", pair="vanishing_sigmoid",
         target_names=["digit"])


def own_dead_relu_bias():
    d = skd.load_breast_cancer()
    x, y = shuffled(22, minmax(d.data), d.target)
    def net(bias):
        torch.manual_seed(22)
        m = nn.Sequential(nn.Linear(30, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
        init_layers(m)
        if bias:
            nn.init.constant_(m[0].bias, -10.0)
        return m
    cfg = dict(loss="binary_crossentropy", optimizer="adam", epochs=30, batch_size=32, seed=22)
    case("dead_relu_bias_buggy", "buggy", net(True), (30,), x, y_of(y), cfg, True, ["initialization", "activation"],
         [0],
         "Dead ReLUs from a bad bias: breast cancer (min-max scaled to [0, 1]), Dense(32, relu) whose biases "
         "start at -10, Dense(16, relu), Dense(1, sigmoid), binary cross-entropy, Adam: with glorot kernels "
         "(|w| <= 0.31) and 30 inputs in [0, 1] no pre-activation can exceed -0.7, so every unit of the first "
         "layer outputs 0 for every row, so no gradient reaches it and the model only learns the class prior. "
         "Fix: zero biases (Keras default).", pair="dead_relu_bias", target_names=["benign"])
    case("dead_relu_bias_fixed", "fixed", net(False), (30,), x, y_of(y), cfg, False, [], [],
         "Fix of dead_relu_bias_buggy: zero initial biases.", pair="dead_relu_bias", target_names=["benign"])


def own_zero_init():
    iris = skd.load_iris()
    x, ids = shuffled(23, standardise(iris.data), iris.target)
    def net(kernel):
        return seq(23, nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3),
                   nn.Softmax(dim=1), kernel=kernel)
    cfg = dict(loss="categorical_crossentropy", optimizer="adam", learning_rate=0.01, epochs=50, batch_size=16,
               seed=23)
    case("zero_init_buggy", "buggy", net("zeros"), (4,), x, ids, cfg, True, ["initialization"], [0, 1, 2],
         "Zero initialisation of every layer: iris (standardised), Dense(16, relu)-Dense(16, relu)-Dense(3, "
         "softmax) with all kernels and biases 0: the hidden units are identical and output 0, their "
         "gradients are 0, and the model predicts the class prior for every row. Fix: glorot_uniform kernels.",
         pair="zero_init", target_names=["species"])
    case("zero_init_fixed", "fixed", net("glorot"), (4,), x, ids, cfg, False, [], [],
         "Fix of zero_init_buggy: glorot_uniform kernels, zero biases.", pair="zero_init",
         target_names=["species"])


def own_labels_one_based():
    w = skd.load_wine()
    x, ids = shuffled(24, standardise(w.data), w.target)
    def net():
        return seq(24, nn.Linear(13, 16), nn.ReLU(), nn.Linear(16, 3), nn.Softmax(dim=1))
    cfg = dict(loss="sparse_categorical_crossentropy", optimizer="adam", learning_rate=0.01, epochs=40,
               batch_size=16, seed=24)
    case("labels_one_based_buggy", "buggy", net(), (13,), x, y_of(ids + 1), cfg, True, ["labels"], [],
         "Class ids 1..C instead of 0..C-1: wine (standardised, 3 cultivars labelled 1, 2, 3 as in the "
         "original UCI file) with a 3-unit softmax and sparse categorical cross-entropy: id 3 has no output "
         "unit. Fix: subtract 1 from the labels.", pair="labels_one_based", target_names=["cultivar"])
    case("labels_one_based_fixed", "fixed", net(), (13,), x, y_of(ids), cfg, False, [], [],
         "Fix of labels_one_based_buggy: labels 0, 1, 2.", pair="labels_one_based", target_names=["cultivar"])


def own_too_few_epochs():
    x, ids = digits(25)
    x = x / 16.0
    def net():
        return seq(25, nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10), nn.Softmax(dim=1))
    cfg = dict(loss="categorical_crossentropy", optimizer="sgd", learning_rate=0.05, batch_size=32, seed=25)
    case("too_few_epochs_buggy", "buggy", net(), (64,), x, ids, dict(cfg, epochs=1), True, ["training_length"], [],
         "Too short training: digits (0..1), Dense(64, relu)-Dense(10, softmax), SGD lr 0.05, batch 32, a "
         "single epoch (57 updates): the loss is still falling steeply when training stops and accuracy is "
         "far below what the model reaches. Fix: 40 epochs.", pair="too_few_epochs", target_names=["digit"])
    case("too_few_epochs_fixed", "fixed", net(), (64,), x, ids, dict(cfg, epochs=40), False, [], [],
         "Fix of too_few_epochs_buggy: 40 epochs.", pair="too_few_epochs", target_names=["digit"])


# --- healthy models ------------------------------------------------------------------------------

def healthy():
    iris = skd.load_iris()
    x, ids = shuffled(30, standardise(iris.data), iris.target)
    case("healthy_iris_mlp", "healthy",
         seq(30, nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 3), nn.Softmax(dim=1)), (4,),
         x, ids, dict(loss="categorical_crossentropy", optimizer="adam", learning_rate=0.01, epochs=40,
                      batch_size=16, seed=30, validation_split=0.2), False, [], [],
         "Iris (standardised), 4-16-8-3 relu MLP with softmax, categorical cross-entropy on class ids, Adam "
         "lr 0.01, 20% validation.", target_names=["species"])

    w = skd.load_wine()
    x, ids = shuffled(31, standardise(w.data), w.target)
    case("healthy_wine_mlp", "healthy",
         seq(31, nn.Linear(13, 32), nn.ReLU(), nn.Linear(32, 3), nn.Softmax(dim=1)), (13,), x, ids,
         dict(loss="sparse_categorical_crossentropy", optimizer="adam", learning_rate=0.005, epochs=40,
              batch_size=16, seed=31), False, [], [],
         "Wine (standardised), 13-32-3 relu MLP with softmax, sparse categorical cross-entropy, Adam lr 0.005.",
         target_names=["cultivar"])

    bc = skd.load_breast_cancer()
    x, y = shuffled(32, standardise(bc.data), bc.target)
    case("healthy_breast_cancer_logistic", "healthy", seq(32, nn.Linear(30, 1), nn.Sigmoid()), (30,), x, y_of(y),
         dict(loss="binary_crossentropy", optimizer="adam", learning_rate=0.01, epochs=30, batch_size=32, seed=32),
         False, [], [], "Breast cancer (standardised), logistic regression: Dense(1, sigmoid), binary "
         "cross-entropy, Adam lr 0.01.", target_names=["benign"])

    x, y = shuffled(33, standardise(bc.data), bc.target)
    case("healthy_breast_cancer_mlp", "healthy",
         seq(33, nn.Linear(30, 16), nn.Tanh(), nn.Linear(16, 1), nn.Sigmoid()), (30,), x, y_of(y),
         dict(loss="binary_crossentropy", optimizer="rmsprop", epochs=30, batch_size=32, seed=33,
              validation_split=0.2), False, [], [],
         "Breast cancer (standardised), 30-16-1 tanh MLP with a sigmoid output, binary cross-entropy, "
         "RMSprop (lr 1e-3), 20% validation.", target_names=["benign"])

    x, ids = digits(34)
    case("healthy_digits_mlp", "healthy",
         seq(34, nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10), nn.Softmax(dim=1)), (64,), x / 16.0, ids,
         dict(loss="categorical_crossentropy", optimizer="adam", learning_rate=0.003, epochs=20, batch_size=32,
              seed=34, validation_split=0.1), False, [], [],
         "Digits (pixels / 16), 64-64-10 relu MLP with softmax, categorical cross-entropy on class ids, Adam "
         "lr 0.003, 10% validation.", target_names=["digit"])

    x, ids = digits(35)
    case("healthy_digits_cnn", "healthy",
         seq(35, nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1),
             nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10),
             nn.Softmax(dim=1)), (1, 8, 8), x / 16.0, ids,
         dict(loss="sparse_categorical_crossentropy", optimizer="adam", learning_rate=0.003, epochs=15,
              batch_size=32, seed=35), False, [], [],
         "Digits as 1x8x8 images (pixels / 16): Conv(8, 3x3, same)+relu+MaxPool(2), Conv(16, 3x3, same)+relu+"
         "MaxPool(2), Flatten, Dense(32, relu), Dense(10, softmax); sparse categorical cross-entropy, Adam "
         "lr 0.003.", target_names=["digit"])

    d = skd.load_diabetes()
    x, y = shuffled(36, standardise(d.data), standardise(d.target))
    case("healthy_diabetes_regression", "healthy",
         seq(36, nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)), (10,), x, y_of(y),
         dict(loss="mse", optimizer="adam", learning_rate=0.003, epochs=60, batch_size=16, seed=36,
              validation_split=0.2), False, [], [],
         "Diabetes (standardised features and target), 10-32-1 relu MLP with a linear output, MSE, Adam "
         "lr 0.003, 20% validation.", target_names=["progression"])

    x, y = skd.make_moons(n_samples=1000, noise=0.15, random_state=37)
    case("healthy_moons_tanh", "healthy",
         seq(37, nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1), nn.Sigmoid()), (2,),
         x, y_of(y), dict(loss="binary_crossentropy", optimizer="adam", learning_rate=0.01, epochs=60,
                          batch_size=32, seed=37), False, [], [],
         "make_moons (1000 points, noise 0.15), 2-16-16-1 tanh MLP with a sigmoid output, binary "
         "cross-entropy, Adam lr 0.01.", target_names=["moon"])

    x, y = skd.make_circles(n_samples=1000, noise=0.08, factor=0.5, random_state=38)
    case("healthy_circles_relu", "healthy",
         seq(38, nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1), nn.Sigmoid()), (2,),
         x, y_of(y), dict(loss="binary_crossentropy", optimizer="adam", learning_rate=0.01, epochs=60,
                          batch_size=32, seed=38), False, [], [],
         "make_circles (1000 points, noise 0.08, factor 0.5), 2-32-32-1 relu MLP with a sigmoid output, "
         "binary cross-entropy, Adam lr 0.01.", target_names=["inner"])

    x, y = skd.make_regression(n_samples=1000, n_features=8, n_informative=6, noise=5.0, random_state=39)
    y = y / y.std()
    case("healthy_linear_regression_mae", "healthy", seq(39, nn.Linear(8, 1)), (8,), x, y_of(y),
         dict(loss="mae", optimizer="adam", learning_rate=0.01, epochs=60, batch_size=32, seed=39), False, [], [],
         "make_regression (1000 rows, 8 standard-normal features, target divided by its std), a single "
         "linear Dense(1), mean absolute error, Adam lr 0.01.", target_names=["y"])

    x, y = skd.make_multilabel_classification(n_samples=1500, n_features=20, n_classes=5, n_labels=2,
                                              random_state=40)
    case("healthy_multilabel_sigmoid", "healthy",
         seq(40, nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5), nn.Sigmoid()), (20,), standardise(x), y,
         dict(loss="binary_crossentropy", optimizer="adam", learning_rate=0.003, epochs=40, batch_size=32,
              seed=40, targets=5), False, [], [],
         "Multi-label (make_multilabel_classification, 20 standardised features, 5 labels), 20-64-5 relu MLP "
         "with a sigmoid output, binary cross-entropy, Adam lr 0.003.")

    w = skd.load_wine()
    x, ids = shuffled(41, w.data, w.target)
    case("healthy_batchnorm_mlp", "healthy",
         seq(41, nn.Linear(13, 32), keras_bn(32), nn.ReLU(), nn.Linear(32, 16), keras_bn(16), nn.ReLU(),
             nn.Linear(16, 3), nn.Softmax(dim=1)), (13,), standardise(x), ids,
         dict(loss="categorical_crossentropy", optimizer="adam", learning_rate=0.01, epochs=40, batch_size=16,
              seed=41), False, [], [],
         "Wine (standardised), Dense(32)-BatchNormalization-relu-Dense(16)-BatchNormalization-relu-"
         "Dense(3, softmax) (Keras BatchNormalization defaults: momentum 0.99, epsilon 1e-3), categorical "
         "cross-entropy, Adam lr 0.01.", target_names=["cultivar"])

    x, ids = digits(42)
    case("healthy_dropout_mlp", "healthy",
         seq(42, nn.Linear(64, 128), nn.ReLU(), nn.Dropout(0.2), nn.Linear(128, 64), nn.ReLU(), nn.Dropout(0.2),
             nn.Linear(64, 10), nn.Softmax(dim=1)), (64,), x / 16.0, ids,
         dict(loss="categorical_crossentropy", optimizer="adam", learning_rate=0.002, epochs=20, batch_size=32,
              seed=42, validation_split=0.2), False, [], [],
         "Digits (pixels / 16), 64-128-64-10 relu MLP with Dropout(0.2) after each hidden layer, softmax, "
         "categorical cross-entropy, Adam lr 0.002, 20% validation.", target_names=["digit"])


BUILDERS = [so_48385830, so_44164749, so_31556268, so_48251943, so_38648195, so_33969059, so_55328966,
            so_31880720, so_39525358, so_48934338, so_59278771, so_52800582, so_44066044, so_45442843,
            own_exploding_lr, own_vanishing_sigmoid, own_dead_relu_bias, own_zero_init, own_labels_one_based,
            own_too_few_epochs, healthy]

META_KEYS = ["loss", "optimizer", "learning_rate", "momentum", "nesterov", "decay", "epochs", "batch_size",
             "seed", "validation_split", "targets"]


def main(argv):
    check = "--no-check" not in argv
    only = {a for a in argv if not a.startswith("--")}
    for b in BUILDERS:
        b()
    posts.register(sys.modules[__name__])
    manifest = []
    for c in CASES:
        entry = {"name": c["name"], "model": c["name"] + "/model.onnx", "data": c["name"] + "/data.csv",
                 "options": {}, "expected": c["name"] + "/expected.json", "kind": c["kind"],
                 "source": c["source"], "pair": c["pair"], "split": c["split"]}
        manifest.append(entry)
        if only and c["name"] not in only:
            continue
        d = os.path.join(HERE, c["name"])
        os.makedirs(d, exist_ok=True)
        cfg = c["cfg"]
        meta = {k: cfg[k] for k in META_KEYS if k in cfg}
        meta["from_logits"] = "false"
        proto = export(c["model"], c["in_shape"], os.path.join(d, "model.onnx"), meta)
        layers = onnx_layers(proto)
        nodes = []
        for i in c["layers"]:
            nodes += layers[i]
        write_csv(os.path.join(d, "data.csv"), c["x"], c["y"], c["feature_names"], c["target_names"])
        with open(os.path.join(d, "expected.json"), "w") as f:
            json.dump({"fault": c["fault"], "root_causes": c["root_causes"], "nodes": nodes, "notes": c["notes"]},
                      f, indent=2)
            f.write("\n")
        if check:
            ccfg = dict(cfg)
            ccfg["nesterov"] = cfg.get("nesterov") == "true"
            try:
                hist, iters = torch_check(c["model"], c["x"], c["y"], ccfg, c["in_shape"])
            except Exception as e:  # e.g. class ids out of range: Keras on CPU raises too
                print(f"{c['name']:34s} {c['kind']:7s} torch check failed: {str(e).splitlines()[0]}", flush=True)
                continue
            (l0, a0), (l1, a1) = hist[0], hist[-1]
            acc = "" if a1 is None else f" acc {a0:.3f} -> {a1:.3f}"
            print(f"{c['name']:34s} {c['kind']:7s} {iters:5d} it  loss {l0:.4g} -> {l1:.4g}{acc}", flush=True)
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump({"cases": manifest}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
