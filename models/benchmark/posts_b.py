"""Real bugs, part B: Stack Exchange and framework-forum posts found with the search tool
(see posts.py). Where a post's answer could not be read here, its notes say so and name
the fix the question's own evidence calls for."""
import numpy as np
import torch
import torch.nn as nn

import generate as kb
from posts import col, pair, variant

R = np.random.default_rng


# --- datascience.SE 38604: ten MNIST classes fitted with one sigmoid unit ------------------------

def _ds_38604():
    x, ids = kb.digits(38)
    x = x * (255.0 / 16.0)  # the post feeds MNIST's raw pixels

    def net(head):
        return lambda s: kb.seq(s, nn.Linear(64, 64), nn.ReLU(), *head)
    cfg = dict(optimizer="adam", epochs=10, batch_size=32, seed=201, validation_split=0.33)
    pair("ds_38604", "https://datascience.stackexchange.com/questions/38604", (64,),
         variant(net([nn.Linear(64, 1), nn.Sigmoid()]), dict(cfg, loss="binary_crossentropy"), x, col(ids),
                 "multiclass", target_names=["digit"]),
         variant(net([nn.Linear(64, 10), nn.Softmax(dim=1)]), dict(cfg, loss="sparse_categorical_crossentropy"),
                 x / 255.0, col(ids), "multiclass", target_names=["digit"]),
         ["labels", "activation", "loss"], [-1],
         "MNIST (raw pixels, class ids 0..9) with Dense(64, relu)-Dense(1, sigmoid), binary cross-entropy, "
         "Adam, 10 epochs, 33% validation: the loss is negative (-55) and accuracy stays at 11%, because a "
         "single sigmoid unit and binary cross-entropy treat the ids 2..9 as impossible probabilities.",
         "ten output units with softmax, a categorical cross-entropy on the class ids, pixels scaled to [0, 1].",
         "the question on datascience.stackexchange.com (the answer's text was not retrievable here; the fix "
         "is the one its negative loss calls for). Data: sklearn digits rescaled to 0..255 (8x8 = 64 pixels).")


# --- datascience.SE "Why does accuracy remain the same": threshold task, ReLU output ----------

def _ds_threshold():
    r = R(50000)
    lo, hi = r.integers(0, 50000, 500), r.integers(50000, 100000, 500)
    x = np.concatenate([lo, hi]).astype(float).reshape(-1, 1)
    y = col(np.concatenate([np.zeros(500), np.ones(500)]))
    order = r.permutation(1000)
    x, y = x[order], y[order]

    def net(last):
        return lambda s: kb.seq(s, nn.Linear(1, 3), nn.ReLU(), nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 1), last)
    cfg = dict(loss="binary_crossentropy", optimizer="adam", epochs=10, batch_size=5, seed=202)
    pair("ds_threshold", "https://geeksmental.com/question/why-does-accuracy-remain-the-same", (1,),
         variant(net(nn.ReLU()), cfg, x, y, "binary"), variant(net(nn.Sigmoid()), cfg, kb.standardise(x), y, "binary"),
         ["activation", "data"], [-1],
         "Is a number above 50000? Integers in [0, 100000) as the only, unscaled feature, Dense(3, relu)-"
         "Dense(5, relu)-Dense(1, relu), binary cross-entropy, Adam, batch 5, 10 epochs: the loss sits near 7.9 "
         "and accuracy at 50%, a ReLU output is no probability and the huge input saturates the units.",
         "a sigmoid output and the input standardised.",
         "the question (a datascience.stackexchange.com post, read on a public mirror; its answer's text was "
         "not retrievable, the fix is the standard one for its two visible faults). 1000 rows instead of the "
         "post's 10000, so that 10 epochs of batch 5 are 2000 updates.")


# --- PyTorch forum 41046: regression targets around -2700 --------------------------------------

