"""The healthy bases of the suite: varied architectures, tasks, data, optimisers, batch sizes
and run lengths. Every base is a Spec (spec.py); generate.py checks that each trains
cleanly in PyTorch with Keras semantics over 3 seeds before it is used.

Data comes from scikit-learn's bundled sets and its make_* generators (no downloads).
"""
import numpy as np
from sklearn import datasets as skd


def _std(a):
    a = np.asarray(a, dtype=np.float64)
    sd = np.atleast_1d(a.std(0))
    sd[sd == 0] = 1.0
    sd = sd.reshape(a.std(0).shape)
    return (a - a.mean(0)) / sd


def _shuffle(seed, x, y):
    order = np.random.default_rng(seed).permutation(len(x))
    return np.asarray(x)[order], np.asarray(y)[order]


# name -> () -> (x, y, task, n_out); task: binary | multiclass | multilabel | regression
def _iris():
    d = skd.load_iris()
    return _std(d.data), d.target, "multiclass", 3


def _wine():
    d = skd.load_wine()
    return _std(d.data), d.target, "multiclass", 3


def _cancer():
    d = skd.load_breast_cancer()
    return _std(d.data), d.target, "binary", 1


def _digits():
    d = skd.load_digits()
    return d.data / 16.0, d.target, "multiclass", 10


def _diabetes():
    d = skd.load_diabetes()
    return _std(d.data), _std(d.target), "regression", 1


def _moons():
    x, y = skd.make_moons(n_samples=800, noise=0.2, random_state=11)
    return x, y, "binary", 1


def _circles():
    x, y = skd.make_circles(n_samples=800, noise=0.08, factor=0.5, random_state=12)
    return x, y, "binary", 1


def _blobs():
    x, y = skd.make_blobs(n_samples=900, centers=4, n_features=6, cluster_std=2.0, random_state=13)
    return _std(x), y, "multiclass", 4


def _classif():
    x, y = skd.make_classification(n_samples=1200, n_features=20, n_informative=10, n_classes=5,
                                   n_clusters_per_class=1, class_sep=1.5, random_state=14)
    return _std(x), y, "multiclass", 5


def _classif_bin():
    x, y = skd.make_classification(n_samples=600, n_features=12, n_informative=6, random_state=15)
    return _std(x), y, "binary", 1


def _multilabel():
    x, y = skd.make_multilabel_classification(n_samples=1000, n_features=16, n_classes=4, n_labels=2,
                                              random_state=16)
    return _std(x), y, "multilabel", 4


def _regression():
    x, y = skd.make_regression(n_samples=800, n_features=8, n_informative=6, noise=5.0, random_state=17)
    return _std(x), y / y.std(), "regression", 1


def _friedman_scaled():  # targets in [0, 1]: a sigmoid output fits
    x, y = skd.make_friedman1(n_samples=800, n_features=6, noise=0.5, random_state=18)
    return _std(x), (y - y.min()) / (y.max() - y.min()), "regression", 1


def _friedman_raw_std5():  # targets with std 5, not standardised: Adam copes
    x, y = skd.make_friedman1(n_samples=800, n_features=6, noise=0.5, random_state=19)
    return _std(x), (y - y.mean()) / y.std() * 5.0, "regression", 1


DATA = {"iris": _iris, "wine": _wine, "cancer": _cancer, "digits": _digits, "diabetes": _diabetes,
        "moons": _moons, "circles": _circles, "blobs": _blobs, "classif5": _classif,
        "classif_bin": _classif_bin, "multilabel": _multilabel, "regression": _regression,
        "friedman01": _friedman_scaled, "friedman_std5": _friedman_raw_std5}


def _out_layer(task, n_out):
    act = {"binary": "sigmoid", "multiclass": "softmax", "multilabel": "sigmoid", "regression": None}[task]
    return {"kind": "dense", "units": n_out, "act": act}


def _loss(task, label_form):
    if task in ("binary", "multilabel"):
        return "binary_crossentropy"
    if task == "regression":
        return "mse"
    return {"sparse": "sparse_categorical_crossentropy", "ids": "categorical_crossentropy",
            "onehot": "categorical_crossentropy"}[label_form]


def mlp(widths, act, extra=None):
    """Hidden dense layers; `extra` inserts 'bn' or a dropout after each hidden layer."""
    layers = []
    for w in widths:
        layers.append({"kind": "dense", "units": w, "act": None if extra == "bn" else act})
        if extra == "bn":  # Dense - BatchNormalization - activation
            layers.append({"kind": "bn", "act": act})
        elif extra:
            layers.append({"kind": "dropout", "p": extra})
    return layers


def cnn(chs, act, residual=False):
    layers = []
    for c in chs:
        layers.append({"kind": "conv", "ch": c, "k": 3, "act": act})
        if residual:
            layers.append({"kind": "res", "ch": c, "act": act})
        layers.append({"kind": "pool"})
    layers.append({"kind": "flatten"})
    layers.append({"kind": "dense", "units": 32, "act": act})
    return layers


