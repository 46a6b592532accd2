"""Real bugs, part A: posts of the DeepLocalize benchmark that models/benchmark did not
have yet, and posts found with the search tool (see posts.py)."""
import numpy as np
import torch.nn as nn
from sklearn import datasets as skd
from sklearn.model_selection import train_test_split

import generate as kb
from posts import BENCH, SO, col, pair, variant

R = np.random.default_rng


def bench(post):
    return ("the DeepLocalize benchmark's buggy and correct programs of the post (" + BENCH + post +
            "), which copy the post's code and the accepted answer's change.")


# --- 34311586: XOR-like rows, softmax on one output unit, tiny SGD rate ------------------------

def _so_34311586():
    x = np.array([[1, 1], [0, 0], [1, 0], [0, 1], [1, 1], [0, 0]], dtype=float)
    y = col([0, 0, 1, 1, 0, 0])

    def net(last):
        return lambda s: kb.seq(s, nn.Linear(2, 2), nn.Sigmoid(), nn.Linear(2, 3), nn.Sigmoid(), nn.Linear(3, 1),
                                last, kernel="uniform")
    sgd = dict(loss="mse", optimizer="sgd", momentum=0.9, nesterov="true", decay=1e-6, seed=101)
    pair("so_34311586", SO + "34311586", (2,),
         variant(net(nn.Softmax(dim=1)), dict(sgd, learning_rate=0.001, epochs=20, batch_size=32), x, y, "binary"),
         variant(net(nn.Sigmoid()), dict(sgd, learning_rate=0.1, epochs=1500, batch_size=4), x, y, "binary"),
         ["activation"], [-1],
         "The post's 6 rows of XOR (x1 != x2), Dense(2, sigmoid)-Dense(3, sigmoid)-Dense(1, softmax) with "
         "init='uniform', MSE, SGD(lr 0.001, decay 1e-6, momentum 0.9, nesterov), 20 epochs: a softmax over one "
         "unit is constantly 1, so every prediction is 1 and the loss never moves.",
         "sigmoid output, SGD lr 0.1, more epochs and batch 4 (the answer trains 10000 epochs; 1500 here, 3000 "
         "updates).", bench("34311586"),
         dropped="the fix does not train in PyTorch: with init='uniform' (|w| <= 0.05), MSE and SGD the "
                 "loss stays at 0.222 (predicting 1/3) on all 3 seeds, even after 5000 epochs")


# --- 48221692: linear regression through a sigmoid output ----------------------------------------

def _so_48221692():
    r = R(48221692)
    x = r.uniform(0.0, 10.0, size=(100, 1))
    y = 0.5 * x[:, 0] + 1.0 + r.normal(0.0, 0.3, 100)
    x, y = x[:75], col(y[:75])  # the post trains on a 75% split

    def net(last):
        return lambda s: kb.seq(s, nn.Linear(1, 5), nn.Sigmoid(), nn.Linear(5, 1), *last)
    cfg = dict(loss="mse", optimizer="sgd", epochs=1000, batch_size=75, seed=102)
    pair("so_48221692", SO + "48221692", (1,),
         variant(net([nn.Sigmoid()]), cfg, x, y, "regression"), variant(net([]), cfg, x, y, "regression"),
         ["activation"], [-1],
         "Regression on a line (Linear_Data.csv: one feature, targets well above 1) with Dense(5, sigmoid)-"
         "Dense(1, sigmoid), MSE, SGD (lr 0.01), full batch, 1000 epochs: the sigmoid output cannot exceed 1, "
         "so every prediction saturates near 1.",
         "a linear output layer (activation='linear'); the rest as in the post.",
         bench("48221692") + " Data: 100 synthetic points y = 0.5x + 1 + noise, x in [0, 10), first 75 for "
         "training.")


# --- 50306988: two separable blobs, 5 epochs of Adam ----------------------------------------------

