#!/usr/bin/python3
"""Generates models/modern/: diagnosis cases of the models people train today, healthy
and with one injected fault each, as ONNX models (exported by scripts/export_torch.py),
CSV data and the expected diagnosis. tests/modern/check.sh trains every case with
deeplocalize and compares.

The cases are this file's CASES (LSTM, GRU and Embedding models), cnn_cases.py's
(residual, depthwise and autoencoder CNNs) and, when the file exists, attention_cases.py's
CASES (transformer models); the API is case_spec.py's.

Run: /usr/bin/python3 models/modern/generate.py [CASE ...]   (python3-torch 1.13,
python3-onnx, numpy). Deterministic: fixed seeds, one thread. Before writing a case it is
trained in PyTorch from the exported initial weights: a healthy case must learn (reach its
min_accuracy), a faulty one must not; otherwise the script stops with an error.

Variants (independent re-makes of the same cases, e.g. to see whether a diagnosis
generalizes), written elsewhere; the default (no option) writes models/modern as always:
  --out DIR          write the case folders under DIR (default: this folder)
  --seed-offset K    add K to every seed: data, initial weights, the PyTorch check's
                     shuffling and the training seed written into the model (default 0)
  --scale NAME       size preset (SCALES below): "base" (default, today's sizes), "wide"
                     (bigger hidden sizes, longer sequences, more rows and classes) or
                     "small" (smaller ones, 2 classes, a last batch that is not full)
  --skip-invalid     a case whose PyTorch check fails (a healthy one that does not learn,
                     a faulty one that does) is skipped with a note instead of stopping

Layout written:
  <case>/model.onnx     opset 14, training mode, input "input", output "output", dynamic batch
  <case>/data.csv       header row; features (token ids for embedding models), then the target
  <case>/expected.json  {"fault", "symptoms", "root_causes", "nodes", "notes"}: the accepted
                        primary symptoms and root causes, the ONNX node names one of which
                        the primary finding's layer must contain ([]: no layer check)
"""
import copy
import importlib
import json
import math
import os
import sys

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from case_spec import Built, Case, Expected, add_variant_options  # noqa: E402
from export_torch import export_model  # noqa: E402
import cnn_cases  # noqa: E402

SEQ, FEATURES, HIDDEN, CLASSES, ROWS = 8, 4, 16, 3, 256
VOCAB, TOKENS, EMBED = 60, 10, 4
SEED_OFFSET = 0  # --seed-offset: added to every seed

# --scale presets: this file's sizes (cnn_cases.SCALES and attention_cases.SCALES have theirs).
SCALES = {
    "base": dict(SEQ=8, FEATURES=4, HIDDEN=16, CLASSES=3, ROWS=256, VOCAB=60, TOKENS=10, EMBED=4),
    "wide": dict(SEQ=16, FEATURES=4, HIDDEN=32, CLASSES=4, ROWS=512, VOCAB=80, TOKENS=12, EMBED=4),
    "small": dict(SEQ=6, FEATURES=3, HIDDEN=8, CLASSES=2, ROWS=200, VOCAB=40, TOKENS=8, EMBED=3),
}


def configure(scale="base", seed_offset=0):
    """Sets the sizes of a --scale preset and the --seed-offset, here and in cnn_cases and
    attention_cases (when present)."""
    global SEED_OFFSET
    globals().update(SCALES[scale])
    SEED_OFFSET = seed_offset
    cnn_cases.configure(scale, seed_offset)
    attention = attention_module()
    if attention is not None:
        attention.configure(scale, seed_offset)

# ----------------------------------------------------------------------------- data


def sequence_data(seed, scale=1.0, offset=0.0, seq=None):
    """Sequences [ROWS, seq (default SEQ), FEATURES]; the class is the argmax of a weighted
    sum over time."""
    seq = SEQ if seq is None else seq
    rng = np.random.default_rng(seed + SEED_OFFSET)
    x = rng.normal(size=(ROWS, seq, FEATURES))
    w = rng.normal(size=(FEATURES, CLASSES))
    score = sum((0.5 + t / seq) * (x[:, t] @ w) for t in range(seq))
    y = np.argmax(score, axis=1).astype(np.int64)
    return (x * scale + offset).astype(np.float32), y


