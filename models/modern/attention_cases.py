#!/usr/bin/python3
"""Diagnosis cases of attention and LayerNorm models, for models/modern.

models/modern/generate.py imports this module and writes each case of CASES under
models/modern/<case>/ (model.onnx, data.csv, expected.json). Run on its own, it does
the same for these cases only, after checking in PyTorch that the healthy ones learn
and the faulty ones fail:

  /usr/bin/python3 models/modern/attention_cases.py --out models/modern [--no-check] [CASE ...]

(--seed-offset K, --scale NAME and --skip-invalid as in generate.py: variants of the cases.)

A case is a Case(name, build, notes): build() returns
  (torch module with its initial weights, (x, y) numpy data, torch loss module,
   optimizer settings {"name": "adam"|"sgd", "lr": ..., ["momentum": ...]},
   epochs, batch size, expected)
where expected is {"verdict": "ok"|"fault", "symptoms": [...], "root_causes": [...],
"nodes": [...]}: the primary finding's symptom must be one of `symptoms`, its root cause
one of `root_causes`, and `nodes` (ONNX node names) must all be in its layer.

The transformer task: sequences of 16 one-hot tokens (4 kinds) plus a fixed sinusoidal
position code; the class is the token at the last position, read out at position 0 (a
[CLS] position). Position 0 must attend to position 15, so the attention has to learn;
uniform attention only sees the bag of tokens, and a collapsed one a fixed position.

Needs python3-torch (1.13), python3-onnx, numpy, python3-sklearn (the bundled wine data).
Deterministic: fixed seeds, one thread.
"""
import argparse
import collections
import copy
import json
import os
import sys

import numpy as np

import mask_cases  # (this folder)
from case_spec import add_variant_options  # (this folder)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

Case = collections.namedtuple("Case", "name build notes")

OPSET = 17  # LayerNormalization is one ONNX op from opset 17 (torch decomposes it below)
VOCAB, SEQ, DIM, HEADS, FF = 4, 16, 16, 2, 32
ROWS = 512  # the transformer cases' rows
LN_HIDDEN = 32  # the LayerNorm MLP's hidden width
SEED_OFFSET = 0  # --seed-offset: added to every seed

# --scale presets (generate.py has its own for its cases).
SCALES = {
    "base": dict(VOCAB=4, SEQ=16, DIM=16, HEADS=2, FF=32, ROWS=512, LN_HIDDEN=32),
    "wide": dict(VOCAB=5, SEQ=24, DIM=32, HEADS=4, FF=64, ROWS=768, LN_HIDDEN=64),
    "small": dict(VOCAB=3, SEQ=12, DIM=8, HEADS=2, FF=16, ROWS=384, LN_HIDDEN=16),
}


def configure(scale="base", seed_offset=0):
    global SEED_OFFSET
    globals().update(SCALES[scale])
    SEED_OFFSET = seed_offset
ATTN = "/enc/layers.%d/self_attn/"
# A causal mask's masked value, as nn.Transformer.generate_square_subsequent_mask writes
# it: the masked scores are -inf logits of the attention softmaxes (probability 0).
MASK_VALUE = float("-inf")


def _torch():
    import torch

    torch.set_num_threads(1)
    return torch


