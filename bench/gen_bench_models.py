#!/usr/bin/python3
"""Generates the benchmark models (ONNX, Keras init, opset 13) and data into OUTDIR.

  /usr/bin/python3 bench/gen_bench_models.py OUTDIR

mlp_784_128_10   784-128(relu)-10(softmax)       issue 3's 60,000-row epoch benchmark
mlp_a            784-256-128-10                  issue 8 (a)
lenet5           LeNet-5 on 1x28x28              issue 8 (b)
wide_c           4096-4096-10                    issue 8 (c)
resnet18, mobilenet_v2, shufflenet_v2_x0_5       issue 17: torchvision (random init, never
                 downloaded weights), 3x32x32 input, 10 classes, exported in training mode
                 (BatchNorm with batch statistics), Adam on logits, batch 16; NAME.pt holds
                 the same weights as a state_dict for pytorch_bench.py
lstm_cls, transformer, transformer_causal  issue 17: bench/seq_nets.py's LSTM classifier (64 steps of 32
                 features, hidden 128, batch 32) and 2-layer TransformerEncoder (d_model 128,
                 4 heads, 64 positions, batch 16; opset 17; transformer_causal: under a
                 causal -inf mask), training mode, Adam on logits;
                 NAME.pt as for the torchvision nets; data seq1k.npy (1,024 rows of 64x32
                 values in [0,1] and a class id)
mobilenet_v2_112 only with LARGE_MAPS=1 in the environment: mobilenet_v2 as above on
                 3x112x112 input (maps of 56x56 down to 4x4, with 14x14 and 7x7 ones, rows
                 that are no multiple of 16 values: bench/README.md run 60), batch 8;
                 data img112.npy (256 rows of 3x112x112 values in [0,1] and a class id)
conv_ae          issue 17: bench/ae_net.py's ConvTranspose + Upsample autoencoder on 3x32x32,
                 MSE against the input, Adam, batch 16; NAME.pt as above; data ae1k.npy
                 (1,024 rows of 3,072 values in [0,1], then the same values as targets)
Data: MNIST-shaped synthetic CSV (pixels in [0,1], class id last), 60,000 rows for
mnist60k.csv; cifar1k.npy, 1,024 rows of 3x32x32 values in [0,1] and a class id for the
torchvision nets; wide4096.npy, 8,192 rows of 4096 features in [0,1] and a class id (last
column, float32) for wide_c. Deterministic (fixed seeds)."""
import os
import sys
import warnings

import numpy as np
import onnx
import torch

out = sys.argv[1] if len(sys.argv) > 1 else "bench-data"
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
# torch.onnx warns once per BatchNorm that it drops num_batches_tracked's update.
warnings.filterwarnings("ignore", category=UserWarning)


def keras_init(model):
    for m in model.modules():
        if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)):
            torch.nn.init.xavier_uniform_(m.weight)
            torch.nn.init.zeros_(m.bias)
    return model


def export(model, shape, name, meta, trace_batch=1, opset=13):
    path = os.path.join(out, name + ".onnx")
    # BatchNorm in training mode needs more than one value per channel to trace.
    torch.onnx.export(model, torch.zeros(trace_batch, *shape), path, opset_version=opset, input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    m = onnx.load(path)
    for k, v in meta.items():
        p = m.metadata_props.add()
        p.key, p.value = "deeplocalize." + k, str(v)
    onnx.save(m, path)


def class_rows(name, rows, features, classes, seed):
    """OUTDIR/name, unless it exists: rows of `features` values in [0, 1) and a class id
    (last column, float32), from its own seed."""
    path = os.path.join(out, name)
    if os.path.exists(path):
        return
    rng = np.random.default_rng(seed)
    xy = rng.random((rows, features + 1), dtype=np.float32)
    xy[:, -1] = rng.integers(0, classes, rows).astype(np.float32)
    np.save(path, xy)


cfg = {"loss": "categorical_crossentropy", "optimizer": "sgd", "learning_rate": 0.01, "epochs": 1, "batch_size": 32}
export(keras_init(torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10),
                                      torch.nn.Softmax(dim=1))), (784,), "mlp_784_128_10", cfg)
export(keras_init(torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128),
                                      torch.nn.ReLU(), torch.nn.Linear(128, 10), torch.nn.Softmax(dim=1))),
       (784,), "mlp_a", dict(cfg, batch_size=64))