def _pt_41046():
    r = R(41046)
    x = r.uniform(-1, 1, (500, 4))
    t = x[:, 0] + 0.5 * x[:, 1] ** 2 - x[:, 2] * x[:, 3] + r.normal(0, 0.05, 500)
    y = col(-2700.0 + 30.0 * t)

    def net(s):
        return kb.seq(s, nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 5), nn.Tanh(), nn.Linear(5, 1))
    cfg = dict(loss="mse", optimizer="adam", learning_rate=0.01, epochs=100, batch_size=32, seed=203)
    pair("pt_41046", "https://discuss.pytorch.org/t/scaling-target-variables/41046", (4,),
         variant(net, cfg, x, y, "regression"), variant(net, cfg, x, kb.minmax(y), "regression"),
         ["data"], [],
         "Inputs scaled to [-1, 1], targets all around -2700, two tanh hidden layers of 5 units with xavier "
         "init and a linear output, MSE: the model settles on the targets' mean, because outputs that start "
         "near 0 give huge gradients that push the tanh units into saturation.",
         "scale the targets to [0, 1].",
         "the forum thread's question and answer. The thread names no optimizer: Adam (lr 0.01), batch 32, "
         "100 epochs here; data: 500 synthetic rows, 4 features in [-1, 1].")


# --- deeplearning.ai community 324182: y = 2x - 1 through a ReLU output -----------------------

