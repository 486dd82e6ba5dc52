"""The Difficulty page's figures (book/difficulty.md): each question's norm against the classic
difficulties. The measurements are in `jeirt.analysis.difficulty`.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from jeirt_book.figures import MARKERS, PALETTE

NORM_LABEL = r"norm $\Vert E_Q \Vert$"


def norm_vs_difficulty(
    norms: np.ndarray, share_wrong: np.ndarray, b: np.ndarray, a: np.ndarray, b_max: float = 6.0
) -> plt.Figure:
    """Two panels, one point per question (n,): its norm against the share of models wrong (left)
    and against the 2PL's b (right, |b| <= `b_max`), there shaped and coloured by the sign of a."""
    norms, share_wrong, b, a = (np.asarray(v, dtype=float) for v in (norms, share_wrong, b, a))
    if not norms.shape == share_wrong.shape == b.shape == a.shape:
        raise ValueError(
            f"norms {norms.shape}, share_wrong {share_wrong.shape}, b {b.shape} and "
            f"a {a.shape} must be one value per question each."
        )
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.0))
    axes[0].scatter(norms, share_wrong, s=10, color=PALETTE[0], marker=MARKERS[0], edgecolor="none", alpha=0.7)
    axes[0].set_xlabel(NORM_LABEL)
    axes[0].set_ylabel("share of models wrong")
    shown = np.isfinite(b) & (np.abs(b) <= b_max) & (a != 0)
    sign = np.where(a[shown] > 0, "a > 0", "a < 0")
    frame = pd.DataFrame({"norm": norms[shown], "b": b[shown], "discrimination": sign})
    order = ["a > 0", "a < 0"]
    sns.scatterplot(
        data=frame,
        x="norm",
        y="b",
        hue="discrimination",
        style="discrimination",
        hue_order=order,
        style_order=order,
        palette=PALETTE[1:3],
        markers=["o", "X"],
        s=18,
        alpha=0.8,
        edgecolor="none",
        ax=axes[1],
    )
    axes[1].set_xlabel(NORM_LABEL)
    axes[1].set_ylabel("2pl difficulty b")
    axes[1].legend(loc="lower right", title=None, fontsize=9)
    return fig


def claim_stats(
    dataset: str, rank_corr: pd.Series, n_bins: int, auc: pd.Series, auc_se: dict, all_auc: pd.Series
) -> dict:
    """The numbers the page's claim rows read (`jeirt_book.verdicts.Stat`): the weaker of the encoders'
    rank correlations of norm bin and accuracy ('trend', Fisher-z interval over `n_bins`), and each
    encoder's AUC of the norm for wrong answers on the test questions (`auc`) with its bootstrap se over
    questions (`auc_se`, by encoder), its AUC on all questions (`all_auc`) beside it."""
    from jeirt_book.verdicts import Stat, rho_interval

    stats = {
        "trend": Stat(
            rank_corr.max(),
            interval=rho_interval(rank_corr.max(), n_bins),
            spec="+.2f",
            label="rank corr. (bin, accuracy), the weaker",
            note=", ".join(f"{v:+.2f} ({e})" for e, v in rank_corr.items()),
            data=f"{dataset}, " + " and ".join(map(str, rank_corr.index)),
            rule_args={"limit": f"{n_bins} norm bins"},
        )
    }
    for e in auc_se:
        stats[e] = Stat(
            auc[e],
            se=auc_se[e],
            label="AUC",
            note=f"test questions, bootstrap over them; on all questions {all_auc[e]:.3f}",
            data=f"{dataset}, {e}",
        )
    return stats