export(keras_init(torch.nn.Sequential(
    torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
    torch.nn.Conv2d(6, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
    torch.nn.Linear(400, 120), torch.nn.ReLU(), torch.nn.Linear(120, 84), torch.nn.ReLU(),
    torch.nn.Linear(84, 10), torch.nn.Softmax(dim=1))), (1, 28, 28), "lenet5", dict(cfg, batch_size=64))
export(keras_init(torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10),
                                      torch.nn.Softmax(dim=1))), (4096,), "wide_c", dict(cfg, batch_size=256))

# The torchvision nets (issue 17). Only the architecture comes from torchvision: the
# weights are its random init (weights=None), saved next to the ONNX file so that
# PyTorch trains the very same module.
TORCHVISION_NETS = ("resnet18", "mobilenet_v2", "shufflenet_v2_x0_5")


def export_torchvision(name, side=32, batch=16, suffix=""):
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None, num_classes=10)
    model.train()
    export(model, (3, side, side), name + suffix, {"loss": "categorical_crossentropy", "from_logits": "true",
                                                   "optimizer": "adam", "learning_rate": 0.001, "epochs": 1,
                                                   "batch_size": batch},
           trace_batch=2)
    torch.save(model.state_dict(), os.path.join(out, name + suffix + ".pt"))


for net in TORCHVISION_NETS:
    try:
        export_torchvision(net)
    except Exception as e:  # reported, not hidden: the harness then skips the net
        print(f"{net}: export failed: {type(e).__name__}: {e}", file=sys.stderr)

if os.environ.get("LARGE_MAPS", "") not in ("", "0"):
    try:
        export_torchvision("mobilenet_v2", side=112, batch=8, suffix="_112")
        class_rows("img112.npy", 256, 3 * 112 * 112, 10, 6)
    except Exception as e:  # reported, not hidden, as above; the other models still follow
        print(f"mobilenet_v2_112: export failed: {type(e).__name__}: {e}", file=sys.stderr)

# The sequence nets (issue 17, bench/seq_nets.py): the same module definitions as
# pytorch_bench.py's, weights saved as NAME.pt. The transformer at opset 17, where
# LayerNorm is one ONNX op (LayerNormalization) instead of torch's decomposition.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seq_nets  # noqa: E402

for net, net_batch in seq_nets.SEQ_NETS.items():
    model = seq_nets.build(net).train()
    export(model, (seq_nets.SEQ, seq_nets.FEATURES), net,
           {"loss": "categorical_crossentropy", "from_logits": "true", "optimizer": "adam", "learning_rate": 0.001,
            "epochs": 1, "batch_size": net_batch}, trace_batch=2, opset=17 if net.startswith("transformer") else 13)
    torch.save(model.state_dict(), os.path.join(out, net + ".pt"))

# The ConvTranspose autoencoder (issue 17, bench/ae_net.py): MSE against its input.
import ae_net  # noqa: E402

ae = ae_net.build().train()
export(ae, ae_net.SHAPE, ae_net.NAME, {"loss": "mse", "optimizer": "adam", "learning_rate": 0.001, "epochs": 1,
                                       "batch_size": ae_net.BATCH, "targets": ae_net.TARGETS}, trace_batch=2)
torch.save(ae.state_dict(), os.path.join(out, ae_net.NAME + ".pt"))

path = os.path.join(out, "ae1k.npy")
if not os.path.exists(path):
    rng = np.random.default_rng(5)
    x = rng.random((1024, ae_net.TARGETS), dtype=np.float32)
    np.save(path, np.concatenate([x, x], axis=1))

class_rows("seq1k.npy", 1024, seq_nets.SEQ * seq_nets.FEATURES, seq_nets.CLASSES, 4)
class_rows("cifar1k.npy", 1024, 3 * 32 * 32, 10, 3)

rng = np.random.default_rng(1)
path = os.path.join(out, "mnist60k.csv")
if not os.path.exists(path):
    x = rng.random((60000, 784), dtype=np.float32)
    y = rng.integers(0, 10, 60000)
    with open(path, "w") as f:
        f.write(",".join(f"p{i}" for i in range(784)) + ",label\n")
        for i in range(60000):
            f.write(",".join(f"{v:.3f}" for v in x[i]) + f",{y[i]}\n")

class_rows("wide4096.npy", 8192, 4096, 10, 2)
