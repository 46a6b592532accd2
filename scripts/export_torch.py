#!/usr/bin/python3
"""Export a torch.nn.Module the way deeplocalize trains it.

torch.onnx.export's defaults make an inference model: eval mode (BatchNorm folded into
Conv, Dropout removed, identical initializers merged), a batch fixed to the example's.
This exports in training mode, with dimension 0 of every input and output dynamic, at an
opset deeplocalize runs, and writes the deeplocalize.* metadata (loss, from_logits,
optimizer, learning_rate, momentum, nesterov, epochs, batch_size, targets, seed) into
the model, taken from a torch optimizer and loss when given, and deeplocalize.frozen: the
parameters with requires_grad=False (deeplocalize does not update them).

Command line (the model is `module:callable`, called with no arguments, or the name of a
torchvision model, built with random weights: nothing is downloaded):

  scripts/export_torch.py resnet18 --input-shape 3,32,32 --num-classes 10 \\
      --loss cross_entropy --optimizer sgd --lr 0.01 --momentum 0.9 -o resnet18.onnx
  scripts/export_torch.py mypkg.models:make_net --input-shape 20 -o net.onnx

As a module:

  from export_torch import export_model
  export_model(net, torch.zeros(2, 20), "net.onnx",
               optimizer=torch.optim.Adam(net.parameters(), lr=1e-3), loss=torch.nn.CrossEntropyLoss())
"""
import argparse
import copy
import importlib
import sys
import warnings

OPSET = 14  # torch 1.13's default; BatchNormalization keeps its training form (training_mode=1)

# torch loss -> (deeplocalize.loss, from_logits)
LOSSES = {
    "MSELoss": ("mse", False),
    "L1Loss": ("mae", False),
    "BCELoss": ("binary_crossentropy", False),
    "BCEWithLogitsLoss": ("binary_crossentropy", True),
    "CrossEntropyLoss": ("sparse_categorical_crossentropy", True),
}
# command-line spelling -> torch loss class name
LOSS_NAMES = {"mse": "MSELoss", "l1": "L1Loss", "mae": "L1Loss", "bce": "BCELoss",
              "bce_with_logits": "BCEWithLogitsLoss", "cross_entropy": "CrossEntropyLoss"}
OPTIMIZERS = {"SGD": "sgd", "Adam": "adam", "RMSprop": "rmsprop", "Adagrad": "adagrad",
              "Adadelta": "adadelta", "Adamax": "adamax", "NAdam": "nadam"}


def number(v):
    return repr(float(v)) if not float(v).is_integer() else str(float(v))


def training_metadata(optimizer=None, loss=None, epochs=None, batch_size=None, targets=None, seed=None):
    """The deeplocalize.* metadata for a torch optimizer and loss module (either may be None)."""
    meta = {}
    if loss is not None:
        name = type(loss).__name__
        if name not in LOSSES:
            raise ValueError("loss %s has no deeplocalize equivalent (supported: %s)" % (name, ", ".join(LOSSES)))
        if getattr(loss, "reduction", "mean") != "mean":
            raise ValueError("loss %s: only reduction='mean' matches deeplocalize" % name)
        meta["loss"], logits = LOSSES[name]
        meta["from_logits"] = "true" if logits else "false"
    if optimizer is not None:
        name = type(optimizer).__name__
        if name not in OPTIMIZERS:
            raise ValueError("optimizer %s has no deeplocalize equivalent (supported: %s)" % (name, ", ".join(OPTIMIZERS)))
        group = optimizer.param_groups[0]
        meta["optimizer"] = OPTIMIZERS[name]
        meta["learning_rate"] = number(group["lr"])
        if name == "SGD":
            meta["momentum"] = number(group.get("momentum", 0.0))
            meta["nesterov"] = "true" if group.get("nesterov", False) else "false"
        if group.get("weight_decay", 0):
            warnings.warn("weight_decay is not carried into deeplocalize's metadata")
    for key, value in (("epochs", epochs), ("batch_size", batch_size), ("targets", targets), ("seed", seed)):
        if value is not None:
            meta[key] = str(int(value))
    return {"deeplocalize." + k: v for k, v in meta.items()}


