"""Efficient evaluation: a new LLM's scores from a few questions (what tinyBenchmarks and Anchor Points do
with plain IRT), one module a job:

    bank          the question bank (`QuestionBank`) and a new LLM's posterior (`Posterior`)
    model_based   accuracy estimates from the posterior (`estimate_scores`)
    design_based  estimates unbiased whatever the model gets wrong (`design_estimates`)
    selection     which questions to ask (`select_questions`, `adaptive_selection`, `suggest_questions`)
    scoring       new LLMs' scores side by side (`score_new_models`), and the baselines without JE-IRT
    answers       new LLMs' answers as a table, with `jeirt suggest`'s columns (`answers_from_table`)

A new question's answers from a few LLMs: `jeirt.questions.refine_questions`. The book's protocols that
use this package are in `jeirt_book.experiments.new_models`; the `jeirt estimate` and `jeirt suggest`
verbs in `jeirt.cli.evaluation`.
"""

from typing import TYPE_CHECKING

from jeirt.onboard import PRIOR_WIDTH_GRID
from jeirt.tasks import SELECTION_RULES
from jeirt.tasks.evaluation.answers import (
    INCLUSION_COLUMN,
    RANDOM_COLUMN,
    SUGGEST_COLUMNS,
    Answers,
    answers_from_table,
)
from jeirt.tasks.evaluation.bank import GROUP_SD, MISFIT_SDS, OVERALL, Posterior, QuestionBank
from jeirt.tasks.evaluation.design_based import DESIGN, design_estimates, inclusion_probabilities
from jeirt.tasks.evaluation.model_based import estimate_scores
from jeirt.tasks.evaluation.scoring import PLAIN, irt_estimates, plain_means, score_new_models
from jeirt.tasks.evaluation.selection import (
    RANDOM_SHARE,
    adaptive_selection,
    next_questions,
    random_positions,
    select_questions,
    suggest_questions,
)

if not TYPE_CHECKING:  # (the type checker keeps refusing names that do not exist)

    def __getattr__(name: str) -> object:
        """An old name answers with its new one (`jeirt.renamed`)."""
        from jeirt.renamed import missing_attribute

        raise missing_attribute("jeirt.tasks.evaluation", name)
