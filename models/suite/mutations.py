"""Mutation operators (fault injection) and benign changes for the suite.

Modelled on DeepCrime's operators (ISSTA'21, a taxonomy of real faults) and on the real
faults of the DeepLocalize / DeepDiagnosis / DeepFD benchmarks. Each operator maps a base
Spec to a list of mutants; a mutant carries the root causes the contract accepts for it
and the indices of the layers it touches (empty: a fault with no layer, such as data or
the learning rate). Whether a mutant is really a fault is decided afterwards by
generate.py's killed test, never assumed.
"""
import numpy as np

from spec import clone, hidden_layers, param_layers

CLASS = ("binary", "multiclass", "multilabel")
DEFAULT_LR = {"sgd": 0.01, "adam": 0.001, "rmsprop": 0.001, "adagrad": 0.01}


def _lr(spec):
    return spec["cfg"].get("learning_rate", DEFAULT_LR[spec["cfg"]["optimizer"]])


def _cfg(spec, **changes):
    return clone(spec, cfg=dict(spec["cfg"], **changes))


def _layers(spec, fn):
    s = clone(spec)
    fn(s["layers"])
    return s


def _acts(spec):
    return {l.get("act") for i, l in enumerate(spec["layers"]) if i in hidden_layers(spec)}


def _set_out(act):
    def f(layers):
        layers[-1]["act"] = act
    return f


def _all_kernels(kind):
    def f(layers):
        for l in layers:
            if l["kind"] in ("dense", "conv", "res"):
                l["kernel"] = kind
    return f


def lr_high(s):
    return [(_cfg(s, learning_rate=_lr(s) * 1000), [], ["learning_rate"])]


def lr_low(s):
    return [(_cfg(s, learning_rate=_lr(s) / 1000), [], ["learning_rate", "training_length"])]


def batch1_large_lr(s):
    if s["cfg"]["batch_size"] == 1:
        return []
    return [(_cfg(s, batch_size=1, learning_rate=_lr(s) * 30), [], ["learning_rate"])]


def too_few_epochs(s):
    return [(_cfg(s, epochs=1), [], ["training_length"])] if s["cfg"]["epochs"] >= 10 else []


def softmax_one_unit(s):
    if s["task"] != "binary":
        return []
    return [(_layers(s, _set_out("softmax")), [len(s["layers"]) - 1], ["activation"])]


def sigmoid_with_cce(s):
    if s["task"] != "multiclass":
        return []
    return [(_layers(s, _set_out("sigmoid")), [len(s["layers"]) - 1], ["activation", "loss"])]


def relu_output_ce(s):
    if s["task"] not in CLASS:
        return []
    return [(_layers(s, _set_out("relu")), [len(s["layers"]) - 1], ["activation", "loss"])]


def linear_output_ce(s):
    if s["task"] not in CLASS:
        return []
    return [(_layers(s, _set_out(None)), [len(s["layers"]) - 1], ["activation", "loss"])]


def bounded_output_regression(s):
    if s["task"] != "regression" or (s["y"].min() >= 0 and s["y"].max() <= 1):
        return []
    return [(_layers(s, _set_out("sigmoid")), [len(s["layers"]) - 1], ["activation"])]


def wrong_loss(s):
    if s["task"] == "regression":
        return [(_cfg(s, loss="binary_crossentropy"), [], ["loss"])]
    if s["task"] in ("binary", "multilabel"):
        return [(_cfg(s, loss="mse"), [], ["loss"])]
    if s["label_form"] == "onehot":
        return [(_cfg(s, loss="binary_crossentropy"), [], ["loss"])]
    return []


def remove_activations(s):
    hid = [i for i in hidden_layers(s) if s["layers"][i]["kind"] == "dense"]
    if not hid or any(l["kind"] in ("bn", "conv", "res") for l in s["layers"]):
        return []

    def f(layers):
        for i in hid:
            layers[i]["act"] = None
    return [(_layers(s, f), hid, ["activation", "architecture"])]


def deep_sigmoid_stack(s):
    hid = [i for i in hidden_layers(s) if s["layers"][i]["kind"] == "dense"]
    if not hid or any(l["kind"] in ("bn", "conv", "res") for l in s["layers"]):
        return []
    width = s["layers"][hid[0]]["units"]

    def f(layers):
        for i in hid:
            layers[i]["act"] = "sigmoid"
        for _ in range(6):
            layers.insert(hid[-1] + 1, {"kind": "dense", "units": width, "act": "sigmoid"})
    m = _layers(s, f)
    return [(_cfg(m, optimizer="sgd", learning_rate=0.01, momentum=0.0, nesterov=False),
             list(range(hid[0], hid[-1] + 7)), ["activation", "initialization"])]


