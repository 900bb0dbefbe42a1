"""A small training run as a stage process makes it (imports `flows` first), touching every
library tasks/core/numerics.py pins: an LSTM, a char CNN's conv1d (oneDNN), linear layers
(MKL), Adam (its sqrt: the exact kernels), ATen pointwise and reductions, numpy's SIMD loops and
OpenBLAS, and the numba kernels of the EntityNLM draws.

Run as `python -m tests.core.numerics_probe OUT`; writes the trained weights and the numpy and
numba results to OUT (tests/core/test_numerics.py compares the bytes across outer settings).
"""

from __future__ import annotations

import sys

import flows  # noqa: F401  (the stage entry point: pins the numeric path)


def main(out: str) -> None:
    import numpy as np
    import torch

    from models.entitynlm.draws import _dot, _set_exp

    torch.manual_seed(0)
    embed = torch.nn.Embedding(300, 32)
    lstm = torch.nn.LSTM(32, 64, batch_first=True, bidirectional=True)
    conv = torch.nn.Conv1d(32, 16, 3, padding=1)
    head = torch.nn.Linear(128 + 16, 300)
    params = [*embed.parameters(), *lstm.parameters(), *conv.parameters(), *head.parameters()]
    opt = torch.optim.Adam(params, lr=1e-2)
    gen = torch.Generator().manual_seed(1)
    for _ in range(20):
        x = torch.randint(0, 300, (8, 24), generator=gen)
        emb = embed(x)
        hidden, _ = lstm(emb)
        chars = conv(emb.transpose(1, 2)).transpose(1, 2)
        hidden = torch.cat([hidden, chars], dim=-1)
        loss = torch.nn.functional.cross_entropy(head(hidden).reshape(-1, 300), x.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    rng = np.random.default_rng(0)
    a = rng.random(4099) * 20 - 10
    m = rng.random((97, 131))
    exp_out, bits = np.empty_like(a), np.empty(a.shape[0], np.int64)
    _set_exp(a, exp_out, bits)
    blobs = [p.detach().numpy().tobytes() for p in params]
    blobs += [np.exp(a).tobytes(), np.log1p(np.abs(a)).tobytes(), np.power(np.abs(a), 0.3).tobytes(),
              (m @ m.T).tobytes(), np.float64(m[0] @ m[1]).tobytes(), exp_out.tobytes(),
              np.float64(_dot(a, a[::-1].copy())).tobytes()]  # fmt: skip
    with open(out, "wb") as fh:
        fh.write(b"".join(blobs))


if __name__ == "__main__":
    main(sys.argv[1])