def _so_50306988():
    r = R(50306988)
    c1, c2 = r.uniform(0.2, 0.4, 200), r.uniform(0.5, 0.7, 200)
    xb = np.array([[c1[i], c1[i + 1]] if k == 0 else [c2[i], c2[i + 1]] for i in range(0, 200, 2) for k in (0, 1)])
    yb = np.tile([[1.0, 0.0], [0.0, 1.0]], (100, 1))
    xf = np.concatenate([r.uniform(0.2, 0.4, (200, 2)), r.uniform(0.5, 0.7, (200, 2))])
    yf = col(np.concatenate([np.zeros(200), np.ones(200)]))
    order = r.permutation(400)
    xf, yf = xf[order], yf[order]
    buggy = variant(lambda s: kb.seq(s, nn.Linear(2, 2), nn.Sigmoid(), nn.Linear(2, 2), nn.Softmax(dim=1)),
                    dict(loss="categorical_crossentropy", optimizer="adam", epochs=5, batch_size=32, seed=103,
                         targets=2), xb, yb, "multiclass", target_names=["class1", "class2"])
    fixed = variant(lambda s: kb.seq(s, nn.Linear(2, 2), nn.Sigmoid(), nn.Linear(2, 1), nn.Sigmoid()),
                    dict(loss="binary_crossentropy", optimizer="adam", epochs=50, batch_size=32, seed=103),
                    xf, yf, "binary")
    pair("so_50306988", SO + "50306988", (2,), buggy, fixed, ["training_length"], [],
         "Two classes drawn from [0.2, 0.4) and [0.5, 0.7) in 2 features (200 rows), Dense(2, sigmoid)-"
         "Dense(2, softmax), categorical cross-entropy, Adam (lr 1e-3), 5 epochs of batch 32: 35 updates "
         "leave the model predicting one class for every row.",
         "train 50 epochs (with 200 rows per class, shuffled, and a Dense(1, sigmoid) output with binary "
         "cross-entropy).", bench("50306988"),
         dropped="the fix does not train in PyTorch: 50 epochs of Adam (lr 1e-3) leave 2 of 3 seeds at 50%")


# --- 59325381: MNIST labels divided by 255 along with the pixels ---------------------------------

def _so_59325381():
    x, ids = kb.digits(59)
    x = x / 16.0  # the post scales the pixels by 1/255

    def net(s):
        return kb.seq(s, nn.Conv2d(1, 64, 3, padding=1), nn.MaxPool2d(2), nn.Conv2d(64, 32, 3, padding=1),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10),
                      nn.Softmax(dim=1))
    base = dict(optimizer="adam", batch_size=32, seed=104)
    pair("so_59325381", SO + "59325381", (1, 8, 8),
         variant(net, dict(base, loss="sparse_categorical_crossentropy", epochs=2), x, col(ids / 255.0),
                 "multiclass", ref=col(ids), target_names=["digit"]),
         variant(net, dict(base, loss="categorical_crossentropy", epochs=10), x, col(ids), "multiclass",
                 target_names=["digit"]),
         ["labels"], [],
         "MNIST CNN (Conv(64, 3x3, same)-MaxPool-Conv(32, 3x3, same)-MaxPool-Flatten-Dense(128, relu)-"
         "Dense(10, softmax)), sparse categorical cross-entropy, Adam, 2 epochs: the program scales the "
         "labels by 1/255 together with the pixels (y_train = y_train/255), so the class ids become "
         "fractions in [0, 0.035] and every label reads as class 0.",
         "keep the labels as class ids (one-hot with categorical cross-entropy) and train 10 epochs.",
         bench("59325381") + " Data: sklearn digits as 1x8x8 images (pixels / 16), so the flattened "
         "feature map is 32x2x2 = 128.")


# --- 51930566: unscaled iris (the scaled copy is computed, then not used), sigmoid + CE ----------

