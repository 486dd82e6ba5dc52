"""Efficient evaluation: a new LLM's scores from a few questions (what tinyBenchmarks and Anchor Points do
with plain IRT), one module a job:

    bank          the question bank (`QuestionBank`) and a new LLM's posterior (`Posterior`)
    model_based   accuracy estimates from the posterior (`estimate_scores`)
    design_based  estimates unbiased whatever the model gets wrong (`design_estimates`)
    selection     which questions to ask (`select_items`, `adaptive_selection`, `suggest_questions`)
    scoring       new LLMs' scores side by side (`score_new_models`), and the baselines without JE-IRT

A new question's answers from a few LLMs: `jeirt.questions.refine_questions`. The book's protocols that
use this package are in `jeirt_book.experiments.new_models`; the `jeirt estimate` and `jeirt suggest`
verbs in `jeirt.cli.evaluation`.
"""

from jeirt.onboard import PRIOR_WIDTH_GRID
from jeirt.tasks import RULES
from jeirt.tasks.evaluation.bank import GROUP_SD, MISFIT_SDS, OVERALL, Posterior, QuestionBank
from jeirt.tasks.evaluation.design_based import DESIGN, design_estimates, inclusion_probabilities
from jeirt.tasks.evaluation.model_based import estimate_scores
from jeirt.tasks.evaluation.scoring import PLAIN, irt_estimates, plain_means, score_new_models
from jeirt.tasks.evaluation.selection import (
    RANDOM_SHARE,
    adaptive_selection,
    next_items,
    random_positions,
    select_items,
    suggest_questions,
)
