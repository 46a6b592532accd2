#!/usr/bin/python3
"""PyTorch training throughput for the same models, weights, data and settings as
dl_bench_train: the ONNX graph's nodes become torch modules holding the ONNX
initializers (onnx.numpy_helper), trained with SGD on Keras' categorical
cross-entropy of the softmax output (probabilities clipped to [1e-7, 1 - 1e-7]).

  /usr/bin/python3 bench/pytorch_bench.py MODEL.onnx DATA [--batch 64] [--steps 200]
      [--warmup 20] [--rounds 1] [--threads 2]
  /usr/bin/python3 bench/pytorch_bench.py --kernels      # the kernel paths, then exit

DATA is a .npy (rows x features+1, class id last) or a CSV (header, class id last);
a CSV is parsed once and cached next to it as .npy. Each step: gather a shuffled
batch, forward, loss, backward, SGD update, accuracy (as the C++ trainer does).
Prints "RESULT model=... mode=pytorch steps_per_s=..." with the median over rounds.

A torchvision net of gen_bench_models.py (MODEL.onnx with MODEL.pt beside it) is
rebuilt from torchvision with the state_dict saved from the very module that was
exported, and trained as its metadata says (Adam, cross-entropy on logits), in
training mode (BatchNorm with batch statistics); the sequence nets (lstm_cls,
transformer) likewise from bench/seq_nets.py. The kernel paths PyTorch was built
with (oneDNN/MKL-DNN for convolutions, the BLAS) are printed from torch.__config__."""
import argparse
import ctypes
import os
import statistics
import sys
import time


def _threads_from_argv(default=2):
    for k, a in enumerate(sys.argv):
        if a == "--threads" and k + 1 < len(sys.argv): return sys.argv[k + 1]
        if a.startswith("--threads="): return a.split("=", 1)[1]
    return str(default)


# The BLAS's own thread pool follows --threads too: torch.set_num_threads does not reach
# Debian's OpenBLAS (openblas-pthread), which otherwise multiplies on every core, so a
# "1 thread" run of the MLP, the LSTM or the TransformerEncoder used both cores (process
# CPU time ~2x wall time; bench/README.md, run 23). Read when the library loads: set before
# importing numpy (Debian's links the same OpenBLAS) and torch.
os.environ.setdefault("OPENBLAS_NUM_THREADS", _threads_from_argv())
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seq_nets  # noqa: E402  (bench/seq_nets.py: the sequence nets' modules)
import ae_net  # noqa: E402  (bench/ae_net.py: the ConvTranspose autoencoder)


def load_data(path):
    if path.endswith(".npy"):
        return np.load(path, mmap_mode="r")
    cache = os.path.splitext(path)[0] + ".npy"
    if not os.path.exists(cache) or os.path.getmtime(cache) < os.path.getmtime(path):
        xy = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float32)
        np.save(cache + ".tmp.npy", xy)
        os.replace(cache + ".tmp.npy", cache)
    return np.load(cache, mmap_mode="r")


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def build_model(path):
    """A torch.nn.Sequential for a chain of Gemm/Conv/Relu/MaxPool/Flatten/Softmax nodes."""
    m = onnx.load(path)
    init = {t.name: numpy_helper.to_array(t).copy() for t in m.graph.initializer}
    layers = []
    for n in m.graph.node:
        a = attrs(n)
        if n.op_type == "Gemm":
            w = init[n.input[1]]
            if not a.get("transB", 0):
                w = w.T
            assert not a.get("transA", 0) and a.get("alpha", 1.0) == 1.0 and a.get("beta", 1.0) == 1.0
            lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=len(n.input) > 2)
            with torch.no_grad():
                lin.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
                if len(n.input) > 2:
                    lin.bias.copy_(torch.from_numpy(init[n.input[2]]))
            layers.append(lin)
        elif n.op_type == "Conv":
            w = init[n.input[1]]
            pads = a.get("pads", [0, 0, 0, 0])
            assert pads[:2] == pads[2:] and a.get("group", 1) == 1
            conv = torch.nn.Conv2d(w.shape[1], w.shape[0], tuple(w.shape[2:]), stride=tuple(a.get("strides", [1, 1])),
                                   padding=tuple(pads[:2]), dilation=tuple(a.get("dilations", [1, 1])),
                                   bias=len(n.input) > 2)
            with torch.no_grad():
                conv.weight.copy_(torch.from_numpy(w))
                if len(n.input) > 2:
                    conv.bias.copy_(torch.from_numpy(init[n.input[2]]))
            layers.append(conv)
        elif n.op_type == "Relu":
            layers.append(torch.nn.ReLU())
        elif n.op_type == "MaxPool":
            assert not any(a.get("pads", [0])) and not a.get("ceil_mode", 0)
            layers.append(torch.nn.MaxPool2d(tuple(a["kernel_shape"]), stride=tuple(a.get("strides", a["kernel_shape"]))))
        elif n.op_type == "Flatten":
            assert a.get("axis", 1) == 1
            layers.append(torch.nn.Flatten())
        elif n.op_type == "Softmax":
            assert a.get("axis", -1) in (1, -1)
            layers.append(torch.nn.Softmax(dim=1))
        else:
            raise SystemExit(f"{path}: op {n.op_type} is not mapped to torch")
    input_shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim][1:]
    meta = {p.key: p.value for p in m.metadata_props}
    return torch.nn.Sequential(*layers), input_shape, meta


