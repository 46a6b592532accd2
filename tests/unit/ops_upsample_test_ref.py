#!/usr/bin/python3
"""Reference values for tests/unit/ops_upsample_test.cpp (ConvTranspose, Resize),
computed with PyTorch (torch.nn.functional.conv_transpose1d/2d, interpolate), the
producer whose exports these ops must reproduce.

Inputs are the integer ramps the C++ test builds with seq() (exact in float32 on both
sides). Prints the block between the GENERATED markers of the test file:
/usr/bin/python3 tests/unit/ops_upsample_test_ref.py > /tmp/refs.inc
"""
import numpy as np
import torch
import torch.nn.functional as F


def seq(shape, mult, mod, div, shift):
    n = int(np.prod(shape))
    v = np.array([np.float32((k * mult) % mod) / np.float32(div) - np.float32(shift) for k in range(n)],
                 dtype=np.float32)
    return torch.tensor(v.reshape(shape))


def emit(name, t):
    a = t.detach().numpy().astype(np.float32).reshape(-1)
    lit = ["%.9g" % v for v in a]
    lit = [v if any(c in v for c in ".en") else v + ".0" for v in lit]  # a C++ float literal needs a '.' or exponent
    print("const std::vector<float> %s = {%s};" % (name, ", ".join(v + "f" for v in lit)))
    print("// %s: shape %s" % (name, list(t.shape)))


def main():
    torch.set_num_threads(1)
    # ConvTranspose 2-D: group 2, strides (2, 3), pads (1, 0), dilations (1, 2), output_padding (1, 1), bias
    x = seq((2, 4, 3, 2), 7, 23, 8, 1.25)
    w = seq((4, 3, 3, 2), 5, 13, 10, 0.6)
    b = torch.tensor([0.5, -0.25, 0.125, 0.0, 0.75, -0.5])
    emit("kConvTA", F.conv_transpose2d(x, w, b, stride=(2, 3), padding=(1, 0), output_padding=(1, 1), groups=2,
                                       dilation=(1, 2)))
    # ConvTranspose 1-D: stride 2, pads 1, and its gradients for dy = ramp
    x = seq((1, 2, 5), 7, 23, 8, 1.25).requires_grad_()
    w = seq((2, 3, 4), 5, 13, 10, 0.6).requires_grad_()
    y = F.conv_transpose1d(x, w, stride=2, padding=1)
    emit("kConvTB", y)
    dy = seq(tuple(y.shape), 3, 17, 8, 1.0)
    y.backward(dy)
    emit("kConvTBdx", x.grad)
    emit("kConvTBdw", w.grad)
    # Resize: nn.Upsample nearest x2 and nearest to sizes 5x7 (torch's floor rule)
    x = seq((1, 2, 3, 4), 7, 23, 8, 1.25)
    emit("kNearestX2", F.interpolate(x, scale_factor=2, mode="nearest"))
    emit("kNearest57", F.interpolate(x, size=(5, 7), mode="nearest"))
    # Resize linear: bilinear to 5x7, align_corners False and True, and the gradient of the first
    xg = x.clone().requires_grad_()
    y = F.interpolate(xg, size=(5, 7), mode="bilinear", align_corners=False)
    emit("kBilinear57", y)
    y.backward(seq(tuple(y.shape), 3, 17, 8, 1.0))
    emit("kBilinear57dx", xg.grad)
    emit("kBilinear57Corners", F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True))
    # Bicubic to 5x7 (A = -0.75, half_pixel, edge-clamped taps)
    emit("kBicubic57", F.interpolate(x, size=(5, 7), mode="bicubic", align_corners=False))
    # Downsampling 3x4 -> 2x3 (no antialias: torch's default)
    emit("kBilinear23", F.interpolate(x, size=(2, 3), mode="bilinear", align_corners=False))


if __name__ == "__main__":
    main()