def encoder_class():
    torch = _torch()
    nn = torch.nn

    class Encoder(nn.Module):
        """Linear token projection + fixed position code -> 2-layer TransformerEncoder ->
        Linear classifier on position 0."""

        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(VOCAB, DIM)
            pe = torch.zeros(SEQ, DIM)
            pos = torch.arange(SEQ, dtype=torch.float32)[:, None]
            div = torch.exp(torch.arange(0, DIM, 2, dtype=torch.float32) * (-np.log(100.0) / DIM))
            pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
            self.register_buffer("pe", pe)  # a constant of the model, not trained
            layer = nn.TransformerEncoderLayer(DIM, HEADS, FF, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.out = nn.Linear(DIM, VOCAB)

        def forward(self, x):
            return self.out(self.enc(self.inp(x) + self.pe)[:, 0])

    return Encoder


def token_data(rows=None, seed=1):
    rows = ROWS if rows is None else rows
    rng = np.random.RandomState(seed + SEED_OFFSET)
    tokens = rng.randint(0, VOCAB, size=(rows, SEQ))
    x = np.eye(VOCAB, dtype=np.float32)[tokens]  # [rows, SEQ, VOCAB]
    return x, tokens[:, -1].astype(np.int64)


def encoder(init=None):
    torch = _torch()
    torch.manual_seed(SEED_OFFSET)
    return init_qk(encoder_class()(), init)


def init_qk(model, init):
    """The encoder's Q and K projections zeroed ("zero_qk") or x30 ("huge_qk")."""
    with _torch().no_grad():
        for layer in model.enc.layers:
            w, b = layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias
            if init == "zero_qk":  # rows [0, 2 DIM) project Q and K
                w[:2 * DIM] = 0
                b[:2 * DIM] = 0
            elif init == "huge_qk":
                w[:2 * DIM] *= 30
    return model


def causal_encoder():
    """The encoder under a causal mask (MASK_VALUE above the diagonal: a position attends
    to itself and the ones before it), read out at the last position, the one that sees
    every token."""
    torch = _torch()
    Encoder = encoder_class()

    class CausalEncoder(Encoder):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.triu(torch.full((SEQ, SEQ), MASK_VALUE), diagonal=1))

        def forward(self, x):
            return self.out(self.enc(self.inp(x) + self.pe, mask=self.mask)[:, -1])

    torch.manual_seed(SEED_OFFSET)
    return CausalEncoder()


def softmax_nodes(layer):
    return [ATTN % layer + "MatMul_1", ATTN % layer + "Softmax"]


def transformer_healthy():
    torch = _torch()
    return (encoder(), token_data(), torch.nn.CrossEntropyLoss(), {"name": "adam", "lr": 3e-3}, 15, 32,
            {"verdict": "ok", "symptoms": [], "root_causes": [], "nodes": []})


def transformer_lr_x100():
    torch = _torch()
    return (encoder(), token_data(), torch.nn.CrossEntropyLoss(), {"name": "adam", "lr": 0.3}, 15, 32,
            {"verdict": "fault", "symptoms": ["loss_not_decreasing", "loss_plateau", "oscillating_loss",
                                              "accuracy_not_increasing", "exploding_values", "exploding_gradients",
                                              "exploding_weights", "collapsed_attention"],
             "root_causes": ["learning_rate"], "nodes": []})


def transformer_zero_qk():
    torch = _torch()
    return (encoder("zero_qk"), token_data(), torch.nn.CrossEntropyLoss(), {"name": "adam", "lr": 3e-3}, 15, 32,
            {"verdict": "fault", "symptoms": ["uniform_attention"], "root_causes": ["initialization"],
             "nodes": softmax_nodes(0)})


def transformer_huge_qk():
    torch = _torch()
    return (encoder("huge_qk"), token_data(), torch.nn.CrossEntropyLoss(), {"name": "adam", "lr": 3e-3}, 15, 32,
            {"verdict": "fault", "symptoms": ["collapsed_attention"], "root_causes": ["initialization"],
             "nodes": softmax_nodes(0)})


def transformer_causal_healthy():
    """The class is the token at position 0, read at the last position: it has to attend
    back over the masked rows."""
    torch = _torch()
    x, _ = token_data()
    y = np.argmax(x[:, 0], axis=1).astype(np.int64)
    return (causal_encoder(), (x, y), torch.nn.CrossEntropyLoss(), {"name": "adam", "lr": 3e-3}, 15, 32,
            {"verdict": "ok", "symptoms": [], "root_causes": [], "nodes": []})


def wine_data():
    from sklearn.datasets import load_wine

    d = load_wine()
    x = d.data.astype(np.float64)
    x = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
    return x, d.target.astype(np.int64)


