"""Workflows for users, built on the core: `compare` (every method on the same splits), `routing` (pick a
model per question, optionally by price) and `evaluation` (a new model's scores from a few questions);
the command line (`jeirt.cli`) runs them. The book's experiment protocols are in `jeirt_book.experiments`.
The core never imports them."""

from typing import TYPE_CHECKING

# The names the command line offers as choices, kept here (no imports) so that `jeirt --help` and a
# usage error answer without loading the workflows and torch, pandas and scikit-learn behind them.
SELECTION_RULES = ("random", "stratified", "kmeans", "adaptive", "adaptive-accuracy")  # which questions to ask
# The rules `jeirt suggest` no longer offers, and why; the Python API keeps them (`suggest_questions`, valid
# round after round), and the book's Efficient page keeps them as a negative result.
WITHDRAWN_RULES = {
    rule: "on held-out model families its design-based estimate, the one `jeirt estimate` reports, erred more "
    "than the random rule's at every k (results/new_models_design.json: mmlu_pro families k = 100, MAE 0.034 "
    "against 0.024; metabench 0.037 against 0.025; zeroeval 0.031 against 0.022)"
    for rule in ("adaptive", "adaptive-accuracy")
}
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


if not TYPE_CHECKING:  # (the type checker keeps refusing names that do not exist)

    def __getattr__(name: str) -> object:
        """An old name answers with its new one (`jeirt.renamed`): `RULES` is `SELECTION_RULES` (the book's
        verdict rules are `jeirt_book.verdicts.RULES`)."""
        from jeirt.renamed import missing_attribute

        raise missing_attribute("jeirt.tasks", name)
