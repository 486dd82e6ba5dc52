"""Baselines that ignore a question's text (`ModelAccuracy`, `BenchmarkAccuracy`) and one that reads
only its neighbours' labels (`KNN` on cosine similarity of frozen-encoder features)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from jeirt.baselines.base import (
    Baseline,
    _check_split,
    _history_mask,
    _model_rows,
    _training_view,
)
from jeirt.data.dataset import Dataset
from jeirt.metrics import log_loss
from jeirt.model import unit_rows
from jeirt.splits import Split


# Plain baselines: no question content
@dataclass(eq=False)
class ModelAccuracy(Baseline):
    """P(m answers q) = m's accuracy on its training labels, the same for every question.

    A model with no training label gets the mean training label of all models.
    """

    def fit(self, ds: Dataset, split: Split) -> ModelAccuracy:
        _check_split(ds, split)
        seen = _training_view(ds, split)
        self.global_accuracy_ = float(np.nanmean(seen.labels, dtype=np.float64))
        self.accuracy_ = seen.accuracy().fillna(self.global_accuracy_)  # (n_models,)
        self.models_ = list(ds.models)
        return self

    def predict_proba(self, ds: Dataset) -> np.ndarray:
        """(n_models, n_items): each row is constant, the model's training accuracy."""
        self._check_fitted()
        rows = _model_rows(self.models_, ds.models)
        acc = self.accuracy_.to_numpy()[rows]
        return np.repeat(acc[:, None], ds.n_items, axis=1).astype(np.float32)


@dataclass(eq=False)
class BenchmarkAccuracy(Baseline):
    """P(m answers q) = m's training accuracy on q's benchmark.

    Fallbacks, in order: where m has no training label in that benchmark (or the benchmark was not in
    training at all, as in a leave-one-benchmark-out split), m's overall training accuracy; where m has
    no training label at all, the mean training label of all models.
    """

    def fit(self, ds: Dataset, split: Split) -> BenchmarkAccuracy:
        _check_split(ds, split)
        overall = ModelAccuracy().fit(ds, split).accuracy_
        table = _training_view(ds, split).accuracy(by="benchmark")  # (n_models, n_benchmarks); NaN: none
        self.accuracy_ = table.apply(lambda col: col.fillna(overall))
        self.overall_accuracy_ = overall
        self.models_ = list(ds.models)
        return self

    def predict_proba(self, ds: Dataset) -> np.ndarray:
        """(n_models, n_items): row m, column q holds m's training accuracy on q's benchmark."""
        self._check_fitted()
        rows = _model_rows(self.models_, ds.models)
        table = self.accuracy_.iloc[rows]
        out = np.repeat(self.overall_accuracy_.to_numpy()[rows][:, None], ds.n_items, axis=1)
        for bench, cols in ds.items.groupby("benchmark", sort=False).indices.items():
            if bench in table.columns:
                out[:, cols] = table[bench].to_numpy()[:, None]
        return out.astype(np.float32)