def _dlai_324182():
    x = col([-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    y = 2.0 * x - 1.0

    def net(last):
        return lambda s: kb.seq(s, nn.Linear(1, 4), nn.ReLU(), nn.Linear(4, 2), nn.ReLU(), nn.Linear(2, 1), *last)
    cfg = dict(loss="mse", optimizer="adam", learning_rate=0.01, epochs=500, batch_size=7, seed=204)
    pair("dlai_324182", "https://community.deeplearning.ai/t/loss-values-do-not-change/324182", (1,),
         variant(net([nn.ReLU()]), cfg, x, y, "regression"), variant(net([]), cfg, x, y, "regression"),
         ["activation"], [-1],
         "The seven points of y = 2x - 1 with Dense(4, relu)-Dense(2, relu)-Dense(1, relu), MSE, Adam, 500 "
         "epochs: in most runs the loss never changes, the ReLU output (and the 2-unit layer before it) dies "
         "and cannot produce the negative targets.",
         "a linear output unit.",
         "the thread's question; its replies' text was not retrievable here. The post uses Adam(0.001); 0.01 "
         "here so that the fixed program converges within the post's 500 epochs on these 7 rows.")


# --- stats.SE 284189: a one-unit linear regression on unscaled advertising data --------------

def _cv_284189():
    r = R(284189)
    x = r.uniform(0.7, 296.4, (200, 1)).round(1)  # TV budget, as in the advertising data
    y = col((7.0 + 0.0475 * x[:, 0] + r.normal(0, 3.2, 200)).clip(1.6, 27.0).round(1))  # sales

    def net(s):
        return kb.seq(s, nn.Linear(1, 1))
    cfg = dict(loss="mse", optimizer="sgd", epochs=30, batch_size=1, seed=205)
    pair("cv_284189", "https://stats.stackexchange.com/questions/284189", (1,),
         variant(net, cfg, x, y, "regression"), variant(net, cfg, kb.standardise(x), kb.standardise(y), "regression"),
         ["data", "learning_rate"], [],
         "Sales against TV advertising budget (one feature up to about 300, targets up to 27) with a single "
         "Dense(1, linear), MSE, SGD (lr 0.01), batch 1, 30 epochs without shuffling: the loss is NaN from the "
         "first epoch; only a learning rate of 1e-7 gave a fit.",
         "standardise x and y (StandardScaler) and keep the default learning rate.",
         "the post's question and accepted answer. Data: 200 synthetic rows with the advertising data's "
         "ranges (TV in [0.7, 296.4], sales = 7 + 0.0475 TV + noise). The post does not shuffle; batches are "
         "shuffled here, as everywhere in the benchmark.")


# --- stats.SE 418955: two stacked linear units, unscaled quadratic targets ----------------------

def _cv_418955():
    x = np.arange(100, dtype=float).reshape(-1, 1)
    y = x ** 2 + 3.0
    xn = (x - x.mean()) / x.std()

    def net(s):
        return kb.seq(s, nn.Linear(1, 1), nn.Linear(1, 1))
    cfg = dict(loss="mse", optimizer="sgd", epochs=300, batch_size=32, seed=206)
    pair("cv_418955", "https://stats.stackexchange.com/questions/418955", (1,),
         variant(net, cfg, xn, y, "regression"), variant(net, cfg, xn, kb.standardise(y), "regression"),
         ["data"], [],
         "y = x^2 + 3 for x = 0..99 (targets up to 9804), x standardised, Dense(1)-Dense(1) without "
         "activations, SGD (lr 0.01), MSE, 300 epochs: the loss diverges.",
         "scale the target (the post's own update, confirmed by its answer: the divergence comes from the "
         "unscaled target variable).",
         "the question (read on a public mirror of stats.stackexchange.com) and its update.")


# --- ai.SE 16557: four hidden layers of 500 sigmoid units ----------------------------------------

def _ai_16557():
    r = R(16557)
    x = (r.random((400, 20)) < 0.5).astype(float)  # binary vectors
    w = r.normal(0, 1, 20)
    t = x @ w + 0.5 * x[:, 0] * x[:, 1] - 0.5 * x[:, 2] * x[:, 3]
    y = col(kb.standardise(t))

    def net(act):
        return lambda s: kb.seq(s, nn.Linear(20, 500), act(), nn.Linear(500, 500), act(), nn.Linear(500, 500), act(),
                                nn.Linear(500, 500), act(), nn.Linear(500, 1))
    cfg = dict(loss="mse", optimizer="sgd", learning_rate=0.01, epochs=10, batch_size=32, seed=207)
    pair("ai_16557", "https://ai.stackexchange.com/questions/16557", (20,),
         variant(net(nn.Sigmoid), cfg, x, y, "regression"), variant(net(nn.ReLU), cfg, x, y, "regression"),
         ["activation"], [0, 1, 2, 3],
         "Binary vectors mapped to real values by four hidden layers of 500 sigmoid units and a linear output, "
         "MSE: the loss stays high even on the training data, because each sigmoid layer scales the "
         "back-propagated error by at most 0.25 and the first layers barely learn (vanishing gradient).",
         "ReLU activations in the hidden layers.",
         "the question's text and the accepted answer (the question's code is not in the stored page). The "
         "post names no optimiser, batch or epochs: plain gradient descent (SGD, lr 0.01), batch 32, 10 epochs; "
         "data: 400 random 20-bit vectors, target a fixed linear map plus two products, standardised.")


# --- stats.SE 565956: an LSTM classifier with one sigmoid unit and categorical cross-entropy ----

class _LastState(nn.Module):
    """LSTM (batch first) -> last hidden state -> Dense(1, sigmoid), as Keras' LSTM + Dense."""

    def __init__(self, features, units):
        super().__init__()
        self.rnn = nn.LSTM(features, units, batch_first=True)
        self.fc = nn.Linear(units, 1)
        self.out = nn.Sigmoid()

    def forward(self, x):
        _, (h, _) = self.rnn(x)
        return self.out(self.fc(h[-1]))


def _cv_565956():
    r = R(565956)
    x = r.integers(0, 10, (1000, 5, 10)).astype(float)  # label-encoded categorical features
    y = col((x[:, :, 0].mean(1) + x[:, -1, 1] > 9.0).astype(float))

    def net(s):
        torch.manual_seed(s)
        m = _LastState(10, 64)
        nn.init.xavier_uniform_(m.fc.weight)
        nn.init.zeros_(m.fc.bias)
        return m
    cfg = dict(optimizer="adam", epochs=10, batch_size=32, seed=208)
    pair("cv_565956", "https://stats.stackexchange.com/questions/565956", (5, 10),
         variant(net, dict(cfg, loss="categorical_crossentropy"), x, y, "binary"),
         variant(net, dict(cfg, loss="binary_crossentropy"), x, y, "binary"),
         ["loss"], [-1],
         "Sequences of 5 steps x 10 label-encoded categorical features, LSTM then Dense(1, sigmoid), Adam, "
         "with categorical cross-entropy: 26% accuracy, the model predicts one class. With one output unit, "
         "Keras' categorical cross-entropy divides the prediction by its own sum (1) and its loss is 0 "
         "whatever the input, so nothing is learned.",
         "binary cross-entropy for the single sigmoid output (or two softmax units with categorical "
         "cross-entropy).",
         "the question and its accepted answer. LSTM(64) instead of the post's LSTM(256) with "
         "hard_sigmoid gates (PyTorch's LSTM has sigmoid gates and its own initialisation), 1000 synthetic "
         "rows instead of 430000, 10 epochs (the post does not say).")


# --- datascience.SE 18667: ReLU instead of sigmoid on raw MNIST pixels --------------------------

def _ds_18667():
    x, ids = kb.digits(18)
    x = x * (255.0 / 16.0)  # the post feeds the raw 0..255 pixels

    def net(s):
        return kb.seq(s, nn.Linear(64, 100), nn.ReLU(), nn.Linear(100, 10), nn.Softmax(dim=1))
    cfg = dict(loss="categorical_crossentropy", optimizer="sgd", epochs=15, batch_size=100, seed=209)
    pair("ds_18667", "https://datascience.stackexchange.com/questions/18667", (64,),
         variant(net, cfg, x, col(ids), "multiclass", target_names=["digit"]),
         variant(net, cfg, x / 255.0, col(ids), "multiclass", target_names=["digit"]),
         ["data"], [],
         "MNIST with Dense(100)-relu-Dense(10, softmax), categorical cross-entropy, SGD (lr 0.01), batch 100, "
         "15 epochs on the raw 0..255 pixels: with sigmoid the example reaches 95%, with relu under 50%, because "
         "unbounded relu activations of unscaled inputs make the SGD steps blow up.",
         "scale the pixels to [0, 1] (X / 255), keeping relu.",
         "the question (read on a public mirror of datascience.stackexchange.com; the answer's text was not "
         "retrievable, the fix is the one its unscaled inputs call for). Data: sklearn digits x 255/16, 64 pixels.")


# --- deeplearning.ai community 436298: 26 sign-language letters, 3 output units ----------------

def _dlai_436298():
    x, ids = kb.digits(43)
    x = x / 16.0  # the assignment rescales by 1/255

    def net(classes):
        return lambda s: kb.seq(s, nn.Conv2d(1, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, classes), nn.Softmax(dim=1))
    cfg = dict(loss="sparse_categorical_crossentropy", optimizer="adam", learning_rate=0.001, epochs=10,
               batch_size=32, seed=210)
    pair("dlai_436298", "https://community.deeplearning.ai/t/can-not-achieve-desired-accuracy/436298", (1, 8, 8),
         variant(net(3), cfg, x, col(ids), "multiclass", target_names=["letter"]),
         variant(net(10), cfg, x, col(ids), "multiclass", target_names=["letter"]),
         ["labels", "architecture"], [-1],
         "A sign-language MNIST CNN (Conv(64)+relu+MaxPool twice, Dense(256, relu)) whose output layer has 3 "
         "softmax units, left from a rock-paper-scissors exercise, trained with sparse categorical cross-entropy "
         "on 26 classes, Adam 0.001: loss nan, accuracy 4%.",
         "as many output units as classes.",
         "the thread's question and the mentor's answer. Data: sklearn digits (10 classes, 1x8x8, pixels / 16) "
         "instead of 26 letters at 28x28, with 'same' padding; 10 epochs (the thread does not say).")


for _b in (_ds_38604, _ds_threshold, _pt_41046, _dlai_324182, _cv_284189, _cv_418955, _ai_16557, _cv_565956,
           _ds_18667, _dlai_436298):
    _b()