TORCHVISION_NETS = ("resnet18", "mobilenet_v2", "shufflenet_v2_x0_5")


def torchvision_arch(stem):
    """The torchvision architecture of an export's file stem, else None: the net's name, or
    the name and an input side (gen_bench_models.py's LARGE_MAPS mobilenet_v2_112)."""
    if stem in TORCHVISION_NETS:
        return stem
    base, _, side = stem.rpartition("_")
    return base if base in TORCHVISION_NETS and side.isdigit() else None


def build_torchvision(path):
    """The torchvision module and weights saved next to a gen_bench_models.py export."""
    import torchvision
    name = torchvision_arch(os.path.splitext(os.path.basename(path))[0])
    model = getattr(torchvision.models, name)(weights=None, num_classes=10)
    model.load_state_dict(torch.load(os.path.splitext(path)[0] + ".pt"))
    model.train()
    m = onnx.load(path, load_external_data=False)
    input_shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim][1:]
    return model, input_shape, {p.key: p.value for p in m.metadata_props}


def build_seq_net(path):
    """A bench/seq_nets.py or bench/ae_net.py net with the weights saved next to its export."""
    name = os.path.splitext(os.path.basename(path))[0]
    model = ae_net.build() if name == ae_net.NAME else seq_nets.build(name)
    model.load_state_dict(torch.load(os.path.splitext(path)[0] + ".pt"))
    model.train()
    m = onnx.load(path, load_external_data=False)
    input_shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim][1:]
    return model, input_shape, {p.key: p.value for p in m.metadata_props}


def kernel_paths():
    """What the convolutions and products run on, from PyTorch's build configuration."""
    cfg = torch.__config__.show()
    parts = []
    for line in cfg.splitlines():
        line = line.strip(" -")
        if line.startswith("Intel(R) MKL-DNN") or line.startswith("Intel(R) oneDNN"):
            parts.append("conv: " + line.replace("Intel(R) ", "") + " (oneDNN)"
                         + (" enabled" if torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled else " disabled"))
        elif line.startswith("CPU capability usage"):
            parts.append(line)
    blas = next((kv.split("=", 1)[1] for kv in cfg.replace(",", " ").split() if kv.startswith("BLAS_INFO=")), "?")
    lib = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    parts.append(f"BLAS_INFO={blas} -> {os.path.basename(os.path.dirname(lib))}/{os.path.basename(lib)}")
    try:  # the kernel set OpenBLAS picked for this CPU (or OPENBLAS_CORETYPE's)
        core = ctypes.CDLL(lib).openblas_get_corename
        core.restype = ctypes.c_char_p
        parts.append(f"OpenBLAS core {core().decode()}")
    except (OSError, AttributeError):
        pass
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA")
    if cap:  # bench/run.sh TORCH_ISA=...; ONEDNN_VERBOSE=1 shows the jit:ISA each primitive runs
        parts.append(f"oneDNN capped at {cap}")
    return "; ".join(parts)


