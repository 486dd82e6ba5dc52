"""Data drawn from the JE-IRT model itself, with every parameter known (for tests and the book).

`simulate` draws question features, an adapter and model vectors and grades every pair by Eq. (3);
`draw_labels` and `soft_labels_from_draws` grade the same pairs several times, for soft labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from jeirt.data.dataset import Dataset


@dataclass
class SimulationTruth:
    """The parameters that generated a simulated dataset."""

    adapter: object  # the torch adapter (frozen) that maps features to question embeddings
    model_vectors: np.ndarray  # (n_models, d)
    question_embeddings: np.ndarray  # (n_items, d)
    probabilities: np.ndarray  # (n_models, n_items)


def simulate(
    n_models: int = 40,
    n_items: int = 2000,
    feature_dim: int = 64,
    d: int = 16,
    n_benchmarks: int = 4,
    density: float = 1.0,
    soft: bool = False,
    seed: int = 0,
) -> tuple[Dataset, SimulationTruth]:
    """Draw a dataset from the JE-IRT model with known question features, adapter and model vectors.

    Features are vectors of varied length around one centre per benchmark; the adapter is a random 2-layer MLP
    (hidden = 2 x input) scaled so that question norms spread over about 0.5-3; model vectors share a
    common direction plus a per-model one, so models differ by topic, not just overall skill.
    `density` < 1 leaves a random share of labels unobserved; `soft` stores probabilities as labels.
    """
    from jeirt.model import probability

    rng = np.random.default_rng(seed)
    features, bench = _question_features(rng, n_items, feature_dim, n_benchmarks)
    adapter, q = _adapter(features, d, seed)  # q: (n_items, d) question embeddings
    unit = q / np.linalg.norm(q, axis=1, keepdims=True)  # (n_items, d)
    vectors = _model_vectors(rng, unit, bench, n_models, n_benchmarks)
    probs = probability(unit, np.linalg.norm(q, axis=1), vectors).T  # (n_models, n_items), Eq. (3)
    labels = probs.copy() if soft else (rng.random(probs.shape) < probs).astype(np.float32)
    if density < 1:
        labels[rng.random(labels.shape) >= density] = np.nan
    items = pd.DataFrame(
        {
            "item_id": [f"q{i}" for i in range(n_items)],
            "benchmark": [f"bench{b}" for b in bench],
            "subject": "",
            "text": [f"simulated question {i}" for i in range(n_items)],
        }
    )
    ds = Dataset(
        name=f"simulated-seed{seed}",
        models=[f"model{m}" for m in range(n_models)],
        items=items,
        labels=labels,
        embeddings={"simulated": features.astype(np.float32)},
    )
    return ds, SimulationTruth(adapter, vectors, q, probs)


def _question_features(
    rng: np.random.Generator, n_items: int, feature_dim: int, n_benchmarks: int
) -> tuple[np.ndarray, np.ndarray]:
    """Frozen features (n_items, feature_dim) of varied length around one centre per benchmark, and each
    question's benchmark (n_items,)."""
    centres = rng.normal(size=(n_benchmarks, feature_dim))
    bench = rng.integers(n_benchmarks, size=n_items)
    features = centres[bench] + 0.8 * rng.normal(size=(n_items, feature_dim))
    features /= np.linalg.norm(features, axis=1, keepdims=True)
    features *= rng.uniform(0.3, 1.7, size=(n_items, 1))  # feature scale -> spread of difficulties
    return features, bench


def _adapter(features: np.ndarray, d: int, seed: int):
    """A random adapter without biases, scaled so that question norms average 1.5, and the question
    embeddings (n_items, d) it gives."""
    import torch

    from jeirt.model import Adapter

    torch.manual_seed(seed)
    adapter = Adapter(features.shape[1], d).eval()
    first, last = adapter.net[0], adapter.net[-1]
    assert isinstance(first, torch.nn.Linear) and isinstance(last, torch.nn.Linear), "Adapter's net: Linear ... Linear"
    with torch.no_grad():
        for layer in (first, last):  # no biases: |E_Q| then scales with |x_q|
            layer.bias.zero_()
        raw = adapter(torch.from_numpy(features).float())
        scale = 1.5 / raw.norm(dim=1).mean()
        last.weight.mul_(scale)
        q = adapter(torch.from_numpy(features).float()).numpy()
    return adapter, q


def _model_vectors(
    rng: np.random.Generator, unit: np.ndarray, bench: np.ndarray, n_models: int, n_benchmarks: int
) -> np.ndarray:
    """Model vectors (n_models, d): a general skill along the mean question direction, plus a topical
    profile built from the benchmarks' mean directions (so models rank differently on different
    benchmarks)."""
    d = unit.shape[1]
    general = unit.mean(axis=0) / np.linalg.norm(unit.mean(axis=0))
    topics = np.stack([unit[bench == b].mean(axis=0) for b in range(n_benchmarks)])  # (n_benchmarks, d)
    topics -= np.outer(topics @ general, general)
    skill = rng.uniform(1.0, 4.0, size=(n_models, 1))
    profile = rng.normal(scale=1.5, size=(n_models, n_benchmarks)) @ topics
    return skill * general + profile + rng.normal(scale=0.5 / np.sqrt(d), size=(n_models, d))


def draw_labels(probabilities: np.ndarray, n_draws: int, seed: int = 0) -> np.ndarray:
    """`n_draws` independent 0/1 gradings (n_draws, n_models, n_items) of every pair, each correct
    with its probability (n_models, n_items); NaN where the probability is NaN (not evaluated)."""
    p = np.asarray(probabilities, dtype=np.float64)
    if n_draws < 1:
        raise ValueError(f"n_draws={n_draws}; expected a positive number of gradings per pair.")
    seen = ~np.isnan(p)
    if (p[seen] < 0).any() or (p[seen] > 1).any():
        raise ValueError("probabilities must lie in [0, 1] (NaN = not evaluated).")
    rng = np.random.default_rng(seed)
    draws = (rng.random((n_draws, *p.shape)) < np.nan_to_num(p)).astype(np.float32)
    draws[:, ~seen] = np.nan
    return draws


def soft_labels_from_draws(draws: np.ndarray) -> np.ndarray:
    """Soft labels (n_models, n_items) from repeated gradings (n_draws, n_models, n_items): each pair's
    share correct, a pass rate, over the draws that graded it (NaN = this draw did not); NaN where none did."""
    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim != 3:
        raise ValueError(f"draws has shape {draws.shape}; expected (n_draws, n_models, n_items).")
    seen = ~np.isnan(draws)
    if (draws[seen] < 0).any() or (draws[seen] > 1).any():
        raise ValueError("gradings must lie in [0, 1] (NaN = not graded in that draw).")
    count = seen.sum(axis=0)
    total = np.where(seen, draws, 0.0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan).astype(np.float32)
