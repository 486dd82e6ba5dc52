"""Workflows for users, built on the core: `compare` (every method on the same splits), `routing` (pick a
model per question, optionally by price) and `evaluation` (a new model's scores from a few questions);
the command line (`jeirt.cli`) runs them. The book's experiment protocols are in `jeirt_book.experiments`.
The core never imports them."""

# The names the command line offers as choices, kept here (no imports) so that `jeirt --help` and a
# usage error answer without loading the workflows and torch, pandas and scikit-learn behind them.
RULES = ("random", "stratified", "kmeans", "adaptive", "adaptive-accuracy")  # evaluation's selection rules
PRIOR_COVARIANCES = ("full", "isotropic")  # the prior covariances S of a new model's vector (`vector_prior`)
METHOD_NAMES = (
    "je-irt",
    "embedllm-mf",
    "irt-net",
    "mirt",
    "knn",
    "benchmark-accuracy",
    "model-accuracy",
)  # compare.METHODS, in its order
VARIANT_NAMES = ("je-irt+benchmark", "je-irt+nested")  # compare.VARIANTS: run only when named
