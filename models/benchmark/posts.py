"""Real training bugs from public Stack Overflow / Stack Exchange posts (issue 15, "real bugs
too"), each a buggy + fixed pair rebuilt from its own post: the post's architecture,
optimizer, learning rate, batch size and epochs, with a data substitute of the same shape
and kind (scikit-learn's bundled sets or synthetic data; nothing is downloaded).

A pair is declared once with `pair(...)`; `register(kb)` turns every pair into two cases of
models/benchmark/generate.py (`kb`), and models/benchmark/killcheck.py trains both versions
over 3 seeds to confirm that the buggy one is killed (worse than its fix) and the fix trains.

Split: a pair is held out when models/suite's rule says so for its pair name (crc32 % 3),
chosen before deeplocalize ever ran on it; held-out pairs are never looked at while tuning.
"""
import importlib.util
import os

import numpy as np
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
SO = "https://stackoverflow.com/questions/"
BENCH = "https://github.com/Wardat-ISU/DeepLocalize/tree/master/Benchmark/StackOverflow/"

PAIRS = []


def _suite_heldout():
    path = os.path.join(HERE, "..", "suite", "generate.py")
    spec = importlib.util.spec_from_file_location("suite_generate", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_SUITE = None


def suite():
    """models/suite/generate.py, for its split rule and its killed test (one copy of each)."""
    global _SUITE
    if _SUITE is None:
        _SUITE = _suite_heldout()
    return _SUITE


def variant(net, cfg, x, y, task, ref=None, feature_names=None, target_names=None):
    """One program of a pair. `net(seed)` builds the model with Keras-style initial weights;
    `task` is the suite's task kind used to score it (binary, multiclass, multilabel,
    regression); `ref` the labels it is scored against (default its own targets; a buggy
    program with corrupted labels is scored against the true ones)."""
    return dict(net=net, cfg=cfg, x=x, y=y, task=task, ref=y if ref is None else ref,
                feature_names=feature_names, target_names=target_names)


def pair(name, source, in_shape, buggy, fixed, root_causes, layers, bug, fix, provenance, dropped=None):
    """Declares a post: `bug` and `fix` describe the buggy program and the accepted answer's
    fix, `provenance` what was read (the post, an answer, the DeepLocalize benchmark's
    programs) and what had to be substituted. `layers`: the tool's layer indices of the
    fault (negative from the end), empty for data, label, rate and length faults. `dropped`:
    why a rebuilt pair is not in the benchmark (its buggy program was not killed, or its fix
    does not train in PyTorch); it stays declared so that killcheck.py keeps the evidence."""
    PAIRS.append(dict(name=name, source=source, in_shape=in_shape, buggy=buggy, fixed=fixed,
                      root_causes=root_causes, layers=layers, bug=bug, fix=fix, provenance=provenance,
                      dropped=dropped))


def split_of(name):
    return "heldout" if suite().heldout(name) else "dev"


def register(kb):
    import posts_a  # noqa: F401  (declares its pairs)
    import posts_b  # noqa: F401
    import posts_c  # noqa: F401
    import posts_d  # noqa: F401
    for p in PAIRS:
        if p["dropped"]:
            continue
        split = split_of(p["name"])
        for kind in ("buggy", "fixed"):
            v = p[kind]
            seed = v["cfg"]["seed"]
            notes = (p["bug"] + " Fix: " + p["fix"] + " Source: " + p["provenance"]
                     if kind == "buggy" else "Fix of " + p["name"] + "_buggy: " + p["fix"])
            kb.case(p["name"] + "_" + kind, kind, v["net"](seed), p["in_shape"], v["x"], v["y"], v["cfg"],
                    kind == "buggy", p["root_causes"] if kind == "buggy" else [],
                    p["layers"] if kind == "buggy" else [], notes, p["source"], p["name"],
                    feature_names=v["feature_names"], target_names=v["target_names"], split=split,
                    own_provenance=True)


# ------------------------------------------------------------------------------ helpers

def seq_factory(kb, *mods_fn, kernel="glorot", bias="zeros"):
    """A `net(seed)` that builds nn.Sequential(*mods_fn()) with the given Keras init."""
    def net(seed):
        return kb.seq(seed, *mods_fn(), kernel=kernel, bias=bias)
    return net


def col(v):
    return np.asarray(v, dtype=float).reshape(-1, 1)


def lin(n_in, n_out):
    return nn.Linear(n_in, n_out)