def _so_51930566():
    iris = skd.load_iris()
    y = kb.one_hot(iris.target, 3)
    xs = kb.standardise(iris.data)
    xb, _, yb, _ = train_test_split(iris.data, y, test_size=0.5, random_state=2)
    xf, _, yf, _ = train_test_split(xs, y, test_size=0.5, random_state=2)

    def net(last):
        return lambda s: kb.seq(s, nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 3), last, kernel="normal")
    cfg = dict(loss="categorical_crossentropy", optimizer="adam", epochs=50, batch_size=5, seed=105, targets=3)
    names = ["setosa", "versicolor", "virginica"]
    pair("so_51930566", SO + "51930566", (4,),
         variant(net(nn.Sigmoid()), cfg, xb, yb, "multiclass", target_names=names),
         variant(net(nn.Softmax(dim=1)), cfg, xf, yf, "multiclass", target_names=names),
         ["activation", "data"], [-1],
         "Iris, one-hot labels, Dense(4, relu)-Dense(3, sigmoid) with init='normal', categorical "
         "cross-entropy, Adam, batch 5, 50 epochs on a 50% split: the program standardises X into X_scaled "
         "but then splits the raw X, and ends in sigmoid units that do not form a distribution.",
         "train on the standardised features and use a softmax output.", bench("51930566"),
         dropped="not killed: the buggy program reaches 0.93 training accuracy on 2 of 3 seeds (unscaled "
                 "iris is no obstacle to Adam, and Keras normalises the sigmoid outputs), p = 0.48")


# --- 50079585: three image classes fitted with one sigmoid unit ----------------------------------

def _so_50079585():
    x, ids = kb.digits(50)
    keep = ids < 3
    x, ids = x[keep] / 16.0, ids[keep]

    def net(head):
        return lambda s: kb.seq(s, nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.5), *head)
    cfg = dict(optimizer="rmsprop", epochs=10, batch_size=16, seed=106)
    pair("so_50079585", SO + "50079585", (1, 8, 8),
         variant(net([nn.Linear(64, 1), nn.Sigmoid()]), dict(cfg, loss="binary_crossentropy"), x, col(ids),
                 "multiclass", target_names=["class"]),
         variant(net([nn.Linear(64, 3), nn.Softmax(dim=1)]), dict(cfg, loss="categorical_crossentropy"), x,
                 col(ids), "multiclass", target_names=["class"]),
         ["labels", "activation", "loss"], [-1],
         "Keras' small-data image CNN (3x Conv+relu+MaxPool, Dense(64, relu), Dropout(0.5)) with a "
         "Dense(1, sigmoid) output and binary cross-entropy, RMSprop, batch 16, 10 epochs, on a folder of "
         "three classes: flow_from_directory labels them 0, 1, 2, and one sigmoid unit cannot output class 2.",
         "Dense(3, softmax) output, categorical cross-entropy (class_mode='categorical').",
         bench("50079585") + " Data: sklearn digits 0, 1 and 2 as 1x8x8 images (pixels / 16) instead of "
         "150x150 photos, with 'same' padding so that three poolings fit.")


# --- 58887284: one sigmoid neuron fitted to negative targets -------------------------------------

def _so_58887284():
    x = np.linspace(-1, 1, 111).reshape(-1, 1)
    f = 1.0 / (np.exp(10.0 * x[:, 0]) + 1.0)

    def net(s):
        return kb.seq(s, nn.Linear(1, 1), nn.Sigmoid())
    cfg = dict(loss="mse", optimizer="adam", learning_rate=0.01, epochs=300, batch_size=32, seed=107)
    pair("so_58887284", SO + "58887284", (1,),
         variant(net, cfg, x, col(-f), "regression"), variant(net, cfg, x, col(f), "regression"),
         ["data", "labels", "activation"], [],
         "One Dense(1, sigmoid) neuron, MSE, Adam(0.01), fitted to f(x) = -1/(exp(10x)+1) on 111 points of "
         "[-1, 1]: every target is negative and a sigmoid only outputs values in (0, 1), so the curve cannot "
         "be learned.",
         "bring the targets into [0, 1]; here, as the answer says, learn f(x) = 1/(exp(10x)+1).",
         "the post's question and accepted answer (read on a public mirror). The post does not show its "
         "epochs: 300 of batch 32 here.")


for _b in (_so_34311586, _so_48221692, _so_50306988, _so_59325381, _so_51930566, _so_50079585, _so_58887284):
    _b()
