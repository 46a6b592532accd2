#!/usr/bin/env python3
"""Reference values for tests/unit/ops_nn_test.cpp (Conv, pools, BatchNormalization,
reductions, MatMul, Gemm), computed with plain numpy loops that follow the ONNX spec.

Inputs are the same integer ramps the C++ test builds with seq(): exact in float32 on
both sides. Prints the generated block that sits between the GENERATED markers of the
test file: python3 tests/unit/ops_nn_test_ref.py > /tmp/refs.inc
"""
import itertools
import math

import numpy as np


def seq(n, mult, mod, div, shift):
    return np.array([np.float32((k * mult) % mod) / np.float32(div) - np.float32(shift) for k in range(n)],
                    dtype=np.float32)


def same_pads(auto_pad, ins, ks, ss, ds):
    pb, pe = [], []
    for i, k, s, d in zip(ins, ks, ss, ds):
        out = -(-i // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - i)
        small = total // 2
        b = small if auto_pad == 'SAME_UPPER' else total - small
        pb.append(b)
        pe.append(total - b)
    return pb, pe


def out_size(i, k, s, d, pb, pe, ceil):
    ext = (k - 1) * d + 1
    span = i + pb + pe - ext
    if ceil:
        o = -(-span // s) + 1
        if (o - 1) * s >= i + pb:
            o -= 1
        return o
    return span // s + 1


def conv_ref(x, w, b, strides, pb, pe, dil, group):
    n, c = x.shape[:2]
    m = w.shape[0]
    ks = w.shape[2:]
    sp = x.shape[2:]
    outs = [out_size(i, k, s, d, p0, p1, False) for i, k, s, d, p0, p1 in zip(sp, ks, strides, dil, pb, pe)]
    y = np.zeros((n, m, *outs), dtype=np.float64)
    cg, mg = c // group, m // group
    for nn, mm in itertools.product(range(n), range(m)):
        g = mm // mg
        for o in itertools.product(*[range(v) for v in outs]):
            acc = 0.0 if b is None else float(b[mm])
            for cc in range(cg):
                for kk in itertools.product(*[range(v) for v in ks]):
                    idx = [o[a] * strides[a] - pb[a] + kk[a] * dil[a] for a in range(len(sp))]
                    if all(0 <= idx[a] < sp[a] for a in range(len(sp))):
                        acc += float(x[(nn, g * cg + cc, *idx)]) * float(w[(mm, cc, *kk)])
            y[(nn, mm, *o)] = acc
    return y


def pool_ref(x, ks, strides, pb, pe, dil, ceil, kind, count_include_pad=0):
    n, c = x.shape[:2]
    sp = x.shape[2:]
    outs = [out_size(i, k, s, d, p0, p1, ceil) for i, k, s, d, p0, p1 in zip(sp, ks, strides, dil, pb, pe)]
    y = np.zeros((n, c, *outs))
    ind = np.zeros((n, c, *outs), dtype=np.int64)
    for nn, cc in itertools.product(range(n), range(c)):
        for o in itertools.product(*[range(v) for v in outs]):
            vals, flat, padded = [], [], 1
            for a in range(len(sp)):
                st = o[a] * strides[a] - pb[a]
                padded *= min(st + ks[a], sp[a] + pe[a]) - st
            for kk in itertools.product(*[range(v) for v in ks]):
                idx = [o[a] * strides[a] - pb[a] + kk[a] * dil[a] for a in range(len(sp))]
                if all(0 <= idx[a] < sp[a] for a in range(len(sp))):
                    vals.append(float(x[(nn, cc, *idx)]))
                    flat.append(int(np.ravel_multi_index((nn, cc, *idx), x.shape)))
            if kind == 'max':
                j = int(np.argmax(vals))
                y[(nn, cc, *o)] = vals[j]
                ind[(nn, cc, *o)] = flat[j]
            else:
                y[(nn, cc, *o)] = sum(vals) / (padded if count_include_pad else len(vals))
    return y, ind


def bn_ref(x, s, b, mean, var, eps):
    sh = (1, -1) + (1,) * (x.ndim - 2)
    return (x - mean.reshape(sh)) / np.sqrt(var.reshape(sh) + eps) * s.reshape(sh) + b.reshape(sh)


def flit(v):
    t = f'{float(v):.8g}'
    return (t if ('.' in t or 'e' in t) else t + '.0') + 'f'


def emit(name, arr, ints=False):
    vals = np.asarray(arr).ravel()
    if ints:
        body = ', '.join(str(int(v)) for v in vals)
        print(f'const std::vector<int64_t> {name} = {{{body}}};')
    else:
        body = ', '.join(flit(v) for v in vals)
        print(f'const std::vector<float> {name} = {{{body}}};')
    print(f'// {name}: shape {list(np.asarray(arr).shape)}')


def main():
    # Conv A: 2-D, bias, pads 1, strides 2.
    x = seq(100, 7, 23, 8, 1.25).reshape(2, 2, 5, 5)
    w = seq(54, 5, 13, 10, 0.6).reshape(3, 2, 3, 3)
    b = np.array([0.5, -0.25, 0.125], dtype=np.float32)
    emit('kConvA', conv_ref(x, w, b, [2, 2], [1, 1], [1, 1], [1, 1], 1))
    # Conv B: group 2, dilations [2, 1], strides [2, 1], SAME_LOWER.
    x = seq(80, 7, 23, 8, 1.25).reshape(1, 4, 5, 4)
    w = seq(32, 5, 13, 10, 0.6).reshape(4, 2, 2, 2)
    pb, pe = same_pads('SAME_LOWER', [5, 4], [2, 2], [2, 1], [2, 1])
    emit('kConvB', conv_ref(x, w, None, [2, 1], pb, pe, [2, 1], 2))
    # Conv C: 1-D, pads [2, 1], dilation 2, stride 2.
    x = seq(14, 7, 23, 8, 1.25).reshape(1, 2, 7)
    w = seq(18, 5, 13, 10, 0.6).reshape(3, 2, 3)
    emit('kConvC', conv_ref(x, w, None, [2], [2], [1], [2], 1))
    # Conv D: 3-D, pads [0, 1, 1, 1, 0, 1].
    x = seq(48, 7, 23, 8, 1.25).reshape(1, 1, 3, 4, 4)
    w = seq(16, 5, 13, 10, 0.6).reshape(2, 1, 2, 2, 2)
    emit('kConvD', conv_ref(x, w, None, [1, 1, 1], [0, 1, 1], [1, 0, 1], [1, 1, 1], 1))
    # MaxPool A: 3x3, strides 2, pads [1, 0, 1, 1], dilations [1, 2], ceil_mode (distinct values).
    x = seq(84, 17, 89, 10, 4).reshape(1, 2, 6, 7)
    y, ind = pool_ref(x, [3, 3], [2, 2], [1, 0], [1, 1], [1, 2], True, 'max')
    emit('kMaxPoolA', y)
    emit('kMaxPoolAIndices', ind, ints=True)
    # AveragePool A/B: 3x3, strides 2, pads [1, 1, 1, 0], ceil_mode, count_include_pad 1 / 0.
    x = seq(84, 7, 23, 8, 1.25).reshape(1, 2, 6, 7)
    emit('kAvgPoolA', pool_ref(x, [3, 3], [2, 2], [1, 1], [1, 0], [1, 1], True, 'avg', 1)[0])
    emit('kAvgPoolB', pool_ref(x, [3, 3], [2, 2], [1, 1], [1, 0], [1, 1], True, 'avg', 0)[0])
    # AveragePool C: 2x3, strides 2, SAME_UPPER.
    pb, pe = same_pads('SAME_UPPER', [6, 7], [2, 3], [2, 2], [1, 1])
    emit('kAvgPoolC', pool_ref(x, [2, 3], [2, 2], pb, pe, [1, 1], False, 'avg', 0)[0])
    # BatchNormalization: inference (eps 1e-3) and training_mode (momentum 0.8).
    x = seq(24, 7, 23, 8, 1.25).reshape(2, 3, 2, 2)
    s = np.array([1.5, -0.5, 0.75], dtype=np.float32)
    b = np.array([0.1, 0.2, -0.3], dtype=np.float32)
    mean = np.array([0.25, -0.5, 0.125], dtype=np.float32)
    var = np.array([0.5, 2.0, 1.25], dtype=np.float32)
    emit('kBnInference', bn_ref(x, s, b, mean, var, 1e-3))
    axes = (0, 2, 3)
    cm, cv = x.mean(axis=axes), x.var(axis=axes)
    emit('kBnTraining', bn_ref(x, s, b, cm, cv, 1e-3))
    emit('kBnRunningMean', mean * 0.8 + cm * 0.2)
    emit('kBnRunningVar', var * 0.8 + cv * 0.2)
    # The model state a Keras-style training step leaves (4-D X: Keras' fused kernel takes
    # the Bessel-corrected batch variance, n / (n - 1) with n = 8 values per channel).
    emit('kBnStateVar', var * 0.8 + cv * (8.0 / 7.0) * 0.2)
    # Reductions, MatMul, Gemm.
    x = seq(24, 7, 23, 8, 1.25).reshape(2, 3, 4)
    emit('kReduceSum02', x.sum(axis=(0, 2), keepdims=True))
    emit('kReduceMeanLast', x.mean(axis=-1))
    a = seq(12, 7, 23, 8, 1.25).reshape(2, 1, 2, 3)
    bm = seq(18, 5, 13, 10, 0.6).reshape(3, 3, 2)
    emit('kMatMul', np.matmul(a.astype(np.float64), bm))
    a = seq(12, 7, 23, 8, 1.25).reshape(4, 3)
    bm = seq(8, 5, 13, 10, 0.6).reshape(2, 4)
    c = np.array([[0.5], [-1.0], [0.25]], dtype=np.float32)
    emit('kGemm', 0.5 * a.T.astype(np.float64) @ bm.T + 2.0 * c)


if __name__ == '__main__':
    main()
