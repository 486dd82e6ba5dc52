"""Neural baselines: EmbedLLM's matrix factorisation, IRT-Net and a content-aware MIRT. Each is an
nn.Module mapping (B, in_dim) frozen-encoder features to (B, n_models) logits, trained by
`jeirt.train.train` like JE-IRT itself."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from jeirt.baselines.base import Baseline, _check_split, _model_rows
from jeirt.data.dataset import Dataset
from jeirt.model import Dropout
from jeirt.splits import Split
from jeirt.train import TrainConfig, TrainHistory, train, training_recipe


# Neural baselines: nn.Modules mapping (B, in_dim) question features to (B, n_models) logits
class EmbedLLMNet(nn.Module):
    """EmbedLLM's TextMF: logit(m, q) = w . (e_m * P x_q) + c, Gaussian noise on x_q while training."""

    def __init__(self, in_dim: int, n_models: int, dim: int = 232, noise: float = 0.05):
        super().__init__()
        self.noise = noise  # per-coordinate std of the training noise on x_q (EmbedLLM's alpha)
        self.model_embeddings = nn.Embedding(n_models, dim)  # e_m, (n_models, dim), N(0, 1) as theirs
        self.project = nn.Linear(in_dim, dim)  # P
        self.classifier = nn.Linear(dim, 1)  # w, c

    def forward(self, features: torch.Tensor) -> torch.Tensor:  # (B, in_dim) -> (B, n_models)
        if self.training and self.noise > 0:
            features = features + self.noise * torch.randn_like(features)
        q = self.project(features)  # (B, dim)
        # w . (e_m * q) = q . (e_m * w): one matrix product instead of a (B, n_models, dim) tensor
        return q @ (self.model_embeddings.weight * self.classifier.weight).T + self.classifier.bias


