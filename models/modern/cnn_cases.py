"""Diagnosis cases of modern CNNs, for models/modern (case_spec.py's API; generate.py
builds, checks in PyTorch and writes them like its own cases):

  healthy_resnet_bn           torchvision BasicBlocks (BatchNorm in training mode, a
                              strided block with its 1x1 downsample branch), Adam 0.01
  resnet_bn_lr_x1000          the same at Adam lr 10: the run blows up and stays at chance
                              (BatchNorm makes the convolutions scale-free: at lr 1, x100,
                              torch still reaches 84%, so that is not a clear fault here)
  healthy_mobilenet_hardswish depthwise-separable inverted residuals with HardSwish and a
                              linear bottleneck (torchvision's InvertedResidual layout)
  healthy_conv_autoencoder    Conv encoder, nn.Upsample + ConvTranspose decoder, MSE
  autoencoder_sigmoid_unscaled_targets
                              the same with a final Sigmoid, trained on images in 0..255
                              (not scaled to [0, 1]): the Sigmoid cannot reach the targets
  autoencoder_lr_x100         healthy_conv_autoencoder at Adam lr 1: blows up

All take 1x16x16 images (256 rows, the autoencoders 128): small enough that deeplocalize trains each in a
second or two. configure() (generate.py's --scale and --seed-offset) picks another size preset
(SCALES) and adds an offset to every seed.
"""
import numpy as np
import torch
from torch import nn
from torchvision.models.resnet import BasicBlock

from case_spec import Built, Case, Expected

SIDE, ROWS, CLASSES = 16, 256, 3
AE_ROWS = 128  # its CSV holds the image twice (input and target)
WIDTH = 8  # the first stage's channels (the second has 2 x WIDTH); the autoencoder's are WIDTH / 2 and WIDTH
SEED_OFFSET = 0

# Size presets (generate.py --scale); the shapes task has 3 classes at every size.
SCALES = {
    "base": dict(SIDE=16, ROWS=256, AE_ROWS=128, WIDTH=8),
    "wide": dict(SIDE=24, ROWS=512, AE_ROWS=256, WIDTH=16),
    "small": dict(SIDE=12, ROWS=200, AE_ROWS=96, WIDTH=4),
}


def configure(scale="base", seed_offset=0):
    global SEED_OFFSET
    globals().update(SCALES[scale])
    SEED_OFFSET = seed_offset


def shapes_data(seed):
    """1x16x16 images of one of three shapes (class 0: a horizontal bar, 1: a vertical bar,
    2: a square), at a random place, on noise; pixel values rounded to 0.1 (a short CSV)."""
    rng = np.random.default_rng(seed + SEED_OFFSET)
    y = rng.integers(0, CLASSES, ROWS).astype(np.int64)
    x = rng.normal(0, 0.15, size=(ROWS, 1, SIDE, SIDE))
    for r in range(ROWS):
        cy, cx = rng.integers(3, SIDE - 3, size=2)
        if y[r] == 0:
            x[r, 0, cy - 1:cy + 1, cx - 3:cx + 4] += 1.0
        elif y[r] == 1:
            x[r, 0, cy - 3:cy + 4, cx - 1:cx + 1] += 1.0
        else:
            x[r, 0, cy - 2:cy + 2, cx - 2:cx + 2] += 1.0
    return (np.round(x * 10) / 10 + 0.0).astype(np.float32), y  # + 0.0: no "-0" in the CSV


def blob_images(seed, raw=False, rows=None):
    """1x16x16 images of one or two Gaussian blobs, pixels in [0, 1] in steps of 0.05, or
    raw: as 8-bit pixel values 0..255; the target is the image itself, flattened."""
    rows = AE_ROWS if rows is None else rows
    rng = np.random.default_rng(seed + SEED_OFFSET)
    yy, xx = np.mgrid[0:SIDE, 0:SIDE]
    x = np.zeros((rows, 1, SIDE, SIDE))
    for r in range(rows):
        for _ in range(rng.integers(1, 3)):
            cy, cx = rng.uniform(2, SIDE - 3, size=2)
            s = rng.uniform(1.5, 3.0)
            x[r, 0] += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * s * s))
    x = np.clip(x, 0, 1)
    x = np.round(x * 255) if raw else np.round(x * 20) / 20
    return x.astype(np.float32), x.reshape(rows, -1).astype(np.float32)


