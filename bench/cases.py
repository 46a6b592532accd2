#!/usr/bin/env python3
# The harness's cases, one list for bench/run.sh, probe_ab.py and probe_instr.py: per
# letter the model, its data, batch, timed steps and warm-up steps (bench/README.md).
# `bench/cases.py LETTER` prints "MODEL BATCH DATA STEPS WARMUP" (the model without
# .onnx) for run.sh; nothing, and exit status 1, for an unknown letter.
import sys

CASES = {
    "a": ("mlp_a.onnx", "mnist60k.npy", 64, 300, 20),
    "b": ("lenet5.onnx", "mnist60k.npy", 64, 200, 20),
    "c": ("wide_c.onnx", "wide4096.npy", 256, 20, 3),
    "r": ("resnet18.onnx", "cifar1k.npy", 16, 16, 2),
    "m": ("mobilenet_v2.onnx", "cifar1k.npy", 16, 16, 2),
    "s": ("shufflenet_v2_x0_5.onnx", "cifar1k.npy", 16, 16, 2),
    "l": ("lstm_cls.onnx", "seq1k.npy", 32, 16, 2),
    "t": ("transformer.onnx", "seq1k.npy", 16, 16, 2),
    "k": ("transformer_causal.onnx", "seq1k.npy", 16, 16, 2),
    "e": ("conv_ae.onnx", "ae1k.npy", 16, 16, 2),
}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        sys.exit(1)
    model, data, batch, steps, warmup = CASES[sys.argv[1]]
    print(model.removesuffix(".onnx"), batch, data, steps, warmup)
