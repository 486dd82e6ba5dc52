"""Baselines that JE-IRT is compared with: each scores questions it never saw from their text embedding.

Content-aware predictors (all read the same frozen-encoder features x_q as JE-IRT):

- `EmbedLLMMF`: EmbedLLM's matrix factorisation (Zhuang et al., 2025, "EmbedLLM: Learning Compact
  Representations of Large Language Models", their `TextMF`): a free vector e_m per model, the
  question projected as P x_q, and a linear classifier on their elementwise product,

      logit(m, q) = w . (e_m * P x_q) + c,

  (their two-class softmax head is the same function: only the difference of its two logits counts).
- `KNN`: per model, the (cosine-weighted or plain) mean label of its k most similar training questions
  that it was evaluated on; k and the weighting picked on the validation labels.
- `IRTNet`: IRT-Net (Chen et al., 2025, arXiv 2510.00844, "Learning Compact Representations of LLM
  Abilities via Item Response Theory"): a dense mixture of experts (one shared expert plus top-k routed
  experts) on x_q gives a discrimination vector a_q and a scalar difficulty b_q; each model has an
  ability vector theta_m;  logit = a_q . theta_m - b_q.
- `MIRT`: multidimensional IRT as routing papers use it (e.g. IRT-Router, Song et al., 2025): an MLP on
  x_q gives non-negative discriminations a_q = softplus(.) and a difficulty b_q; logit = a_q . theta_m - b_q.

Plain baselines, which ignore the question's content (any honest table needs them):

- `ModelAccuracy`: each model's accuracy on its training labels.
- `BenchmarkAccuracy`: each model's training accuracy on the question's benchmark.

Every estimator has `fit(ds, split) -> self` and `predict_proba(ds) -> (n_models, n_items)`, the same
interface as `jeirt.estimator.JEIRT`. The neural ones are nn.Modules mapping (B, in_dim) features to
(B, n_models) logits, trained by `jeirt.train.train` (masked BCE, early stopping on the validation
loss, seeded). Their defaults were chosen on validation loss only (seed 0 question split, MiniLM
features, mmlu_pro / zeroeval / metabench); each class docstring says what was tried.

Modules: `simple` (ModelAccuracy, BenchmarkAccuracy, KNN), `neural` (EmbedLLMMF, IRTNet, MIRT) and
`irt` (classic 1PL / 2PL IRT fitted by MAP, which cannot score a question it never saw).
"""

from jeirt.baselines.neural import MIRT, EmbedLLMMF, IRTNet
from jeirt.baselines.simple import KNN, BenchmarkAccuracy, ModelAccuracy

__all__ = ["KNN", "MIRT", "BenchmarkAccuracy", "EmbedLLMMF", "IRTNet", "ModelAccuracy"]
