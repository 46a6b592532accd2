#!/usr/bin/python3
"""Masked-attention cases of models/modern, the masks as models export them when the
mask is not a constant added to the scores (attention_cases.transformer_causal_healthy
has that one):

- transformer_padded_healthy: nn.TransformerEncoder with src_key_padding_mask computed
  from the input (padding rows are all zero). torch exports the boolean mask turned
  into a float one, Where(mask, -inf, 0), added to the scores (baddbmm: Mul, Add).
- causal_masked_fill_healthy: a GPT-style block (minGPT, nanoGPT) that masks its scores
  with scores.masked_fill(tril[:T, :T] == 0, -inf): Where(mask, -inf, scores).

The -inf reaches the attention softmaxes only: probability 0, not an overflow; both
models learn in PyTorch and must come out ok. attention_cases.py lists these cases with
its own (same builder, checker and writer); run that file to (re)write them.
"""
import numpy as np


def _ac():
    import attention_cases

    return attention_cases


def padded_tokens(rows=None, seed=2, keep=None):
    """token_data's sequences with a random length in [keep, SEQ] (keep: 9 of 16, in
    proportion at another SEQ): the positions after it are padding (all-zero rows). The
    class is the token at position keep - 1, which every sequence has, read at position 0:
    the attention must reach it past the padding."""
    ac = _ac()
    rows = ac.ROWS if rows is None else rows
    keep = ac.SEQ * 9 // 16 if keep is None else keep
    rng = np.random.RandomState(seed + ac.SEED_OFFSET)
    tokens = rng.randint(0, ac.VOCAB, size=(rows, ac.SEQ))
    x = np.eye(ac.VOCAB, dtype=np.float32)[tokens]
    lengths = rng.randint(keep, ac.SEQ + 1, size=rows)
    for r in range(rows):
        x[r, lengths[r]:] = 0
    return x, tokens[:, keep - 1].astype(np.int64)


def padded_encoder():
    ac = _ac()
    Encoder = ac.encoder_class()

    class PaddedEncoder(Encoder):
        def forward(self, x):
            pad = x.sum(-1) == 0  # [batch, SEQ], True where the sequence has ended
            return self.out(self.enc(self.inp(x) + self.pe, src_key_padding_mask=pad)[:, 0])

    ac._torch().manual_seed(ac.SEED_OFFSET)
    return PaddedEncoder()


def gpt_model():
    """Linear token projection + fixed position code -> 2 pre-LayerNorm blocks of causal
    self-attention (2 heads, masked_fill) and a GELU MLP -> LayerNorm -> Linear on the last
    position."""
    ac = _ac()
    torch = ac._torch()
    nn = torch.nn
    Encoder = ac.encoder_class()

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj = nn.Linear(ac.DIM, 3 * ac.DIM), nn.Linear(ac.DIM, ac.DIM)
            self.register_buffer("tril", torch.tril(torch.ones(ac.SEQ, ac.SEQ)))

        def forward(self, x):
            b, t, c = x.shape
            h = ac.HEADS
            q, k, v = self.qkv(x).split(c, dim=2)
            q, k, v = (z.view(b, t, h, c // h).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / float(np.sqrt(c // h))
            att = att.masked_fill(self.tril[:t, :t] == 0, float("-inf")).softmax(-1)
            return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.attn, self.ln2 = nn.LayerNorm(ac.DIM), CausalSelfAttention(), nn.LayerNorm(ac.DIM)
            self.mlp = nn.Sequential(nn.Linear(ac.DIM, ac.FF), nn.GELU(), nn.Linear(ac.FF, ac.DIM))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            base = Encoder()  # its token projection and position code
            self.inp = base.inp
            self.register_buffer("pe", base.pe)
            self.blocks = nn.Sequential(Block(), Block())
            self.ln, self.out = nn.LayerNorm(ac.DIM), nn.Linear(ac.DIM, ac.VOCAB)

        def forward(self, x):
            return self.out(self.ln(self.blocks(self.inp(x) + self.pe))[:, -1])

    torch.manual_seed(ac.SEED_OFFSET)
    return Gpt()


def transformer_padded_healthy():
    ac = _ac()
    return (padded_encoder(), padded_tokens(), ac._torch().nn.CrossEntropyLoss(), {"name": "adam", "lr": 3e-3}, 15, 32,
            {"verdict": "ok", "symptoms": [], "root_causes": [], "nodes": []})


def causal_masked_fill_healthy():
    """The class is the token at position 0, read at the last position."""
    ac = _ac()
    x, _ = ac.token_data()
    y = np.argmax(x[:, 0], axis=1).astype(np.int64)
    return (gpt_model(), (x, y), ac._torch().nn.CrossEntropyLoss(), {"name": "adam", "lr": 3e-3}, 15, 32,
            {"verdict": "ok", "symptoms": [], "root_causes": [], "nodes": []})


def transformer_causal_zero_qk():
    """transformer_causal_healthy's encoder with zero Q and K projections: each row
    uniform over the positions the mask allows. The class is the token at position 14,
    read at the last (15): the encoder with its random Q and K learns it (100%), the
    uniform one cannot tell position 14 from the others (69% after 15 epochs)."""
    ac = _ac()
    x, _ = ac.token_data()
    y = np.argmax(x[:, ac.SEQ - 2], axis=1).astype(np.int64)  # position 14 of 16
    return (ac.init_qk(ac.causal_encoder(), "zero_qk"), (x, y), ac._torch().nn.CrossEntropyLoss(),
            {"name": "adam", "lr": 3e-3}, 15, 32,
            {"verdict": "fault", "symptoms": ["uniform_attention"], "root_causes": ["initialization"],
             "nodes": ac.softmax_nodes(0)})


def cases(Case):
    return [
        Case("transformer_padded_healthy", transformer_padded_healthy,
             "transformer_healthy's encoder over sequences of 9 to 16 tokens padded with zero rows, "
             "src_key_padding_mask computed from the input (exported as Where(mask, -inf, 0) added to the scores); "
             "the class is the token at position 8, read at position 0."),
        Case("causal_masked_fill_healthy", causal_masked_fill_healthy,
             "a 2-block GPT-style model (pre-LayerNorm, 2 heads, GELU MLP) masking its scores with "
             "masked_fill(tril == 0, -inf) (exported as Where(mask, -inf, scores)); the class is the token at "
             "position 0, read at the last position."),
        Case("transformer_causal_zero_qk", transformer_causal_zero_qk,
             "transformer_causal_healthy with zero Q and K projections: every row of the attention is uniform over "
             "the positions the causal mask allows (row i over i + 1), so it only averages; its first row, "
             "one allowed position, has entropy 0 whatever the scores. The class is the token at position 14, "
             "read at the last position."),
    ]
