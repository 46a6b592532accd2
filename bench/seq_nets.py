"""The sequence nets of the benchmark harness (issue 17): one definition for
gen_bench_models.py (which exports them) and pytorch_bench.py (which rebuilds and
trains them with the exported weights).

lstm_cls     nn.LSTM(32 -> 128) over 64 steps, the last step's hidden state -> Linear(128, 10);
             input [batch, 64, 32], batch 32
transformer  Linear(32 -> 128) + a fixed sinusoidal position code -> 2-layer
             nn.TransformerEncoder (d_model 128, 4 heads, feed-forward 512, ReLU, dropout 0,
             batch_first) -> mean over the 64 positions -> Linear(128, 10);
             input [batch, 64, 32], batch 16
transformer_causal  the same under a causal mask (-inf above the diagonal, a buffer:
             nn.Transformer.generate_square_subsequent_mask's), as decoder-only models
             train; batch 16
Both: Adam (lr 1e-3) on cross-entropy of the logits; data seq1k.npy, 1,024 rows of
64 x 32 values in [0, 1) and a class id."""
import math

import torch

SEQ, FEATURES, CLASSES = 64, 32, 10
HIDDEN = 128
D_MODEL, HEADS, FF, LAYERS = 128, 4, 512, 2
# name: (batch size)
SEQ_NETS = {"lstm_cls": 32, "transformer": 16, "transformer_causal": 16}


class LstmClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(FEATURES, HIDDEN, batch_first=True)
        self.out = torch.nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.out(y[:, -1])


class TransformerClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(FEATURES, D_MODEL)
        pe = torch.zeros(SEQ, D_MODEL)
        pos = torch.arange(SEQ, dtype=torch.float32)[:, None]
        div = torch.exp(torch.arange(0, D_MODEL, 2, dtype=torch.float32) * (-math.log(10000.0) / D_MODEL))
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("pe", pe)  # a constant of the model, not trained
        layer = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=0.0, batch_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.out = torch.nn.Linear(D_MODEL, CLASSES)

    def forward(self, x):
        return self.out(self.enc(self.inp(x) + self.pe).mean(dim=1))


class CausalTransformerClassifier(TransformerClassifier):
    def __init__(self):
        super().__init__()
        self.register_buffer("mask", torch.triu(torch.full((SEQ, SEQ), float("-inf")), diagonal=1))

    def forward(self, x):
        return self.out(self.enc(self.inp(x) + self.pe, mask=self.mask).mean(dim=1))


def build(name):
    """The module with gen_bench_models.py's random init (seeded)."""
    torch.manual_seed(0)
    return {"lstm_cls": LstmClassifier, "transformer": TransformerClassifier,
            "transformer_causal": CausalTransformerClassifier}[name]()
