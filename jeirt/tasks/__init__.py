"""Workflows built on the core. For users: `compare` (every method on the same splits), `routing` (pick a
model per question, optionally by price) and `evaluation` (a new model's scores from a few questions);
the command line (`jeirt.cli`) runs them. The experiments' protocols that the book's pages and the
benchmarks share: `onboarding` (new models' vectors from some of their answers), `new_models` (held-out
draws, few-question and known-question experiments), `dimension` (the sweep over d) and `ood` (leave one
benchmark out). The core never imports them."""

# The names the command line offers as choices, kept here (no imports) so that `jeirt --help` and a
# usage error answer without loading the workflows and torch, pandas and scikit-learn behind them.
RULES = ("random", "stratified", "kmeans", "adaptive", "adaptive-accuracy")  # evaluation's selection rules
PRIORS = ("full", "isotropic")  # evaluation's priors on a new model's vector (`vector_prior`)
METHOD_NAMES = (
    "je-irt",
    "embedllm-mf",
    "irt-net",
    "mirt",
    "knn",
    "benchmark-accuracy",
    "model-accuracy",
)  # compare.METHODS, in its order
VARIANT_NAMES = ("je-irt+benchmark",)  # compare.VARIANTS: run only when named
