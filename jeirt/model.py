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
        return self.adapter(noisy(features, self.feature_noise) if self.training else features)

    @torch.no_grad()
    def scale_embeddings(self, factor: float) -> None:
        """E_Q and E_M times `factor` (the adapter's last layer and the model vectors): Eq. (3)'s logit
        times `factor`, every direction unchanged. Temperature scaling folds 1 / T in this way."""
        _scale_last_layer(self.adapter, factor)
        self.model_vectors.mul_(factor)

    def forward(self, features: torch.Tensor, model_vectors: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (n_items, n_models) of Eq. (3); `model_vectors` defaults to the learned ones."""
        return jeirt_logits(
            self.question_embeddings(features), self.model_vectors if model_vectors is None else model_vectors
        )


def noisy(features: torch.Tensor, feature_noise: float) -> torch.Tensor:
    """Not in the paper: a training-time regulariser for the adapter, which otherwise memorises the
    training questions within a few epochs (see TrainConfig). Gaussian noise of norm about
    feature_noise x |x_q|, spread evenly over the in_dim coordinates."""
    if feature_noise <= 0:
        return features
    scale = feature_noise * features.norm(dim=-1, keepdim=True) / features.shape[-1] ** 0.5
    return features + scale * torch.randn_like(features)


def _scale_last_layer(adapter: Adapter, factor: float) -> None:
    """The adapter's output (E_Q) times `factor`: its last layer's weight and bias scaled in place."""
    last = adapter.net[-1]  # E_Q = W_2 h + b_2
    assert isinstance(last, nn.Linear)
    last.weight.mul_(factor)
    last.bias.mul_(factor)


class NestedJEIRTNet(nn.Module):
    """This book's variant of Eq. (3), not the paper's: JE-IRT as the departure from a fixed logit per
    LLM and benchmark (`jeirt.nested` fits it),

        logit(m, q) = O[m, b(q)] + <E_Q/|E_Q|, E_M> - |E_Q|,

    O[m, b] the logit of LLM m's training accuracy on q's benchmark b. A question's input row is its
    frozen features (in_dim) followed by a one-hot of its benchmark (n_groups columns, the last for a
    benchmark without training questions, whose O is the LLM's overall logit). With E_Q = 0 the
    prediction is that accuracy itself: the plain baseline is nested in the model. The adapters read
    the one-hot too (times `group_scale`, the features' typical norm), as `JEIRT(benchmark_feature=True)`'s
    does: a question's departure from its benchmark's accuracy may depend on the benchmark.

    E_Q may come from several adapters (`parts`, each d / parts wide, trained on different folds of
    the training questions). With A_k the k-th adapter's output and E_M^k the k-th part's vector,

        E_Q = mean_k |A_k| [A_1/|A_1|, ..., A_K/|A_K|] / sqrt(K),    E_M = [E_M^1, ..., E_M^K] / sqrt(K),

    E_Q / |E_Q| is a unit vector and Eq. (3) gives the mean of the K parts' own logits
    <A_k/|A_k|, E_M^k> - |A_k| exactly: the K fits are one JE-IRT of dimension d (`from_parts`).
    One part is JEIRTNet's E_Q, plus the offsets.
    """

    offsets: torch.Tensor  # (n_models, n_groups) buffer, set by the fit (not trained)
    group_scale: torch.Tensor  # () buffer: the one-hot's size in the adapters' input, set by the fit

    def __init__(
        self,
        in_dim: int,
        n_models: int,
        n_groups: int,
        d: int = 256,
        parts: int = 1,
        dropout: float = 0.0,
        feature_noise: float = 0.0,
        init: str | float = "small",
    ):
        super().__init__()
        if not (isinstance(parts, int) and 1 <= parts <= d and d % parts == 0):
            raise ValueError(f"parts={parts!r} with d={d}; expected a whole divisor of d.")
        width = d // parts  # each adapter's output
        self.in_dim, self.dropout, self.feature_noise = in_dim, dropout, feature_noise
        self.adapters = nn.ModuleList(Adapter(in_dim + n_groups, width, dropout) for _ in range(parts))
        self.model_vectors = nn.Parameter(init_scale(init, width) * torch.randn(n_models, d) / width**0.5)
        self.register_buffer("offsets", torch.zeros(n_models, n_groups))
        self.register_buffer("group_scale", torch.ones(()))

    def question_embeddings(self, features: torch.Tensor) -> torch.Tensor:
        """E_Q (n_items, d) from input rows (n_items, in_dim + n_groups): features, then the one-hot."""
        x = torch.cat([features[:, : self.in_dim], self.group_scale * features[:, self.in_dim :]], dim=1)
        outputs = [adapter(noisy(x, self.feature_noise) if self.training else x) for adapter in self.adapters]
        if len(outputs) == 1:
            return outputs[0]
        norms = torch.stack([out.norm(dim=-1) for out in outputs]).mean(dim=0, keepdim=True).T  # (n_items, 1)
        directions = torch.cat([out / (out.norm(dim=-1, keepdim=True) + EPS) for out in outputs], dim=-1)
        return norms * directions / len(outputs) ** 0.5

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Logits (n_items, n_models): each LLM's offset on the question's benchmark plus Eq. (3)."""
        groups = features[:, self.in_dim :]  # (n_items, n_groups) one-hot
        return groups @ self.offsets.T + jeirt_logits(self.question_embeddings(features), self.model_vectors)

    @torch.no_grad()
    def scale_embeddings(self, factor: float) -> None:
        """E_Q and E_M times `factor`: Eq. (3)'s part of the logit times `factor`, the offsets unchanged."""
        for adapter in self.adapters:
            assert isinstance(adapter, Adapter)
            _scale_last_layer(adapter, factor)
        self.model_vectors.mul_(factor)

    @classmethod
    @torch.no_grad()
    def from_parts(cls, parts: list[NestedJEIRTNet]) -> NestedJEIRTNet:
        """One net whose Eq. (3) logit is the mean of the one-adapter nets `parts`' (their offsets, which
        they share, kept): their adapters side by side, their E_M joined and divided by sqrt(K)."""
        first, k = parts[0], len(parts)
        n_models, width = first.model_vectors.shape
        net = cls(first.in_dim, n_models, first.offsets.shape[1], width * k, k, first.dropout, first.feature_noise)
        for adapter, part in zip(net.adapters, parts):
            adapter.load_state_dict(part.adapters[0].state_dict())
        net.model_vectors.copy_(torch.cat([part.model_vectors for part in parts], dim=1) / k**0.5)
        net.offsets.copy_(first.offsets)
        net.group_scale.copy_(first.group_scale)
        return net


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