def keras_categorical_crossentropy(p, y):
    p = p / p.sum(dim=1, keepdim=True)
    return -(y * torch.log(p.clamp(1e-7, 1 - 1e-7))).sum(dim=1).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?")
    ap.add_argument("data", nargs="?")
    ap.add_argument("--kernels", action="store_true", help="print the kernel paths PyTorch uses and exit")
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if args.kernels:
        print(f"PyTorch {torch.__version__} kernels: {kernel_paths()}")
        return 0
    if not args.model or not args.data:
        ap.error("MODEL and DATA are required")

    torch.set_num_threads(args.threads)
    stem = os.path.splitext(os.path.basename(args.model))[0]
    builder = (build_torchvision if torchvision_arch(stem)
               else build_seq_net if stem in seq_nets.SEQ_NETS or stem == ae_net.NAME else build_model)
    model, input_shape, meta = builder(args.model)
    batch = args.batch or int(meta.get("deeplocalize.batch_size", 32))
    lr = float(meta.get("deeplocalize.learning_rate", 0.01))
    optimizer = meta.get("deeplocalize.optimizer", "sgd")
    assert optimizer in ("sgd", "adam")
    loss_name = meta.get("deeplocalize.loss")
    assert loss_name in ("categorical_crossentropy", "mse")
    from_logits = meta.get("deeplocalize.from_logits", "false") == "true"
    targets = int(meta.get("deeplocalize.targets", 1))
    xy = load_data(args.data)
    x_all = torch.from_numpy(np.ascontiguousarray(xy[:, :-targets], dtype=np.float32)).reshape(-1, *input_shape)
    if loss_name == "mse":  # targets in the trailing columns, shaped as the output
        with torch.no_grad():
            out_shape = model(x_all[:2]).shape[1:]
        y_all = torch.from_numpy(np.ascontiguousarray(xy[:, -targets:], dtype=np.float32)).reshape(-1, *out_shape)
    else:
        labels = torch.from_numpy(np.ascontiguousarray(xy[:, -1]).astype(np.int64))
        with torch.no_grad():
            classes = model(x_all[:2]).shape[1]  # 2 rows: BatchNorm in training mode needs more than one
        y_all = torch.nn.functional.one_hot(labels, classes).float()
    n = x_all.shape[0]
    per_epoch = (n + batch - 1) // batch
    # Keras' Adam defaults (deeplocalize's): epsilon 1e-7, not PyTorch's 1e-8.
    opt = (torch.optim.Adam(model.parameters(), lr=lr, eps=1e-7) if optimizer == "adam"
           else torch.optim.SGD(model.parameters(), lr=lr))
    print(f"model {args.model}  data {args.data} ({n} rows)  batch {batch}  torch {torch.__version__}  "
          f"threads {torch.get_num_threads()}  optimizer {optimizer}", flush=True)
    print(f"kernels: {kernel_paths()}", flush=True)

    rng = np.random.default_rng(0)
    times, cpu_times = [], []
    for r in range(args.rounds):
        it = 0
        order = None
        t0 = None
        while it < args.warmup + args.steps:
            b = it % per_epoch
            if b == 0:
                order = torch.from_numpy(rng.permutation(n))
            idx = order[b * batch:(b + 1) * batch]
            x = x_all.index_select(0, idx)
            y = y_all.index_select(0, idx)
            opt.zero_grad(set_to_none=True)
            p = model(x)
            if loss_name == "mse":
                loss = torch.nn.functional.mse_loss(p, y)
                acc = loss  # a regression: no accuracy; the loss is read back as for the classifiers
            else:
                loss = (torch.nn.functional.cross_entropy(p, y) if from_logits
                        else keras_categorical_crossentropy(p, y))
                acc = (p.argmax(dim=1) == y.argmax(dim=1)).float().mean()
            loss.backward()
            opt.step()
            loss.item(), acc.item()
            it += 1
            if it == args.warmup:
                t0, c0 = time.perf_counter(), time.process_time()
        s = time.perf_counter() - t0
        times.append(s)
        # CPU time of the process (all threads): far steadier than wall time on a busy
        # machine, though it also counts OpenMP's spin-waiting at more than one thread.
        cpu_times.append(time.process_time() - c0)
        print(f"round {r}  pytorch  {args.steps / s:8.2f} steps/s", flush=True)
    name = os.path.basename(args.model)
    print(f"RESULT model={name} batch={batch} threads={args.threads} mode=pytorch "
          f"steps_per_s={args.steps / statistics.median(times):.3f} "
          f"cpu_us_per_step={1e6 * statistics.median(cpu_times) / args.steps:.1f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