def ln_mlp(per_feature=False):
    torch = _torch()
    nn = torch.nn

    class LayerNormMlp(nn.Module):
        """Linear -> LayerNorm -> GELU -> Linear. per_feature: the user's mistake, a
        LayerNorm over each feature alone (x.unsqueeze(-1) then nn.LayerNorm(1), meant as
        per-feature normalisation): a row of one value is 0 once centred, so the layer
        outputs its bias whatever the input."""

        def __init__(self):
            super().__init__()
            self.per_feature = per_feature
            self.norm0 = nn.LayerNorm(1) if per_feature else None
            h = LN_HIDDEN
            self.fc1, self.norm, self.act, self.fc2 = nn.Linear(13, h), nn.LayerNorm(h), nn.GELU(), nn.Linear(h, 3)

        def forward(self, x):
            if self.per_feature:
                x = self.norm0(x.unsqueeze(-1)).flatten(1)
            return self.fc2(self.act(self.norm(self.fc1(x))))

    torch.manual_seed(SEED_OFFSET)
    return LayerNormMlp()


def layernorm_gelu_healthy():
    torch = _torch()
    return (ln_mlp(), wine_data(), torch.nn.CrossEntropyLoss(), {"name": "adam", "lr": 0.01}, 30, 16,
            {"verdict": "ok", "symptoms": [], "root_causes": [], "nodes": []})


def layernorm_single_value():
    torch = _torch()
    return (ln_mlp(per_feature=True), wine_data(), torch.nn.CrossEntropyLoss(), {"name": "adam", "lr": 0.01}, 30, 16,
            {"verdict": "fault", "symptoms": ["collapsed_layer_norm"], "root_causes": ["architecture"],
             "nodes": ["/norm0/LayerNormalization"]})


CASES = [
    Case("transformer_healthy", transformer_healthy,
         "2-layer TransformerEncoder (d 16, 2 heads, feed-forward 32), Adam 3e-3, 15 epochs: the token at the "
         "last position, read at position 0."),
    Case("transformer_lr_x100", transformer_lr_x100,
         "transformer_healthy with Adam at 0.3 (x100): the loss stays at chance."),
    Case("transformer_zero_qk", transformer_zero_qk,
         "transformer_healthy with the Q and K projections (in_proj rows 0..31 and their biases) zero in both "
         "layers: every score is 0, the attention is exactly uniform, and Q and K get zero gradients forever."),
    Case("transformer_huge_qk", transformer_huge_qk,
         "transformer_healthy with the Q and K projections x30: scores in the hundreds, each softmax row one-hot "
         "(entropy ~0), no gradient through it: every position attends to a fixed position."),
    Case("transformer_causal_healthy", transformer_causal_healthy,
         "transformer_healthy under a causal mask (-inf above the diagonal, as "
         "nn.Transformer.generate_square_subsequent_mask, in a buffer: an initializer added to the attention "
         "scores), read at the last position: the token at position 0. The masked scores are -inf logits of the "
         "attention softmaxes: probability 0, not an overflow."),
    Case("layernorm_gelu_healthy", layernorm_gelu_healthy,
         "wine (standardised), Linear(13, 32) -> LayerNorm(32) -> GELU -> Linear(32, 3), Adam 0.01, 30 epochs."),
    Case("layernorm_single_value", layernorm_single_value,
         "layernorm_gelu_healthy behind x.unsqueeze(-1) -> nn.LayerNorm(1) (meant as per-feature normalisation): "
         "each row holds one value, which centring makes 0, so the layer outputs its bias and nothing is learnt."),
] + mask_cases.cases(Case)


def torch_train(model, data, loss, opt, epochs, batch):
    """Trains a copy as deeplocalize does (shuffled mini-batches); returns (first epoch
    loss, last epoch loss, final accuracy)."""
    torch = _torch()
    model = copy.deepcopy(model).train()
    x, y = torch.tensor(data[0]), torch.tensor(data[1])
    kwargs = {"lr": opt["lr"]}
    if opt["name"] == "sgd":
        kwargs["momentum"] = opt.get("momentum", 0.0)
    optim = (torch.optim.SGD if opt["name"] == "sgd" else torch.optim.Adam)(model.parameters(), **kwargs)
    g = torch.Generator().manual_seed(SEED_OFFSET)
    losses = []
    for _ in range(epochs):
        perm, total = torch.randperm(len(x), generator=g), 0.0
        for i in range(0, len(x), batch):
            idx = perm[i:i + batch]
            optim.zero_grad()
            value = loss(model(x[idx]), y[idx])
            value.backward()
            optim.step()
            total += value.item() * len(idx)
        losses.append(total / len(x))
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    return losses[0], losses[-1], acc