def zero_init(s):
    if len(param_layers(s)) < 2:
        return []
    return [(_layers(s, _all_kernels("zeros")), param_layers(s), ["initialization"])]


def constant_init(s):
    if len(param_layers(s)) < 2:
        return []
    return [(_layers(s, _all_kernels("constant")), param_layers(s), ["initialization"])]


def huge_init(s):
    return [(_layers(s, _all_kernels("huge")), param_layers(s), ["initialization"])]


def dead_relu_bias(s):
    hid = [i for i in hidden_layers(s) if s["layers"][i].get("act") == "relu"]
    if not hid:
        return []

    def f(layers):
        layers[hid[0]]["bias"] = -10.0
    return [(_layers(s, f), [hid[0]], ["initialization", "activation"])]


def bottleneck_one_unit(s):
    hid = [i for i in hidden_layers(s) if s["layers"][i]["kind"] == "dense"]
    if not hid or s["n_out"] < 3:
        return []

    def f(layers):
        layers[hid[-1]]["units"] = 1
    if any(l["kind"] == "bn" for l in s["layers"][hid[-1] + 1:]):
        return []
    return [(_layers(s, f), [hid[-1]], ["architecture"])]


def dropout_near_one(s):
    hid = hidden_layers(s)
    if not hid:
        return []

    def f(layers):
        layers.insert(hid[0] + 1, {"kind": "dropout", "p": 0.95})
    return [(_layers(s, f), [hid[0], hid[0] + 1], ["architecture"])]


def momentum_too_high(s):
    if s["cfg"]["optimizer"] != "sgd":
        return []
    return [(_cfg(s, momentum=0.999, nesterov=False), [], ["optimizer", "learning_rate"])]


def unscaled_inputs(s):
    if s["in_shape"] != (s["x"].shape[1],):
        return []
    x = s["x"] * 250.0 + 1000.0
    return [(clone(s, x=x), [], ["data"])]


def unscaled_images(s):
    if len(s["in_shape"]) != 3:
        return []
    return [(clone(s, x=s["x"] * 255.0 * 16.0), [], ["data"])]


def unscaled_targets(s):
    if s["task"] != "regression" or s["layers"][-1].get("act"):
        return []
    return [(clone(s, y=s["y"] * 1000.0 + 5000.0), [], ["data"])]


def labels_shifted(s):
    if s["task"] != "multiclass" or s["label_form"] == "onehot":
        return []
    return [(clone(s, y=np.asarray(s["y"]) + 1), [], ["labels"])]


def labels_random(s):
    if s["task"] not in CLASS:
        return []
    y = np.asarray(s["y"])[np.random.default_rng(7).permutation(len(s["y"]))]
    return [(clone(s, y=y), [], ["labels", "data"])]


OPERATORS = [lr_high, lr_low, batch1_large_lr, too_few_epochs, softmax_one_unit, sigmoid_with_cce,
             relu_output_ce, linear_output_ce, bounded_output_regression, wrong_loss, remove_activations,
             deep_sigmoid_stack, zero_init, constant_init, huge_init, dead_relu_bias, bottleneck_one_unit,
             dropout_near_one, momentum_too_high, unscaled_inputs, unscaled_images, unscaled_targets,
             labels_shifted, labels_random]


def mutants(spec):
    for op in OPERATORS:
        for m, touched, causes in op(spec):
            yield op.__name__, m, touched, causes


# Benign changes: each must leave a healthy run (checked in generate.py).
def _width(s, factor):
    def f(layers):
        for i in hidden_layers(s):
            if layers[i]["kind"] == "dense":
                layers[i]["units"] *= factor
    return _layers(s, f)


def benign(spec):
    s, c = spec, spec["cfg"]
    yield "batch_x2", _cfg(s, batch_size=min(256, c["batch_size"] * 2))
    yield "lr_x2", _cfg(s, learning_rate=_lr(s) * 2)
    yield "lr_half", _cfg(s, learning_rate=_lr(s) / 2)
    if any(s["layers"][i]["kind"] == "dense" for i in hidden_layers(s)):
        yield "width_x2", _width(s, 2)
    yield "seed", _cfg(s, seed=c["seed"] + 1000)
    other = {"adam": "rmsprop", "rmsprop": "adam", "sgd": "adam", "adagrad": "adam"}[c["optimizer"]]
    yield "optimizer", _cfg(s, optimizer=other, learning_rate=DEFAULT_LR[other] * 3, momentum=0.0,
                            nesterov=False)
    yield "epochs_x2", _cfg(s, epochs=c["epochs"] * 2)
