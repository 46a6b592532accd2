"""The case-spec API of models/modern: what a module of cases (generate.py's own
recurrent and embedding cases, attention_cases.py's transformer cases) exposes.

A module exposes CASES, a list of Case. generate.py builds each case, checks it in
PyTorch (healthy cases must learn, faulty ones must fail), exports it with
scripts/export_torch.py and writes models/modern/<name>/{model.onnx, data.csv,
expected.json}.

    Case(name, build, notes)
    build() -> Built(model, x, y, loss, optimizer, epochs, batch_size, expected, ...)

Built fields:
  model        torch.nn.Module with its initial weights (what is exported). Parameters
               with requires_grad=False are frozen: written to deeplocalize.frozen.
  x, y         numpy arrays: x [rows, ...] float32 or int64 (token ids), y [rows] int64
               class ids or [rows, k] float targets
  loss         a torch loss module (CrossEntropyLoss, BCELoss, MSELoss, ...)
  optimizer    dict(name="adam"|"sgd"|..., lr=..., momentum=...): torch.optim class names
               lower-cased; the export writes the same settings into the metadata
  epochs, batch_size
  expected     Expected(...), see below
  learns       True: the PyTorch check must show it learning; False: failing
  edit         optional callable(onnx.ModelProto): a change made to the exported model
               (e.g. an LSTM's activations); then `check_model` should run the same change
  check_model  optional torch module trained by the PyTorch check instead of `model`
  fold         export with constant folding (torch folds the LSTM/GRU gate reordering
               into the W, R, B initializers; deeplocalize trains those)
  min_accuracy the accuracy a learning case must reach in the check (default 0.85);
               a failing one must stay below it
  max_loss     for a regression case (no accuracy): the final epoch loss a learning case
               must reach in the check instead; a failing one must stay above it

Expected: fault (bool), symptoms (accepted primary symptoms, [] when fault is False),
root_causes (accepted), layer_ops (op types of the node the primary finding's layer must
contain; [] for no layer check) and notes (one sentence: the case and why it fails).
"""
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional


@dataclass
class Expected:
    fault: bool
    symptoms: List[str] = field(default_factory=list)
    root_causes: List[str] = field(default_factory=list)
    layer_ops: List[str] = field(default_factory=list)
    notes: str = ""


@dataclass
class Built:
    model: Any
    x: Any
    y: Any
    loss: Any
    optimizer: dict
    epochs: int
    batch_size: int
    expected: Expected
    learns: bool = True
    edit: Optional[Callable[[Any], None]] = None
    check_model: Any = None
    fold: bool = False
    min_accuracy: float = 0.85
    max_loss: Optional[float] = None


@dataclass
class Case:
    name: str
    build: Callable[[], Built]
    notes: str = ""


def add_variant_options(parser, default_out, scales):
    """The options of generate.py and attention_cases.py that write re-made variants of
    the cases: --out, --seed-offset, --scale (one of `scales`), --skip-invalid, and the
    case names."""
    parser.add_argument("--out", default=default_out, help="folder of the case folders (default: models/modern)")
    parser.add_argument("--seed-offset", type=int, default=0, help="added to every seed (default 0)")
    parser.add_argument("--scale", default="base", choices=sorted(scales), help="size preset (default base)")
    parser.add_argument("--skip-invalid", action="store_true",
                        help="skip, with a note, a case whose PyTorch check fails instead of stopping")
    parser.add_argument("cases", nargs="*", help="only these cases")
