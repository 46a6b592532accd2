"""The ConvTranspose autoencoder of the benchmark harness (issue 17, case e): one
definition for gen_bench_models.py (which exports it) and pytorch_bench.py (which
rebuilds and trains it with the exported weights).

conv_ae  Conv2d(3 -> 32, 3x3, stride 2) ReLU, Conv2d(32 -> 64, 3x3, stride 2) ReLU   (32 -> 16 -> 8)
         ConvTranspose2d(64 -> 32, 4x4, stride 2) ReLU, Upsample x2 (nearest)          (8 -> 16 -> 32)
         Conv2d(32 -> 3, 3x3) Sigmoid; input [batch, 3, 32, 32], batch 16
Adam (lr 1e-3) on the mean squared error against the input itself; data ae1k.npy, 1,024
rows of 3x32x32 values in [0, 1) followed by the same 3,072 values as targets."""
import torch

NAME, SHAPE, BATCH = "conv_ae", (3, 32, 32), 16
TARGETS = SHAPE[0] * SHAPE[1] * SHAPE[2]


class ConvAutoencoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1), torch.nn.ReLU(),
            torch.nn.Upsample(scale_factor=2, mode="nearest"),
            torch.nn.Conv2d(32, 3, 3, padding=1), torch.nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


def build():
    """The module with gen_bench_models.py's random init (seeded)."""
    torch.manual_seed(0)
    return ConvAutoencoder()