class ResNetBN(nn.Module):
    """Stem Conv-BN-ReLU (stride 2, 8 channels), a BasicBlock, a strided BasicBlock to 16 channels
    with torchvision's Conv1x1-BN downsample, global average pooling, Linear."""

    def __init__(self):
        super().__init__()
        c1, c2 = WIDTH, 2 * WIDTH
        self.stem = nn.Sequential(nn.Conv2d(1, c1, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(c1), nn.ReLU())
        down = nn.Sequential(nn.Conv2d(c1, c2, 1, stride=2, bias=False), nn.BatchNorm2d(c2))
        self.blocks = nn.Sequential(BasicBlock(c1, c1), BasicBlock(c1, c2, stride=2, downsample=down))
        self.fc = nn.Linear(c2, CLASSES)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


class InvertedResidual(nn.Module):
    """1x1 expand (BN, HardSwish), 3x3 depthwise (BN, HardSwish), 1x1 project (BN, no
    activation: the linear bottleneck), with the residual when the shapes allow."""

    def __init__(self, cin, cout, expand, stride):
        super().__init__()
        mid = cin * expand
        self.body = nn.Sequential(
            nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.Hardswish(),
            nn.Conv2d(mid, mid, 3, stride=stride, padding=1, groups=mid, bias=False), nn.BatchNorm2d(mid),
            nn.Hardswish(),
            nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetHardSwish(nn.Module):
    def __init__(self):
        super().__init__()
        c1, c2 = WIDTH, 2 * WIDTH
        self.stem = nn.Sequential(nn.Conv2d(1, c1, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(c1),
                                  nn.Hardswish())
        self.blocks = nn.Sequential(InvertedResidual(c1, c1, 2, 1), InvertedResidual(c1, c2, 2, 2))
        self.fc = nn.Linear(c2, CLASSES)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


def autoencoder(final=None):
    """16x16 -> Conv stride 2 (8x8) -> Conv stride 2 (4x4) -> nn.Upsample x2 (8x8) ->
    ConvTranspose stride 2 (16x16) -> Conv 3x3 -> flattened image [-> final]."""
    c1, c2 = WIDTH // 2, WIDTH
    layers = [nn.Conv2d(1, c1, 3, stride=2, padding=1), nn.ReLU(),
              nn.Conv2d(c1, c2, 3, stride=2, padding=1), nn.ReLU(),
              nn.Upsample(scale_factor=2, mode="nearest"),
              nn.ConvTranspose2d(c2, c1, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
              nn.Conv2d(c1, 1, 3, padding=1), nn.Flatten()]
    return nn.Sequential(*(layers + ([final] if final is not None else [])))


def seeded(seed, make):
    torch.manual_seed(seed + SEED_OFFSET)
    return make()


def healthy_resnet():
    x, y = shapes_data(20)
    return Built(seeded(21, ResNetBN), x, y, nn.CrossEntropyLoss(), dict(name="adam", lr=0.01), 6, 32,
                 Expected(False, notes="two torchvision BasicBlocks (BatchNorm in training mode, a strided block "
                                       "with its downsample branch) on 16x16 shapes, Adam 0.01: learns cleanly"))


def resnet_lr_x1000():
    x, y = shapes_data(20)
    # As in autoencoder_lr_x100, the blow-up can kill a block's ReLUs (dead_units, root cause
    # learning_rate) before the weights' growth is judged: which symptom comes first depends on
    # the float rounding of a chaotic run (the Conv kernels' summation order).
    return Built(seeded(21, ResNetBN), x, y, nn.CrossEntropyLoss(), dict(name="adam", lr=10.0), 6, 32,
                 Expected(True, ["dead_units", "exploding_values", "exploding_weights", "exploding_loss", "nan_forward",
                                 "inf_forward", "loss_above_chance"], ["learning_rate"], [],
                          "healthy_resnet_bn at Adam lr 10 (x1000): the first steps throw the weights far off, the "
                          "loss jumps by orders of magnitude and the net stays at chance"),
                 learns=False)


def healthy_mobilenet():
    x, y = shapes_data(22)
    return Built(seeded(23, MobileNetHardSwish), x, y, nn.CrossEntropyLoss(), dict(name="adam", lr=0.01), 8, 32,
                 Expected(False, notes="MobileNet-style inverted residuals (depthwise 3x3, HardSwish, linear 1x1 "
                                       "bottleneck, BatchNorm in training mode) on 16x16 shapes, Adam 0.01: learns"))


def healthy_autoencoder():
    x, y = blob_images(24)
    return Built(seeded(25, autoencoder), x, y, nn.MSELoss(), dict(name="adam", lr=0.01), 10, 32,
                 Expected(False, notes="Conv encoder, nn.Upsample + ConvTranspose decoder, MSE against the image "
                                       "itself (pixels in [0, 1]), Adam 0.01: reconstructs"),
                 max_loss=0.01)


def autoencoder_lr_x100():
    x, y = blob_images(24)
    # The blow-up kills ReLUs of the first layer (dead_units, root cause learning_rate).
    return Built(seeded(25, autoencoder), x, y, nn.MSELoss(), dict(name="adam", lr=1.0), 10, 32,
                 Expected(True, ["dead_units", "exploding_values", "exploding_gradients", "exploding_weights",
                                 "exploding_loss", "nan_forward", "inf_forward"], ["learning_rate"], [],
                          "healthy_conv_autoencoder at Adam lr 1 (x100): the first steps throw the weights off (the "
                          "error jumps to ~1e6) and it never comes back below the healthy run's start"),
                 learns=False, max_loss=0.01)


def autoencoder_sigmoid_unscaled():
    x, y = blob_images(24, raw=True)
    return Built(seeded(25, lambda: autoencoder(nn.Sigmoid())), x, y, nn.MSELoss(), dict(name="adam", lr=0.01), 10,
                 32, Expected(True, ["output_range"], ["activation", "data", "labels"], ["Sigmoid"],
                              "healthy_conv_autoencoder with a final Sigmoid, trained on raw 0..255 pixels: the "
                              "targets are outside the Sigmoid's (0, 1), so the error cannot fall below ~1e4"),
                 learns=False, max_loss=0.01 * 255 ** 2)


CASES = [
    Case("healthy_resnet_bn", healthy_resnet),
    Case("resnet_bn_lr_x1000", resnet_lr_x1000),
    Case("healthy_mobilenet_hardswish", healthy_mobilenet),
    Case("healthy_conv_autoencoder", healthy_autoencoder),
    Case("autoencoder_sigmoid_unscaled_targets", autoencoder_sigmoid_unscaled),
    Case("autoencoder_lr_x100", autoencoder_lr_x100),
]
