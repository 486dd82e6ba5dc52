"""The Introduction page: a 2-D toy of Eq. (3), questions and models in one plane."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from jeirt.model import probability, unit_rows
from jeirt_book.figures import style


# The JE-IRT geometry in two dimensions (Eq. 3)
def p_correct(question: np.ndarray, model: np.ndarray) -> np.ndarray:
    """Eq. (3) (`jeirt.model.probability`) for questions (..., d) and one model (d,): shape (...)."""
    question = np.asarray(question, dtype=np.float64)
    flat = question.reshape(-1, question.shape[-1])  # (n, d)
    p = probability(unit_rows(flat), np.linalg.norm(flat, axis=1), np.asarray(model)[None, :])
    return p.reshape(question.shape[:-1])


def toy_geometry(seed: int = 0, n_per_topic: int = 8) -> tuple[dict, pd.DataFrame]:
    """A 2-D toy: three model vectors and questions on three topics (angles) at several norms."""
    rng = np.random.default_rng(seed)
    models = {"model a": np.array([2.6, 0.6]), "model b": np.array([0.5, 2.2]), "model c": np.array([1.6, 1.5])}
    topics = {"algebra": 10.0, "biology": 80.0, "history": 165.0}  # direction in degrees
    rows = []
    for topic, angle in topics.items():
        theta = np.deg2rad(angle + rng.normal(0, 6, n_per_topic))
        norm = rng.uniform(0.3, 2.6, n_per_topic)  # the norm is the difficulty
        rows += [{"topic": topic, "x": r * np.cos(t), "y": r * np.sin(t), "norm": r} for t, r in zip(theta, norm)]
    return models, pd.DataFrame(rows)


def geometry_toy(ax: plt.Axes | None = None, shade: str = "model a", seed: int = 0) -> plt.Axes:
    """Models as arrows, questions as points; shading = P(correct) of model `shade` anywhere in the
    plane; dashed circles = where each model's P is 1/2 (the circle whose diameter is its arrow)."""
    ax = ax or plt.gca()
    models, questions = toy_geometry(seed)
    lim = 3.0
    grid = np.linspace(-lim, lim, 301)
    xx, yy = np.meshgrid(grid, grid)
    prob = p_correct(np.stack([xx, yy], axis=-1), models[shade])
    filled = ax.contourf(xx, yy, prob, levels=np.linspace(0, 1, 11), cmap="Greys", alpha=0.45)
    ax.contour(xx, yy, prob, levels=[0.25, 0.75], colors="0.35", linewidths=0.6, linestyles=":")
    plt.colorbar(filled, ax=ax, label=rf"$P(\mathrm{{correct}})$ for {shade}", shrink=0.85)
    for i, (name, vec) in enumerate(models.items()):
        s = style(i)
        ax.annotate("", xy=vec, xytext=(0, 0), arrowprops=dict(arrowstyle="-|>", color=s["color"], lw=2))
        ax.add_patch(
            plt.Circle(
                vec / 2, np.linalg.norm(vec) / 2, fill=False, color=s["color"], linestyle=s["linestyle"], linewidth=1
            )
        )
        ax.text(vec[0] * 1.08, vec[1] * 1.08, name, color=s["color"], fontsize=8, ha="center", va="bottom")
    for j, (topic, group) in enumerate(questions.groupby("topic", sort=False)):
        ax.scatter(
            group["x"],
            group["y"],
            marker="o^s"[j % 3],
            color="white",
            edgecolor="black",
            s=22,
            linewidth=0.8,
            label=f"questions: {topic}",
            zorder=3,
        )
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-1.2, lim)
    ax.set_aspect("equal")
    ax.grid(False)
    ax.set_xlabel("embedding dimension 1")
    ax.set_ylabel("embedding dimension 2")
    ax.legend(loc="lower left")
    return ax


# The box at the top of the front page: what this build ran on, next to the paper's setting
RECIPE_WORDS = {
    "fast": "jeirt's fast recipe (the paper's dropout, a faster schedule)",
    "paper": "the JE-IRT authors' recipe (their code's d = 256 settings)",
}
SPLIT_WORDS = {
    "seeded": "a seeded 80/10/10 split by question",
    "official": "the dataset's own train / val / test files",
}


def this_build(cfg, full, ds) -> pd.DataFrame:
    """The front page's box: this build's data, models, benchmarks, encoder, recipe and split (from the
    settings `cfg`, the whole dataset `full` and the profile's cut `ds`) beside the paper's setting."""
    from jeirt_book import paper

    groups = ds.items["benchmark"].unique()
    shown = ", ".join(map(str, groups[:4])) + (", ..." if len(groups) > 4 else "")
    rows = {
        "profile": (cfg.profile, "–"),
        "data": (cfg.dataset, "EmbedLLM (Sec. 3)"),
        "models": (f"{ds.n_models} of {full.n_models}", f"{paper.value('s3.models'):.0f}"),
        "questions": (f"{ds.n_items:,} of {full.n_items:,}", "EmbedLLM's (the count is not printed)"),
        "benchmarks": (f"{len(groups)} groups in the benchmark column: {shown}", f"{paper.value('s3.benchmarks'):.0f}"),
        "question encoder": (cfg.encoder, " and ".join(paper.ENCODERS.values())),
        "recipe": (RECIPE_WORDS[cfg.recipe], RECIPE_WORDS["paper"]),
        "split": (SPLIT_WORDS[cfg.split], "train / validation / test; which split is not printed"),
        "dimension d": (
            f"{cfg.d} (compared: {', '.join(map(str, cfg.d_grid))})",
            f"a range, best near {paper.value('s32.peak_d'):.0f} (Sec. 3.2)",
        ),
        "seeds": (", ".join(map(str, cfg.seeds)), "–"),
    }
    return pd.DataFrame(rows, index=["this build", "the paper"]).T.rename_axis("")


def not_here(cfg, ds) -> pd.DataFrame:
    """What of the paper this build cannot reproduce, and why, from the settings `cfg` and the dataset
    `ds` (its shipped encoders): the front page's box lists it."""
    from jeirt.data import local_datasets
    from jeirt_book import paper

    rows = {}
    if cfg.dataset.lower() != "embedllm":
        shipped = ", ".join(local_datasets())
        rows["EmbedLLM, the paper's data"] = (
            f"not shipped (data/ holds {shipped}); `jeirt.data.load_embedllm` fetches it from the Hugging Face hub: "
            "JEIRT_DATASET=embedllm"
        )
    missing = [name for name in paper.ENCODERS.values() if name.lower() not in {e.lower() for e in ds.embeddings}]
    if missing:
        rows[f"the paper's encoder {' and '.join(missing)}"] = (
            f"no embeddings shipped for {cfg.dataset} (only {', '.join(ds.embeddings)}); computing them needs the "
            "encoder's weights"
        )
    if cfg.encoder.lower() not in {name.lower() for name in paper.ENCODERS.values()}:
        rows[f"the encoder of this build, {cfg.encoder}"] = "not one of the paper's two: every number depends on it"
    rows[f"App. I's {paper.value('s33.recent_models'):.0f} recent LLMs (Table 2)"] = (
        f"their answers to App. I's {paper.value('appI.questions'):,.0f} questions are in no dataset jeirt "
        "ships or downloads"
    )
    return pd.DataFrame({"why": rows}).rename_axis("not reproduced here")