def token_data(seed):
    """Token ids [ROWS, TOKENS] in 0..VOCAB-1: each class has 5 marker tokens, and each
    position holds one of its class's markers with probability 0.4, else any token."""
    rng = np.random.default_rng(seed + SEED_OFFSET)
    y = rng.integers(0, CLASSES, ROWS).astype(np.int64)
    markers = rng.permutation(VOCAB)[:5 * CLASSES].reshape(CLASSES, 5)
    ids = rng.integers(0, VOCAB, (ROWS, TOKENS))
    use = rng.random((ROWS, TOKENS)) < 0.4
    ids = np.where(use, markers[y][np.arange(ROWS)[:, None], rng.integers(0, 5, (ROWS, TOKENS))], ids)
    return ids.astype(np.int64), y


# ----------------------------------------------------------------------------- models


class RecurrentClassifier(nn.Module):
    """nn.LSTM / nn.GRU (batch_first) -> final hidden state -> Linear [-> head]."""

    def __init__(self, cell, outputs=None, head=None):
        super().__init__()
        outputs = CLASSES if outputs is None else outputs
        self.rnn = cell(FEATURES, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, outputs)
        self.head = head

    def forward(self, x):
        _, h = self.rnn(x)
        if isinstance(h, tuple):
            h = h[0]
        y = self.fc(h[-1])
        return self.head(y) if self.head is not None else y


class ManualLstmClassifier(nn.Module):
    """The same network as RecurrentClassifier(nn.LSTM), step by step, with the ONNX
    activations g (cell input) and h (cell output) chosen: what deeplocalize runs after the
    export's `activations` attribute is edited (PyTorch's LSTM has only tanh)."""

    def __init__(self, trained, act):
        super().__init__()
        self.rnn, self.fc, self.act = copy.deepcopy(trained.rnn), copy.deepcopy(trained.fc), act

    def forward(self, x):
        b = x.shape[0]
        h = x.new_zeros(b, HIDDEN)
        c = x.new_zeros(b, HIDDEN)
        r = self.rnn
        for t in range(x.shape[1]):
            z = x[:, t] @ r.weight_ih_l0.T + r.bias_ih_l0 + h @ r.weight_hh_l0.T + r.bias_hh_l0
            i, f, g, o = z.chunk(4, 1)  # torch's gate order
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * self.act(g)
            h = torch.sigmoid(o) * self.act(c)
        return self.fc(h)


class MeanPoolText(nn.Module):
    """nn.Embedding (int64 ids) -> mean over the tokens -> Linear."""

    def __init__(self, frozen=False):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMBED)
        self.fc = nn.Linear(EMBED, CLASSES)
        self.emb.weight.requires_grad_(not frozen)

    def forward(self, ids):
        return self.fc(self.emb(ids).mean(1))


def lstm_relu_activations(proto):
    """Sets the LSTM's cell activations (g and h) to Relu, keeping the Sigmoid gates."""
    from onnx import helper

    node = next(n for n in proto.graph.node if n.op_type == "LSTM")
    for a in list(node.attribute):
        if a.name == "activations":
            node.attribute.remove(a)
    node.attribute.append(helper.make_attribute("activations", ["Sigmoid", "Relu", "Relu"]))


# ----------------------------------------------------------------------------- cases

ADAM = dict(name="adam", lr=0.01)


def seeded(seed, make):
    torch.manual_seed(seed + SEED_OFFSET)
    return make()


def healthy_lstm():
    x, y = sequence_data(10)
    return Built(seeded(1, lambda: RecurrentClassifier(nn.LSTM)), x, y, nn.CrossEntropyLoss(), ADAM, 30, 32,
                 Expected(False, notes="LSTM(4 -> 16) sequence classifier, Adam 0.01, 30 epochs: learns cleanly"),
                 fold=True)


def healthy_gru():
    x, y = sequence_data(11)
    return Built(seeded(2, lambda: RecurrentClassifier(nn.GRU)), x, y, nn.CrossEntropyLoss(), ADAM, 30, 32,
                 Expected(False, notes="GRU(4 -> 16) sequence classifier, Adam 0.01, 30 epochs: learns cleanly"),
                 fold=True)


def healthy_embedding():
    x, y = token_data(12)
    return Built(seeded(3, MeanPoolText), x, y, nn.CrossEntropyLoss(), dict(name="adam", lr=0.05), 30, 32,
                 Expected(False, notes="Embedding(60, 4) on int64 ids -> mean over 10 tokens -> Linear, Adam 0.05: "
                                       "learns the class marker tokens"))


def lstm_lr_x100():
    x, y = sequence_data(10)
    return Built(seeded(1, lambda: RecurrentClassifier(nn.LSTM)), x, y, nn.CrossEntropyLoss(),
                 dict(name="adam", lr=1.0), 30, 32,
                 Expected(True, ["saturated_gates"], ["learning_rate"], ["LSTM"],
                          "healthy_lstm_classifier at Adam lr 1.0 (x100): the first updates drive the LSTM's gates "
                          "into saturation and it stops learning"),
                 learns=False, fold=True)


