"""The JE-IRT model: questions and LLMs embedded in one space (Eqs. 2-3 of the paper).

A frozen text encoder gives question features x_q. A trainable adapter, a 2-layer MLP with hidden
width twice its input, maps them to question embeddings (Eq. 2)

    E_Q = W_2 relu(W_1 x_q + b_1) + b_2,

and every LLM m has a free vector E_M. The probability that m answers q correctly is (Eq. 3)

    P(correct) = sigmoid( <E_Q / |E_Q|, E_M> - |E_Q| ),

so the direction of E_Q says what a question is about and its norm how hard it is. `jeirt_logits`
(torch, for training) and `probability` (numpy, for analysis) are the only places Eq. (3) is written.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

EPS = 1e-8  # keeps E_Q / |E_Q| finite for a zero embedding


class Dropout(nn.Dropout):
    """`nn.Dropout` with its mask drawn by comparing uniform numbers to p: the same distribution,
    three times faster on a CPU, where torch's Bernoulli sampler draws one number at a time
    (2.8 ms against 0.9 ms for one 241 x 768 mask; dropout was a fifth of a JE-IRT training step)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        return x * ((torch.rand_like(x) >= self.p) / (1 - self.p))


class Adapter(nn.Module):
    """Eq. (2): the 2-layer MLP from frozen features (in_dim) to question embeddings (d)."""

    def __init__(self, in_dim: int, d: int, dropout: float = 0.0):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_dim, 2 * in_dim),
            nn.ReLU(),
            Dropout(dropout),
            nn.Linear(2 * in_dim, d),
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:  # (n, in_dim) -> (n, d)
        return self.net(features)


# How E_M starts: entries drawn from N(0, (scale / sqrt(d))^2), so that |E_M| is about `scale`.
# "small": scale 0.1, every model starts near P = sigmoid(-|E_Q|) (jeirt's default recipe).
# "normal": scale sqrt(d), i.e. N(0, 1) entries: torch's nn.Embedding default, which the JE-IRT
# authors' code uses for E_M. A number gives the scale itself.
INITS = {"small": lambda d: 0.1, "normal": lambda d: d**0.5}


def init_scale(init: str | float, d: int) -> float:
    """The typical starting norm of E_M for `init`: a name in INITS, or a positive number (the norm)."""
    if isinstance(init, str) and init in INITS:
        return INITS[init](d)
    if isinstance(init, (int, float)) and not isinstance(init, bool) and 0 < init < float("inf"):
        return float(init)
    raise ValueError(f"init={init!r}; expected one of {list(INITS)} or a positive number (E_M's starting norm).")


class JEIRTNet(nn.Module):
    """Adapter plus one learned vector per LLM; scores a batch of questions against every model."""

    def __init__(
        self,
        in_dim: int,
        n_models: int,
        d: int = 256,
        dropout: float = 0.0,
        feature_noise: float = 0.0,
        init: str | float = "small",
    ):
        super().__init__()
        self.adapter = Adapter(in_dim, d, dropout)  # nn.Linear's own initialisation, as the authors'
        self.feature_noise = feature_noise  # training only: Gaussian noise, relative to |x_q|
        self.model_vectors = nn.Parameter(init_scale(init, d) * torch.randn(n_models, d) / d**0.5)  # (n_models, d)

    def question_embeddings(self, features: torch.Tensor) -> torch.Tensor:
        """E_Q for each question: (n_items, in_dim) -> (n_items, d)."""
        if self.training and self.feature_noise > 0:
            # Not in the paper: a regulariser for the adapter, which otherwise memorises the
            # training questions within a few epochs (see TrainConfig). Noise of norm about
            # feature_noise x |x_q|, spread evenly over the in_dim coordinates.
            scale = self.feature_noise * features.norm(dim=-1, keepdim=True) / features.shape[-1] ** 0.5
            features = features + scale * torch.randn_like(features)
        return self.adapter(features)

    def forward(self, features: torch.Tensor, model_vectors: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (n_items, n_models) of Eq. (3); `model_vectors` defaults to the learned ones."""
        return jeirt_logits(
            self.question_embeddings(features), self.model_vectors if model_vectors is None else model_vectors
        )


def jeirt_logits(question_embeddings: torch.Tensor, model_vectors: torch.Tensor) -> torch.Tensor:
    """Eq. (3) before the sigmoid: <E_Q/|E_Q|, E_M> - |E_Q|, shape (n_items, n_models)."""
    norms = question_embeddings.norm(dim=-1, keepdim=True)  # (n_items, 1)
    directions = question_embeddings / (norms + EPS)  # (n_items, d)
    return directions @ model_vectors.T - norms  # (n_items, n_models)


# ----------------------------------------------------------------------------------------------------
# The same equation in numpy, for analysis of a fitted model (no autograd needed)


def sigmoid(z: np.ndarray) -> np.ndarray:
    """The logistic function, computed without overflow warnings, in the input's float precision."""
    z = np.asarray(z)
    if not np.issubdtype(z.dtype, np.floating):
        z = z.astype(np.float64)
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows of `x` (n, d) scaled to unit length (a zero row stays zero)."""
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), EPS)


def probability(directions: np.ndarray, norms: np.ndarray, model_vectors: np.ndarray) -> np.ndarray:
    """Eq. (3) from each question's unit direction u and norm r: sigmoid(<u, E_M> - r).

    directions (n_items, d), norms (n_items,), model_vectors (n_models, d) -> (n_items, n_models).
    From question embeddings E_Q: `probability(unit_rows(E_Q), np.linalg.norm(E_Q, axis=1), E_M)`.
    """
    directions = np.atleast_2d(np.asarray(directions, dtype=np.float64))
    logits = directions @ np.atleast_2d(model_vectors).T - np.reshape(norms, (-1, 1))
    return sigmoid(logits)