def check(case, built, skip_invalid=False):
    """Healthy cases must learn (final loss < 0.1, accuracy > 0.95); faulty ones must fall
    clearly short in the same budget (accuracy < 0.8, or a non-finite loss). The zero Q/K
    encoder still creeps up through its feed-forward layers and the uniform average (76%
    after 15 epochs where the healthy one is at 100% after 10), with its attention frozen.
    Returns whether it does; raises SystemExit when it does not, unless skip_invalid."""
    model, data, loss, opt, epochs, batch, expected = built
    first, last, acc = torch_train(model, data, loss, opt, epochs, batch)
    healthy = expected["verdict"] == "ok"
    ok = (last < 0.1 and acc > 0.95) if healthy else (not np.isfinite(last) or acc < 0.8)
    print("%-26s torch: loss %.4f -> %.4f, accuracy %.3f: %s" % (case.name, first, last, acc,
                                                                "learns" if acc > 0.95 else "fails"))
    if not ok:
        message = "%s: the PyTorch run does not behave as a %s case" % (case.name, expected["verdict"])
        if skip_invalid:
            print("  skipped (--skip-invalid): " + message)
            return False
        raise SystemExit(message)
    return True


def write_case(case, built, out_dir):
    import torch
    from export_torch import export_model

    model, (x, y), loss, opt, epochs, batch, expected = built
    d = os.path.join(out_dir, case.name)
    os.makedirs(d, exist_ok=True)
    kwargs = {"lr": opt["lr"]}
    if opt["name"] == "sgd":
        kwargs["momentum"] = opt.get("momentum", 0.0)
    optimizer = (torch.optim.SGD if opt["name"] == "sgd" else torch.optim.Adam)(model.parameters(), **kwargs)
    example = torch.tensor(x[:2])
    export_model(model, example, os.path.join(d, "model.onnx"), optimizer=optimizer, loss=loss, opset=OPSET,
                 epochs=epochs, batch_size=batch, seed=SEED_OFFSET)
    flat = x.reshape(len(x), -1)
    with open(os.path.join(d, "data.csv"), "w") as f:
        f.write(",".join(["x%d" % k for k in range(flat.shape[1])] + ["y"]) + "\n")
        for r in range(len(flat)):
            f.write(",".join(["%.9g" % v for v in flat[r]] + [str(int(y[r]))]) + "\n")
    # The expectation in the form `deeplocalize batch` reads (models/modern's other cases
    # too): "fault" true/false instead of this file's "verdict".
    written = {"fault": expected["verdict"] == "fault"}
    written.update((k, v) for k, v in expected.items() if k != "verdict")
    with open(os.path.join(d, "expected.json"), "w") as f:
        json.dump(dict(written, notes=case.notes), f, indent=2)
        f.write("\n")


def main(argv=None, skipped_names=False):
    """skipped_names: return the names of the cases skipped (--skip-invalid) instead of 0."""
    p = argparse.ArgumentParser(description="attention and LayerNorm diagnosis cases for models/modern")
    p.add_argument("--no-check", action="store_true", help="write the files without the PyTorch check")
    add_variant_options(p, HERE, SCALES)
    a = p.parse_args(argv)
    configure(a.scale, a.seed_offset)
    skipped = []
    names = [c.name for c in CASES]
    for n in a.cases:
        if n not in names:
            raise SystemExit("unknown case '%s' (cases: %s)" % (n, ", ".join(names)))
    for case in CASES:
        if a.cases and case.name not in a.cases:
            continue
        built = case.build()
        if not a.no_check and not check(case, built, a.skip_invalid):
            skipped.append(case.name)
            continue
        write_case(case, built, a.out)
    return skipped if skipped_names else 0


if __name__ == "__main__":
    # mask_cases imports "attention_cases": let it find this module, configured by main(),
    # rather than a second copy with the default sizes and seeds.
    sys.modules.setdefault("attention_cases", sys.modules[__name__])
    sys.exit(main())