# (name, data, hidden layers, image input, label form, cfg). Optimisers: Keras defaults
# unless a learning rate is given. Every run stays under ~2,500 iterations.
_B = [
    ("iris_mlp16", "iris", mlp([16, 8], "relu"), False, "ids", dict(optimizer="adam", learning_rate=0.01, epochs=40, batch_size=16)),
    ("iris_tanh_sgd", "iris", mlp([12], "tanh"), False, "sparse", dict(optimizer="sgd", learning_rate=0.1, momentum=0.9, epochs=60, batch_size=8)),
    ("iris_elu_rms", "iris", mlp([32, 16], "elu"), False, "onehot", dict(optimizer="rmsprop", learning_rate=0.005, epochs=40, batch_size=16)),
    ("wine_relu", "wine", mlp([32], "relu"), False, "sparse", dict(optimizer="adam", learning_rate=0.005, epochs=40, batch_size=16)),
    ("wine_bn", "wine", mlp([32, 16], "relu", "bn"), False, "ids", dict(optimizer="adam", learning_rate=0.01, epochs=30, batch_size=16)),
    ("wine_leaky_nesterov", "wine", mlp([24, 24], "leaky_relu"), False, "onehot", dict(optimizer="sgd", learning_rate=0.05, momentum=0.9, nesterov=True, epochs=40, batch_size=8)),
    ("cancer_logistic", "cancer", [], False, "-", dict(optimizer="adam", learning_rate=0.01, epochs=30, batch_size=32)),
    ("cancer_tanh_rms", "cancer", mlp([16], "tanh"), False, "-", dict(optimizer="rmsprop", epochs=30, batch_size=32)),
    ("cancer_deep_relu", "cancer", mlp([64, 32, 16], "relu"), False, "-", dict(optimizer="adam", learning_rate=0.001, epochs=20, batch_size=64)),
    ("cancer_adagrad", "cancer", mlp([32], "relu"), False, "-", dict(optimizer="adagrad", learning_rate=0.05, epochs=30, batch_size=16)),
    ("cancer_batch1", "cancer", mlp([8], "relu"), False, "-", dict(optimizer="sgd", learning_rate=0.01, epochs=4, batch_size=1)),
    ("digits_mlp", "digits", mlp([64], "relu"), False, "sparse", dict(optimizer="adam", learning_rate=0.003, epochs=15, batch_size=32)),
    ("digits_dropout", "digits", mlp([128, 64], "relu", 0.2), False, "ids", dict(optimizer="adam", learning_rate=0.002, epochs=15, batch_size=32)),
    ("digits_wide_sgd", "digits", mlp([256], "relu"), False, "onehot", dict(optimizer="sgd", learning_rate=0.1, momentum=0.9, epochs=15, batch_size=64)),
    ("digits_elu_b256", "digits", mlp([64, 64], "elu"), False, "sparse", dict(optimizer="adam", learning_rate=0.01, epochs=40, batch_size=256)),
    ("digits_cnn", "digits", cnn([8, 16], "relu"), True, "sparse", dict(optimizer="adam", learning_rate=0.003, epochs=10, batch_size=32)),
    ("digits_cnn_tanh", "digits", cnn([8], "tanh"), True, "ids", dict(optimizer="rmsprop", learning_rate=0.002, epochs=10, batch_size=32)),
    ("digits_rescnn", "digits", cnn([8], "relu", residual=True), True, "sparse", dict(optimizer="adam", learning_rate=0.003, epochs=8, batch_size=32)),
    ("digits_cnn_sgd", "digits", cnn([8, 16], "relu"), True, "onehot", dict(optimizer="sgd", learning_rate=0.05, momentum=0.9, epochs=10, batch_size=32)),
    ("diabetes_relu", "diabetes", mlp([32], "relu"), False, "-", dict(optimizer="adam", learning_rate=0.003, epochs=60, batch_size=16)),
    ("diabetes_tanh_sgd", "diabetes", mlp([16], "tanh"), False, "-", dict(optimizer="sgd", learning_rate=0.01, epochs=60, batch_size=16)),
    ("moons_tanh", "moons", mlp([16, 16], "tanh"), False, "-", dict(optimizer="adam", learning_rate=0.01, epochs=60, batch_size=32)),
    ("moons_relu_b128", "moons", mlp([32, 32], "relu"), False, "-", dict(optimizer="adam", learning_rate=0.02, epochs=100, batch_size=128)),
    ("moons_leaky_rms", "moons", mlp([24, 24], "leaky_relu"), False, "-", dict(optimizer="rmsprop", learning_rate=0.005, epochs=50, batch_size=32)),
    ("circles_relu", "circles", mlp([32, 32], "relu"), False, "-", dict(optimizer="adam", learning_rate=0.01, epochs=60, batch_size=32)),
    ("circles_elu_momentum", "circles", mlp([32], "elu"), False, "-", dict(optimizer="sgd", learning_rate=0.1, momentum=0.9, epochs=60, batch_size=32)),
    ("circles_bn", "circles", mlp([32, 32], "relu", "bn"), False, "-", dict(optimizer="adam", learning_rate=0.01, epochs=40, batch_size=32)),
    ("blobs_relu", "blobs", mlp([16], "relu"), False, "sparse", dict(optimizer="adam", learning_rate=0.01, epochs=30, batch_size=32)),
    ("blobs_tanh_adagrad", "blobs", mlp([32], "tanh"), False, "onehot", dict(optimizer="adagrad", learning_rate=0.1, epochs=30, batch_size=32)),
    ("blobs_deep_elu", "blobs", mlp([32, 32, 32, 32], "elu"), False, "ids", dict(optimizer="adam", learning_rate=0.001, epochs=30, batch_size=32)),
    ("classif5_relu", "classif5", mlp([64, 32], "relu"), False, "sparse", dict(optimizer="adam", learning_rate=0.003, epochs=30, batch_size=32)),
    ("classif5_dropout_rms", "classif5", mlp([64], "relu", 0.3), False, "onehot", dict(optimizer="rmsprop", epochs=30, batch_size=32)),
    ("classif5_bn_sgd", "classif5", mlp([64, 64], "relu", "bn"), False, "ids", dict(optimizer="sgd", learning_rate=0.05, momentum=0.9, epochs=20, batch_size=64)),
    ("classif_bin_relu", "classif_bin", mlp([16, 8], "relu"), False, "-", dict(optimizer="adam", learning_rate=0.005, epochs=40, batch_size=16)),
    ("classif_bin_tanh_b4", "classif_bin", mlp([8], "tanh"), False, "-", dict(optimizer="sgd", learning_rate=0.02, epochs=10, batch_size=4)),
    ("multilabel_relu", "multilabel", mlp([64], "relu"), False, "-", dict(optimizer="adam", learning_rate=0.003, epochs=30, batch_size=32)),
    ("multilabel_tanh", "multilabel", mlp([32, 32], "tanh"), False, "-", dict(optimizer="rmsprop", epochs=30, batch_size=32)),
    ("regression_linear", "regression", [], False, "-", dict(optimizer="adam", learning_rate=0.01, epochs=40, batch_size=32)),
    ("regression_relu_mae", "regression", mlp([32], "relu"), False, "-", dict(optimizer="adam", learning_rate=0.005, epochs=40, batch_size=32, loss="mae")),
    ("regression_nesterov", "regression", mlp([16, 16], "tanh"), False, "-", dict(optimizer="sgd", learning_rate=0.01, momentum=0.9, nesterov=True, epochs=40, batch_size=32)),
    ("friedman01_sigmoid_out", "friedman01", mlp([32], "relu"), False, "-", dict(optimizer="adam", learning_rate=0.005, epochs=60, batch_size=32, out_act="sigmoid")),
    ("friedman_std5_relu", "friedman_std5", mlp([64, 32], "relu"), False, "-", dict(optimizer="adam", learning_rate=0.003, epochs=60, batch_size=32)),
    ("friedman_std5_elu_short", "friedman_std5", mlp([64], "elu"), False, "-", dict(optimizer="adam", learning_rate=0.01, epochs=20, batch_size=64)),
    ("diabetes_bn", "diabetes", mlp([32, 16], "relu", "bn"), False, "-", dict(optimizer="adam", learning_rate=0.003, epochs=40, batch_size=32)),
]


def bases():
    """Every base as a Spec: data, layers (hidden + output), training configuration."""
    out = []
    for i, (name, data, hidden, image, label_form, cfg) in enumerate(_B):
        x, y, task, n_out = DATA[data]()
        x, y = _shuffle(100 + i, x, y)
        fixed = [dict(l) for l in hidden]
        out_layer = _out_layer(task, n_out)
        cfg = dict(cfg)
        if "out_act" in cfg:
            out_layer["act"] = cfg.pop("out_act")
        fixed.append(out_layer)
        loss = cfg.pop("loss", None) or _loss(task, label_form)
        targets = n_out if task == "multilabel" or label_form == "onehot" else 1
        if label_form == "onehot":
            y = np.eye(n_out)[y]
        out.append({"name": name, "data": data, "x": x, "y": y, "task": task, "n_out": n_out,
                    "in_shape": (1, 8, 8) if image else (x.shape[1],), "layers": fixed,
                    "label_form": label_form,
                    "cfg": dict(cfg, loss=loss, seed=i + 1, targets=targets)})
    return out