def lstm_relu_cell():
    # Long sequences (50 steps): the unbounded state has time to grow. (At 8 steps the
    # ReLU cell still learns this task in PyTorch.)
    x, y = sequence_data(10, seq=50)
    model = seeded(1, lambda: RecurrentClassifier(nn.LSTM))
    return Built(model, x, y, nn.CrossEntropyLoss(), dict(name="adam", lr=0.05), 15, 32,
                 Expected(True, ["exploding_state", "nan_forward", "inf_forward"], ["activation"], ["LSTM"],
                          "the LSTM's cell activations (ONNX `activations` g and h) set to Relu: the cell and hidden "
                          "state are unbounded and grow over the time steps until they overflow"),
                 learns=False, edit=lstm_relu_activations, check_model=ManualLstmClassifier(model, torch.relu),
                 fold=True)


def lstm_softmax_single_unit():
    x, y = sequence_data(10)
    y = (y == 0).astype(np.float32).reshape(-1, 1)
    model = seeded(1, lambda: RecurrentClassifier(nn.LSTM, outputs=1, head=nn.Softmax(dim=1)))
    return Built(model, x, y, nn.BCELoss(), ADAM, 10, 32,
                 Expected(True, ["softmax_single_unit"], ["activation", "architecture"], ["Softmax"],
                          "LSTM -> Linear(16 -> 1) -> Softmax over that one unit, binary cross-entropy: the softmax "
                          "of one value is always 1, so the model cannot learn"),
                 learns=False, fold=True)


def embedding_frozen():
    x, y = token_data(12)
    return Built(seeded(3, lambda: MeanPoolText(frozen=True)), x, y, nn.CrossEntropyLoss(),
                 dict(name="adam", lr=0.05), 30, 32,
                 Expected(True, ["frozen_layer"], ["learning_rate"], ["Gather"],
                          "healthy_embedding_meanpool with the embedding's requires_grad=False (exported as "
                          "deeplocalize.frozen: learning rate 0): its random 4-d vectors cannot separate the "
                          "classes and the run fails"),
                 learns=False)


def gru_unscaled_inputs():
    x, y = sequence_data(11, scale=30.0, offset=300.0)
    return Built(seeded(2, lambda: RecurrentClassifier(nn.GRU)), x, y, nn.CrossEntropyLoss(),
                 ADAM, 30, 32,
                 Expected(True, ["saturated_gates", "unnormalized_inputs"], ["data"], ["GRU"],
                          "healthy_gru_classifier fed raw readings (300 +- 30 instead of standardised values), "
                          "Adam 0.01: every gate of the GRU saturates from the first step and it learns nothing"),
                 learns=False, fold=True)


CASES = [
    Case("healthy_lstm_classifier", healthy_lstm),
    Case("healthy_gru_classifier", healthy_gru),
    Case("healthy_embedding_meanpool", healthy_embedding),
    Case("lstm_lr_x100", lstm_lr_x100),
    Case("lstm_relu_cell", lstm_relu_cell),
    Case("lstm_softmax_single_unit", lstm_softmax_single_unit),
    Case("embedding_frozen", embedding_frozen),
    Case("gru_unscaled_inputs", gru_unscaled_inputs),
]

# ----------------------------------------------------------------------------- check, export


def torch_optimizer(spec, params):
    params = [p for p in params if p.requires_grad]
    kwargs = {k: v for k, v in spec.items() if k != "name"}
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}[spec["name"]]
    return cls(params, **kwargs)


def accuracy(out, y):
    if out.shape[1] == 1:
        return float(((out > 0.5).float() == y).float().mean())
    return float((out.argmax(1) == y).float().mean())


def torch_check(built, seed):
    """Trains a copy in PyTorch; returns per-epoch (loss, accuracy)."""
    model = copy.deepcopy(built.check_model if built.check_model is not None else built.model)
    opt = torch_optimizer(built.optimizer, model.parameters())
    x = torch.from_numpy(built.x)
    y = torch.from_numpy(built.y)
    gen = torch.Generator().manual_seed(seed)
    history = []
    for _ in range(built.epochs):
        order = torch.randperm(len(x), generator=gen)
        total, seen, correct = 0.0, 0, 0.0
        for k in range(0, len(x), built.batch_size):
            idx = order[k:k + built.batch_size]
            opt.zero_grad()
            out = model(x[idx])
            loss = built.loss(out, y[idx])
            loss.backward()
            opt.step()
            total += float(loss) * len(idx)
            if built.max_loss is None:
                correct += accuracy(out.detach(), y[idx]) * len(idx)
            seen += len(idx)
        history.append((total / seen, correct / seen))
    return history


