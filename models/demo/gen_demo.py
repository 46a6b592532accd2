#!/usr/bin/python3
"""Generates the bundled demo used by `make run`: an Iris classifier exported from
PyTorch to ONNX (opset 13, training mode, Keras initialisation: glorot_uniform
kernels, zero biases) with its training configuration in metadata_props, and the
standardised Iris data as CSV (class id in the last column).

faulty/ holds the same network with one of the commonest mistakes users post about:
"is it setosa?" as a binary task, with one output unit behind a Softmax (a softmax
over one unit always outputs 1, so the loss cannot fall) and binary cross-entropy.

Run: /usr/bin/python3 models/demo/gen_demo.py  (Debian python3-torch, python3-onnx,
python3-sklearn). Deterministic: fixed seeds."""
import os

import numpy as np
import onnx
import torch
from sklearn.datasets import load_iris

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)


def keras_init(module):
    for m in module.modules():
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            torch.nn.init.zeros_(m.bias)




def export(model, path, config):
    keras_init(model)
    torch.onnx.export(model, torch.zeros(1, 4), path, opset_version=13, input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    m = onnx.load(path)
    for k, v in config.items():
        p = m.metadata_props.add()
        p.key, p.value = "deeplocalize." + k, v
    onnx.checker.check_model(m)
    onnx.save(m, path)


def write_csv(path, header, x, y, order):
    with open(path, "w") as f:
        f.write(header + "\n")
        for i in order:
            f.write(",".join(f"{v:.6f}" for v in x[i]) + f",{y[i]}\n")


config = {"loss": "categorical_crossentropy", "optimizer": "adam", "learning_rate": "0.01",
          "epochs": "30", "batch_size": "16", "seed": "1", "validation_split": "0.2"}
export(torch.nn.Sequential(
    torch.nn.Linear(4, 16), torch.nn.ReLU(),
    torch.nn.Linear(16, 8), torch.nn.ReLU(),
    torch.nn.Linear(8, 3), torch.nn.Softmax(dim=1)), os.path.join(HERE, "model.onnx"), config)

iris = load_iris()
x = (iris.data - iris.data.mean(0)) / iris.data.std(0)
rng = np.random.default_rng(0)
order = rng.permutation(len(x))
header = "sepal_length,sepal_width,petal_length,petal_width"
write_csv(os.path.join(HERE, "data.csv"), header + ",species", x, iris.target, order)

# The faulty demo: the same layers, a binary target and a Softmax over its one unit.
os.makedirs(os.path.join(HERE, "faulty"), exist_ok=True)
export(torch.nn.Sequential(
    torch.nn.Linear(4, 16), torch.nn.ReLU(),
    torch.nn.Linear(16, 8), torch.nn.ReLU(),
    torch.nn.Linear(8, 1), torch.nn.Softmax(dim=1)), os.path.join(HERE, "faulty", "model.onnx"),
    dict(config, loss="binary_crossentropy"))
write_csv(os.path.join(HERE, "faulty", "data.csv"), header + ",is_setosa", x,
          (iris.target == 0).astype(int), order)