class IRTNetModule(nn.Module):
    """IRT-Net: shared + top-k routed MLP experts on x_q -> (a_q, b_q); logit = a_q . theta_m - b_q.

    The experts' weights are stored batched, (E, ...); each question runs through its top-k experts
    only, by a loop over the experts (unbound once, so the backward pass writes each weight's gradient
    in one piece): at the defaults a training step is 1.4-1.7x faster than computing all E experts and
    weighting the unselected ones zero (`benchmarks/irt_net_speed.py`). Routing balance follows
    IRT-Net (after DeepSeek-V3's loss-free balancing): a per-expert bias, used only to choose the
    top-k, is nudged after each training batch towards under-used experts.
    """

    gate_bias: torch.Tensor  # (n_experts,) buffer, registered in __init__

    def __init__(
        self,
        in_dim: int,
        n_models: int,
        d: int = 64,
        n_experts: int = 8,
        top_k: int = 2,
        hidden: int = 256,
        expert_dim: int = 128,
        dropout: float = 0.5,
        noise: float = 0.05,
        balance_speed: float = 0.01,
    ):
        super().__init__()
        if not 1 <= top_k <= n_experts:
            raise ValueError(f"top_k={top_k}; expected between 1 and n_experts={n_experts}.")
        self.top_k, self.noise, self.balance_speed = top_k, noise, balance_speed
        self.shared = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.ReLU(), Dropout(dropout), nn.Linear(hidden, expert_dim)
        )
        self.w1 = nn.Parameter(torch.randn(n_experts, in_dim, hidden) / math.sqrt(in_dim))  # (E, in, h)
        self.b1 = nn.Parameter(torch.zeros(n_experts, 1, hidden))
        self.w2 = nn.Parameter(torch.randn(n_experts, hidden, expert_dim) / math.sqrt(hidden))  # (E, h, out)
        self.b2 = nn.Parameter(torch.zeros(n_experts, 1, expert_dim))
        self.dropout = Dropout(dropout)
        self.gate = nn.Linear(in_dim, n_experts)
        self.register_buffer("gate_bias", torch.zeros(n_experts))  # balancing only, not trained
        self.discrimination = nn.Linear(expert_dim, d)  # a_q
        self.difficulty = nn.Linear(expert_dim, 1)  # b_q
        self.ability = nn.Parameter(torch.randn(n_models, d) / math.sqrt(d))  # theta_m, (n_models, d)

    def item_parameters(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """a_q (B, d) and b_q (B, 1) from question features (B, in_dim)."""
        if self.training and self.noise > 0:
            features = features + self.noise * torch.randn_like(features)
        logits = self.gate(features)  # (B, E)
        chosen = torch.topk(logits + self.gate_bias, self.top_k, dim=1).indices  # (B, top_k)
        weights = torch.zeros_like(logits).scatter(1, chosen, 1.0)  # (B, E) 0/1
        gates = torch.softmax(logits.masked_fill(weights == 0, float("-inf")), dim=1)  # renormalised
        if self.training and self.balance_speed > 0:
            with torch.no_grad():  # raise the bias of experts chosen less than average, lower the rest
                load = weights.mean(dim=0)
                self.gate_bias += self.balance_speed * torch.sign(load.mean() - load)
        mixed = self.shared(features)  # (B, out)
        w1, b1, w2, b2 = (p.unbind(0) for p in (self.w1, self.b1, self.w2, self.b2))  # per-expert views
        for e, routed in enumerate(weights.T.bool()):  # each expert on the questions routed to it
            rows = routed.nonzero().squeeze(1)
            if len(rows):
                h = self.dropout(F.relu(features[rows] @ w1[e] + b1[e]))  # (rows, h)
                mixed = mixed.index_add(0, rows, gates[rows, e, None] * (h @ w2[e] + b2[e]))
        return self.discrimination(mixed), self.difficulty(mixed)

    def forward(self, features: torch.Tensor) -> torch.Tensor:  # (B, in_dim) -> (B, n_models)
        a, b = self.item_parameters(features)
        return a @ self.ability.T - b


class MIRTNet(nn.Module):
    """Multidimensional IRT with item parameters from x_q: a_q = softplus(.) >= 0, b_q; logit = a.theta - b."""

    def __init__(
        self, in_dim: int, n_models: int, d: int = 16, hidden: int = 256, dropout: float = 0.0, noise: float = 0.05
    ):
        super().__init__()
        self.noise = noise  # per-coordinate std of the training noise on x_q
        self.trunk = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), Dropout(dropout))
        self.discrimination = nn.Linear(hidden, d)  # a_q before softplus
        self.difficulty = nn.Linear(hidden, 1)  # b_q
        self.ability = nn.Parameter(torch.randn(n_models, d) / math.sqrt(d))  # theta_m, (n_models, d)

    def item_parameters(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """a_q (B, d), non-negative, and b_q (B, 1)."""
        if self.training and self.noise > 0:
            features = features + self.noise * torch.randn_like(features)
        h = self.trunk(features)
        return F.softplus(self.discrimination(h)), self.difficulty(h)

    def forward(self, features: torch.Tensor) -> torch.Tensor:  # (B, in_dim) -> (B, n_models)
        a, b = self.item_parameters(features)
        return a @ self.ability.T - b


@dataclass(eq=False)
class _NeuralBaseline(Baseline):
    """Shared fit/predict for the neural baselines; subclasses add their fields and `_build`."""

    TRAINING = TrainConfig()  # the class's default recipe (see each subclass for what was tried)

    encoder: str = "all-MiniLM-L6-v2"  # frozen text encoder: key of Dataset.embeddings
    training: TrainConfig | dict | None = None  # recipe: a TrainConfig, or changes to TRAINING
    random_state: int = 0  # seeds initialisation and batch order
    device: str | None = None  # None: CUDA, then MPS, then CPU
    progress: bool = False  # a tqdm bar over epochs

    def _build(self, in_dim: int, n_models: int) -> nn.Module:
        raise NotImplementedError

    def fit(self, ds: Dataset, split: Split) -> _NeuralBaseline:
        _check_split(ds, split)
        if split.held_out:
            raise ValueError(
                f"split {split.name!r} holds models out of training ({list(split.held_out)[:3]}); "
                f"{type(self).__name__} cannot onboard them. Use a split without held-out models."
            )
        features = ds.features(self.encoder, progress=self.progress)
        torch.manual_seed(self.random_state)
        self.net_ = self._build(features.shape[1], ds.n_models)
        self.training_ = training_recipe(self.TRAINING, self.training)
        self.history_: TrainHistory = train(
            self.net_,
            features,
            ds.labels,
            split.train,
            split.val,
            self.training_,
            seed=self.random_state,
            device=self.device,
            progress=self.progress,
        )
        self.net_.cpu().eval()
        self.feature_dim_ = features.shape[1]
        self.models_ = list(ds.models)
        return self

    def _features(self, ds: Dataset) -> torch.Tensor:
        """The frozen-encoder features of `ds`'s questions (n_items, dim), checked against training."""
        features = ds.features(self.encoder, progress=self.progress)
        if features.shape[1] != self.feature_dim_:
            raise ValueError(
                f"question features have {features.shape[1]} dimensions; this model was "
                f"trained on {self.feature_dim_}-d features from {self.encoder}."
            )
        return torch.from_numpy(np.asarray(features, dtype=np.float32))

    @torch.no_grad()
    def predict_proba(self, ds: Dataset) -> np.ndarray:
        """(n_models, n_items) probabilities, aligned with `ds.labels`."""
        self._check_fitted()
        rows = torch.from_numpy(_model_rows(self.models_, ds.models))
        x = self._features(ds)
        logits = torch.cat([self.net_(x[s : s + 4096]) for s in range(0, len(x), 4096)])  # (n_items, n_models)
        return torch.sigmoid(logits[:, rows]).T.numpy()


@dataclass(eq=False)
class EmbedLLMMF(_NeuralBaseline):
    """EmbedLLM's matrix factorisation (`EmbedLLMNet`), trained on shuffled question batches.

    Theirs: dim 232, alpha 0.05, Adam lr 1e-4 on unshuffled 2048-row batches for 50 epochs, no
    validation. Here: the shared trainer (shuffled question batches, early stopping on validation
    loss). Chosen on validation loss (seed 0 question split, MiniLM features): lr 3e-3 with 64
    questions a batch was best or tied on zeroeval, mmlu_pro and metabench among lr {1e-3, 3e-3} x
    batch {64, 256}; dim 32 and noise 0 were worse on zeroeval (0.510 and 0.469 against 0.474).
    """

    TRAINING = TrainConfig(lr=3e-3, batch_items=64)
    dim: int = 232  # size of e_m and of the projected question P x_q (EmbedLLM's choice)
    noise: float = 0.05  # per-coordinate std of the training noise on x_q (EmbedLLM's alpha)

    def _build(self, in_dim: int, n_models: int) -> nn.Module:
        return EmbedLLMNet(in_dim, n_models, self.dim, self.noise)


@dataclass(eq=False)
class IRTNet(_NeuralBaseline):
    """IRT-Net (`IRTNetModule`), scaled down for a CPU.

    Theirs: d = 232, 39 routed experts (all selected), hidden 512, expert output 256, dropout 0.5,
    noise 0.05, Adam lr 1e-4, early stopping on validation accuracy. 39 experts of that size cost
    about 20M weights per question on a CPU; here 8 smaller experts, top-2. Chosen on validation loss
    (seed 0 question split, MiniLM features): the defaults below beat d 232 and 4 experts (all used)
    on zeroeval, and lr 1e-3 with 256 questions a batch beat lr 3e-3 and 64-question batches on
    zeroeval and mmlu_pro (on metabench lr 3e-3 was slightly better: 0.540 against 0.542).
    """

    d: int = 64  # ability / discrimination dimension
    n_experts: int = 8  # routed experts
    top_k: int = 2  # routed experts used per question
    hidden: int = 256  # hidden width of every expert
    expert_dim: int = 128  # output width of every expert
    dropout: float = 0.5  # inside the experts (IRT-Net's 0.5)
    noise: float = 0.05  # per-coordinate std of the training noise on x_q (IRT-Net's 0.05)
    balance_speed: float = 0.01  # step of the routing-balance bias (IRT-Net's gamma)

    def _build(self, in_dim: int, n_models: int) -> nn.Module:
        return IRTNetModule(
            in_dim,
            n_models,
            self.d,
            self.n_experts,
            self.top_k,
            self.hidden,
            self.expert_dim,
            self.dropout,
            self.noise,
            self.balance_speed,
        )

    @torch.no_grad()
    def difficulty(self, ds: Dataset) -> np.ndarray:
        """b_q (n_items,): each question's difficulty output (higher: every model less likely right)."""
        self._check_fitted()
        x = self._features(ds)
        net = self.net_
        assert isinstance(net, IRTNetModule), "IRTNet._build makes an IRTNetModule"
        return torch.cat([net.item_parameters(x[s : s + 4096])[1] for s in range(0, len(x), 4096)])[:, 0].numpy()


@dataclass(eq=False)
class MIRT(_NeuralBaseline):
    """Multidimensional IRT with content-predicted item parameters (`MIRTNet`).

    Chosen on validation loss (seed 0 question split, MiniLM features): lr 3e-3 with 64 questions a
    batch was best or tied on zeroeval, mmlu_pro and metabench among lr {1e-3, 3e-3} x batch {64, 256};
    d 16 beat 4 (zeroeval) and 64 (mmlu_pro), noise 0.05 beat 0 (zeroeval).
    """

    TRAINING = TrainConfig(lr=3e-3, batch_items=64)
    d: int = 16  # ability / discrimination dimension
    hidden: int = 256  # width of the MLP on x_q
    dropout: float = 0.0  # after the MLP's hidden layer
    noise: float = 0.05  # per-coordinate std of the training noise on x_q

    def _build(self, in_dim: int, n_models: int) -> nn.Module:
        return MIRTNet(in_dim, n_models, self.d, self.hidden, self.dropout, self.noise)