def write_csv(path, x, y):
    x = x.reshape(len(x), -1)
    y = y.reshape(len(y), -1)
    integer = x.dtype.kind == "i"
    with open(path, "w") as f:
        f.write(",".join(["x%d" % k for k in range(x.shape[1])] + ["y%d" % k for k in range(y.shape[1])]) + "\n")
        for row, t in zip(x, y):
            cells = [str(int(v)) if integer else "%.6g" % v for v in row] + ["%.6g" % v for v in t]
            f.write(",".join(cells) + "\n")


def expected_json(built, proto):
    e = built.expected
    nodes = [n.name for n in proto.graph.node if n.op_type in e.layer_ops]
    return {"fault": e.fault, "symptoms": e.symptoms, "root_causes": e.root_causes, "nodes": nodes, "notes": e.notes}


def generate(case, index, out_dir=HERE, skip_invalid=False):
    """Builds, checks and writes one case; returns False when it was skipped (skip_invalid
    and a PyTorch check that does not behave as the case says)."""
    import onnx

    built = case.build()
    seed = index + SEED_OFFSET
    history = torch_check(built, seed=seed)
    first, last = history[0], history[-1]
    if built.max_loss is None:
        learned = last[1] >= built.min_accuracy and math.isfinite(last[0])
    else:
        learned = last[0] <= built.max_loss
    print("%-28s torch: loss %.4g -> %.4g, accuracy %.3f -> %.3f (%s)"
          % (case.name, first[0], last[0], first[1], last[1], "learns" if learned else "fails"))
    if learned != built.learns:
        message = "%s: expected the PyTorch run to %s" % (case.name, "learn" if built.learns else "fail")
        if skip_invalid:
            print("  skipped (--skip-invalid): " + message)
            return False
        raise SystemExit(message)
    out = os.path.join(out_dir, case.name)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "model.onnx")
    opt = torch_optimizer(built.optimizer, built.model.parameters())
    example = torch.from_numpy(built.x[:2])
    targets = built.y.shape[1] if built.y.ndim > 1 and built.y.shape[1] > 1 else None  # a regression's columns
    export_model(built.model, example, path, optimizer=opt, loss=built.loss, constant_folding=built.fold,
                 edit=built.edit, epochs=built.epochs, batch_size=built.batch_size, targets=targets, seed=seed)
    proto = onnx.load(path)
    write_csv(os.path.join(out, "data.csv"), built.x, built.y)
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected_json(built, proto), f, indent=2)
        f.write("\n")
    return True


def attention_module():
    """attention_cases.py (transformer and LayerNorm cases), which has its own builder and
    writer of the same files; None when absent."""
    if not os.path.exists(os.path.join(HERE, "attention_cases.py")):
        return None
    sys.path.insert(0, HERE)
    return importlib.import_module("attention_cases")


def main(argv):
    import argparse

    p = argparse.ArgumentParser(description="writes the models/modern diagnosis cases (or variants of them)")
    add_variant_options(p, HERE, SCALES)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    configure(a.scale, a.seed_offset)
    wanted = set(a.cases)
    attention = attention_module()
    attention_names = {c.name for c in attention.CASES} if attention else set()
    unknown = wanted - {c.name for c in CASES + cnn_cases.CASES} - attention_names
    if unknown:
        raise SystemExit("unknown case(s): " + ", ".join(sorted(unknown)))
    skipped = []
    for k, case in enumerate(CASES):
        if not wanted or case.name in wanted:
            if not generate(case, k, a.out, a.skip_invalid):
                skipped.append(case.name)
    for k, case in enumerate(cnn_cases.CASES):
        if not wanted or case.name in wanted:
            if not generate(case, 100 + k, a.out, a.skip_invalid):
                skipped.append(case.name)
    if attention and (not wanted or wanted & attention_names):
        options = ["--out", a.out, "--seed-offset", str(a.seed_offset), "--scale", a.scale]
        skipped += attention.main(options + (["--skip-invalid"] if a.skip_invalid else [])
                                  + sorted(wanted & attention_names), skipped_names=True)
    if skipped:
        print("skipped (PyTorch check failed): " + ", ".join(skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