# k nearest neighbours on cosine similarity
def _most_similar(sims: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The m largest similarities of each row (c, m) and their columns, most similar first, equal
    ones in column order: a fixed rule (datasets hold duplicate questions), not `torch.topk`'s."""
    top, idx = torch.topk(sims, m, dim=1)
    tied = torch.nonzero((top[:, 1:] == top[:, :-1]).any(dim=1)).flatten()  # rows with equal similarities
    if len(tied):
        t, i = top[tied], idx[tied]
        i, order = torch.sort(i, dim=1)
        t, order2 = torch.sort(t.gather(1, order), dim=1, descending=True, stable=True)
        top[tied], idx[tied] = t, i.gather(1, order2)
    return top, idx


def _unit_rows(features: np.ndarray) -> torch.Tensor:
    """Rows scaled to unit length (a zero row stays zero), as a float32 tensor."""
    return torch.from_numpy(unit_rows(features).astype(np.float32))


@dataclass(eq=False)
class KNN(Baseline):
    """Per model, the mean label of its k most similar training questions (cosine similarity).

    For a model m and a question q, the neighbours are the k training questions that m was evaluated
    on whose features are most similar to q's (fewer when m has fewer). `weighting="cosine"` weights
    each neighbour's label by its similarity (clipped at 1e-6), `"uniform"` averages them. Both k
    (from `k_grid`) and the weighting (from `weightings`) are chosen by the log loss on the validation
    labels. EmbedLLM's own k-NN used k = 131 on their data; our grid spans 1 to 500.

    Vectorised: one similarity block per chunk of questions, the top candidates found with
    `torch.topk`, then cumulative sums over the ranked candidates give every k in the grid at once.
    """

    encoder: str = "all-MiniLM-L6-v2"  # frozen text encoder: key of Dataset.embeddings
    k_grid: tuple[int, ...] = (1, 3, 5, 10, 20, 50, 100, 200, 500)  # k values tried on validation
    weightings: tuple[str, ...] = ("cosine", "uniform")  # neighbour weightings tried on validation
    block_cells: int = 5_000_000  # cap on n_models x questions x candidates per block (memory)
    progress: bool = False  # a tqdm bar over question blocks

    def fit(self, ds: Dataset, split: Split) -> KNN:
        _check_split(ds, split)
        bad = [w for w in self.weightings if w not in ("cosine", "uniform")]
        if bad or not self.weightings:
            raise ValueError(f"weightings={self.weightings}; expected a non-empty subset of ('cosine', 'uniform').")
        if not self.k_grid or min(self.k_grid) < 1:
            raise ValueError(f"k_grid={self.k_grid}; expected positive integers.")
        mask = _history_mask(ds, split)
        train_items = np.flatnonzero(mask.any(axis=0))
        if len(train_items) == 0:
            raise ValueError("the split's training part selects no labels; check the split.")
        features = ds.features(self.encoder, progress=self.progress)
        # Duplicate questions (datasets hold some) share one row of features, so their similarities to a
        # query are one number, bitwise: a matrix product may round equal columns differently (AVX2 did,
        # by 1.8e-7), and `_most_similar` breaks exact ties by column.
        unique, columns = np.unique(features[train_items], axis=0, return_inverse=True)
        self.train_features_ = _unit_rows(unique)  # (n_unique, dim)
        self.train_columns_ = torch.from_numpy(columns.reshape(-1))  # (n_train,) each question's row
        sub = mask[:, train_items]
        self.train_labels_ = torch.from_numpy(
            np.where(sub, np.nan_to_num(ds.labels[:, train_items]), 0).astype(np.float32)
        )  # (n_models, n_train)
        self.train_mask_ = torch.from_numpy(sub)  # (n_models, n_train)
        self.fallback_ = ModelAccuracy().fit(ds, split).accuracy_.to_numpy()  # models without neighbours
        self.models_ = list(ds.models)
        ks = tuple(sorted(set(int(k) for k in self.k_grid)))

        val_mask = split.val & ds.observed
        val_items = np.flatnonzero(val_mask.any(axis=0))
        if len(val_items) == 0:
            raise ValueError("the split's validation part selects no labels; k is chosen on it.")
        preds = self._predict_grid(features[val_items], np.arange(ds.n_models), ks, self.weightings)
        truth, sel = ds.labels[:, val_items], val_mask[:, val_items]
        scores = {(w, k): log_loss(preds[w][i][sel], truth[sel]) for w in self.weightings for i, k in enumerate(ks)}
        self.validation_log_loss_ = pd.Series(scores, name="val_log_loss").rename_axis(["weighting", "k"])
        self.weighting_, self.k_ = min(scores, key=scores.__getitem__)
        return self

    def predict_proba(self, ds: Dataset) -> np.ndarray:
        """(n_models, n_items): each model's neighbour mean at the chosen k and weighting."""
        self._check_fitted()
        rows = _model_rows(self.models_, ds.models)
        features = ds.features(self.encoder, progress=self.progress)
        return self._predict_grid(features, rows, (self.k_,), (self.weighting_,))[self.weighting_][0]

    @torch.no_grad()
    def _predict_grid(
        self, features: np.ndarray, rows: np.ndarray, ks: tuple[int, ...], weightings: Sequence[str]
    ) -> dict[str, np.ndarray]:
        """{weighting: (len(ks), len(rows), n_queries)} neighbour means for every k at once.

        Per block of queries, the training questions ranked by similarity (`_most_similar`); a
        model's neighbours are the first k of them it was evaluated on. Each model looks at the
        first M candidates, M enough for k_max at its share of evaluated questions (and a quarter
        more), doubled for the models that still lack some: a model evaluated on a sixth of the
        questions needs six times the candidates, and the others do not run over them too.
        """
        queries = _unit_rows(features)  # (n_queries, dim)
        if queries.shape[1] != self.train_features_.shape[1]:
            raise ValueError(
                f"question features have {queries.shape[1]} dimensions; this KNN was fitted on "
                f"{self.train_features_.shape[1]}-d features from {self.encoder}."
            )
        labels, observed = self.train_labels_[rows], self.train_mask_[rows]  # (n_rows, n_train)
        n_rows, n_train = observed.shape
        k_max = max(ks)
        n_obs = observed.sum(dim=1)  # (n_rows,)
        need = torch.clamp(n_obs, max=k_max)  # observed neighbours wanted
        out = {w: np.empty((len(ks), n_rows, len(queries)), dtype=np.float32) for w in weightings}
        k_tensor = torch.tensor(ks, dtype=torch.int32)
        fallback = torch.from_numpy(self.fallback_[rows].astype(np.float32))  # (n_rows,) models without neighbours
        # Each model's first M: a doubling of the fullest model's, the first at least 1.25 k_max / share.
        base = min(n_train, int(np.ceil(1.25 * k_max * n_train / max(int(n_obs.max()), 1))))
        own = 1.25 * k_max * n_train / n_obs.clamp_min(1).double() / base
        start = torch.clamp(base * 2 ** torch.ceil(torch.log2(own.clamp_min(1))).long(), max=n_train)
        chunk = max(1, self.block_cells // max(1, int(start.sum())))
        for s in tqdm(range(0, len(queries), chunk), desc="knn", disable=not self.progress, leave=False):
            sims = (queries[s : s + chunk] @ self.train_features_.T)[:, self.train_columns_]  # (c, n_train)
            pending, m_of, top = torch.arange(n_rows), start.clone(), None
            while len(pending):
                m = int(m_of[pending].min())  # the models at the smallest M go now
                at, later = pending[m_of[pending] == m], pending[m_of[pending] != m]
                if top is None or top.shape[1] < m:  # twice the largest M: a doubling seldom needs another
                    top, idx = _most_similar(sims, min(n_train, 2 * int(m_of[pending].max())))  # (c, M)
                obs = observed[at][:, idx[:, :m]]  # (a, c, m)
                count = obs.cumsum(dim=2, dtype=torch.int32)  # observed candidates so far
                done = (count[:, :, -1] >= need[at, None]).all(dim=1) | (m == n_train)  # (a,)
                if done.any():
                    fin = at[done]
                    # index of the k-th observed candidate (the last candidate when a model has fewer than k)
                    wanted = k_tensor.expand(len(fin), top.shape[0], len(ks)).contiguous()  # (f, c, K)
                    pos = torch.searchsorted(count[done], wanted).clamp_max(m - 1)  # (f, c, K)
                    y = labels[fin][:, idx[:, :m]]  # (f, c, m)
                    for w in weightings:
                        weight = top[:, :m].clamp_min(1e-6) if w == "cosine" else torch.ones_like(top[:, :m])
                        wo = obs[done] * weight[None]  # (f, c, m), zero where not observed
                        num = torch.gather((wo * y).cumsum(dim=2), 2, pos)  # (f, c, K)
                        den = torch.gather(wo.cumsum(dim=2), 2, pos)
                        p = torch.where(den > 0, num / den.clamp_min(1e-12), fallback[fin][:, None, None])
                        out[w][:, fin.numpy(), s : s + chunk] = p.permute(2, 0, 1).numpy()
                m_of[at[~done]] = min(n_train, 2 * m)
                pending = torch.cat([later, at[~done]])
        return out
