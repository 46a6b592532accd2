"""Training setups as plain data, so that a mutation operator can change one thing and the
torch model, the ONNX export and the expected diagnosis are rebuilt from the result.

A Spec is: the data (features, targets, task), a list of layer specs, and a Keras-style
training configuration. Layers are dicts:
  {"kind": "dense", "units": N, "act": "relu"|"tanh"|...|None, "kernel": "glorot", "bias": 0.0}
  {"kind": "conv", "ch": C, "k": 3, "act": ..., "kernel": ..., "bias": ...}
  {"kind": "pool"}, {"kind": "flatten"}, {"kind": "bn"}, {"kind": "dropout", "p": 0.2}
  {"kind": "res", "ch": C, "act": ...}  (conv-act-conv + identity, then act)
The last layer is the output layer. Each layer spec becomes one or more consecutive
modules of an nn.Sequential; `module_span` tells which, so that a mutation's touched
layers map to ONNX node names (PyTorch 1.13 names top-level nodes "/<index>/...").
"""
import copy

import numpy as np
import torch
import torch.nn as nn

ACTS = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "elu": nn.ELU,
        "leaky_relu": lambda: nn.LeakyReLU(0.3), "softmax": lambda: nn.Softmax(dim=1),
        "softplus": nn.Softplus}


class Res(nn.Module):
    def __init__(self, ch, act):
        super().__init__()
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.act1 = ACTS[act]()
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)
        self.act2 = ACTS[act]()

    def forward(self, x):
        return self.act2(x + self.conv2(self.act1(self.conv1(x))))


def init_param(m, kernel, bias):
    w = m.weight
    with torch.no_grad():
        if kernel == "glorot":
            nn.init.xavier_uniform_(w)
        elif kernel == "he":
            nn.init.kaiming_uniform_(w, nonlinearity="relu")
        elif kernel == "zeros":
            w.zero_()
        elif kernel == "constant":
            w.fill_(0.5)
        elif kernel == "huge":
            w.normal_(0.0, 10.0)
        elif kernel == "tiny":
            w.normal_(0.0, 1e-4)
        else:
            raise ValueError(kernel)
        if m.bias is not None:
            m.bias.fill_(float(bias))


def build(spec, seed):
    """The torch model of `spec`, initialised with `seed`, and the module span of each layer."""
    torch.manual_seed(seed)
    mods, spans = [], []
    shape = spec["in_shape"]
    for layer in spec["layers"]:
        start = len(mods)
        k = layer["kind"]
        if k == "dense":
            lin = nn.Linear(int(np.prod(shape)), layer["units"])
            init_param(lin, layer.get("kernel", "glorot"), layer.get("bias", 0.0))
            mods.append(lin)
            shape = (layer["units"],)
        elif k == "conv":
            conv = nn.Conv2d(shape[0], layer["ch"], layer.get("k", 3), padding=layer.get("k", 3) // 2)
            init_param(conv, layer.get("kernel", "glorot"), layer.get("bias", 0.0))
            mods.append(conv)
            shape = (layer["ch"],) + tuple(shape[1:])
        elif k == "res":
            block = Res(shape[0], layer.get("act") or "relu")
            for c in (block.conv1, block.conv2):
                init_param(c, layer.get("kernel", "glorot"), layer.get("bias", 0.0))
            mods.append(block)
        elif k == "pool":
            mods.append(nn.MaxPool2d(2))
            shape = (shape[0], shape[1] // 2, shape[2] // 2)
        elif k == "flatten":
            mods.append(nn.Flatten())
            shape = (int(np.prod(shape)),)
        elif k == "bn":
            # Keras BatchNormalization defaults: momentum 0.99, epsilon 1e-3.
            mods.append(nn.BatchNorm1d(shape[0], eps=1e-3, momentum=0.01) if len(shape) == 1
                        else nn.BatchNorm2d(shape[0], eps=1e-3, momentum=0.01))
        elif k == "dropout":
            mods.append(nn.Dropout(layer["p"]))
        else:
            raise ValueError(k)
        if k in ("dense", "conv", "bn") and layer.get("act"):
            mods.append(ACTS[layer["act"]]())
        spans.append((start, len(mods)))
    return nn.Sequential(*mods), spans


def clone(spec, **changes):
    s = copy.deepcopy(spec)
    s.update(changes)
    return s


def param_layers(spec):
    """Indices of the layers with weights (what a mutation of a layer may touch)."""
    return [i for i, l in enumerate(spec["layers"]) if l["kind"] in ("dense", "conv", "res")]


def hidden_layers(spec):
    return param_layers(spec)[:-1]