def export_model(model, example, path, optimizer=None, loss=None, opset=OPSET, constant_folding=False, edit=None,
                 **config):
    """Exports `model` (in training mode, dynamic batch) with `example` (a tensor whose
    dimension 0 is the batch) to `path`, with the metadata of training_metadata() and
    deeplocalize.frozen for the parameters with requires_grad=False.

    constant_folding=True folds what torch computes from the parameters at run time into
    initializers: nn.LSTM/nn.GRU then export their reordered gates as W, R, B initializers
    (without it they are Unsqueeze(Concat(Slice(torch parameter), ...)), which deeplocalize
    trains the same way, through to the torch parameters). A folded parameter has a new
    name, so it cannot be frozen (ValueError).
    `edit`, when given, is called with the onnx.ModelProto before it is checked and saved."""
    import onnx
    import torch

    model = copy.deepcopy(model).train()
    meta = training_metadata(optimizer, loss, **config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, path, opset_version=opset, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=constant_folding)
    proto = onnx.load(path)
    frozen = [name for name, p in model.named_parameters() if not p.requires_grad]
    if frozen:
        names = {i.name for i in proto.graph.initializer}
        missing = [n for n in frozen if n not in names]
        if missing:
            raise ValueError("frozen parameter(s) %s are not initializers of the export (folded or renamed)"
                             % ", ".join(missing))
        meta["deeplocalize.frozen"] = ",".join(frozen)
    if edit is not None:
        edit(proto)
    for key, value in sorted(meta.items()):
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(proto)
    onnx.save(proto, path)
    return meta


def build_model(spec, num_classes):
    if ":" in spec:
        module, name = spec.split(":", 1)
        return getattr(importlib.import_module(module), name)()
    import torchvision

    factory = getattr(torchvision.models, spec, None)
    if factory is None or not callable(factory):
        raise SystemExit("export_torch: '%s' is neither module:callable nor a torchvision model name" % spec)
    return factory(weights=None, num_classes=num_classes)  # random init, never a download


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="module:callable (called with no arguments) or a torchvision model name")
    p.add_argument("--input-shape", required=True, help="one sample's shape, e.g. 3,32,32 (the batch is dynamic)")
    p.add_argument("-o", "--output", required=True, help="the ONNX file to write")
    p.add_argument("--num-classes", type=int, default=10, help="torchvision models: output classes (default 10)")
    p.add_argument("--loss", choices=sorted(LOSS_NAMES), help="the torch loss the model is trained with")
    p.add_argument("--optimizer", choices=sorted(v for v in OPTIMIZERS), type=lambda s: {k.lower(): k for k in OPTIMIZERS}.get(s.lower(), s))
    p.add_argument("--lr", type=float)
    p.add_argument("--momentum", type=float, default=0.0)
    p.add_argument("--nesterov", action="store_true")
    p.add_argument("--epochs", type=int)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--targets", type=int)
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed before building the model (default 0)")
    p.add_argument("--opset", type=int, default=OPSET)
    a = p.parse_args(argv)

    import torch

    torch.manual_seed(a.seed)
    shape = [int(d) for d in a.input_shape.split(",") if d.strip()]
    model = build_model(a.model, a.num_classes)
    optimizer = None
    if a.optimizer:
        kwargs = {"lr": a.lr if a.lr is not None else (0.01 if a.optimizer == "SGD" else 1e-3)}
        if a.optimizer == "SGD":
            kwargs.update(momentum=a.momentum, nesterov=a.nesterov)
        optimizer = getattr(torch.optim, a.optimizer)(model.parameters(), **kwargs)
    loss = getattr(torch.nn, LOSS_NAMES[a.loss])() if a.loss else None
    meta = export_model(model, torch.zeros([2] + shape), a.output, optimizer=optimizer, loss=loss, opset=a.opset,
                        epochs=a.epochs, batch_size=a.batch_size, targets=a.targets, seed=a.seed)
    print("%s: %s, opset %d, %s" % (a.output, a.model, a.opset,
                                    ", ".join("%s=%s" % (k[len("deeplocalize."):], v) for k, v in sorted(meta.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
