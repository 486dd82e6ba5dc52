"""Few-question evaluation speed: the efficient page's metabench runs with this tree's code against a commit's.

The setup of book/efficient.md on metabench (seed 0): 300 models graded on every question are held out,
JE-IRT (d = 256) is trained on the others, and each rule asks every held-out model k = 10, 30, 100, 300
questions and estimates its accuracy (posteriors, then 100 posterior draws). One run of a rule is timed
with `jeirt.tasks.evaluation` and `jeirt.onboard` as they are in this tree and as they were at `--base`
(read with `git show`), alternating, in one process, one thread. Prints seconds per run, the ratio, and
the largest difference of the point estimates. The point estimates of the random rule agree to float32
rounding; the adaptive rules pick each question from the posterior, so posteriors that differ in the
last digits can pick another question and their estimates differ by more; the intervals come from other
random draws where the posterior is kept in its span.

    python benchmarks/few_item_speed.py [--base 4a5bdec] [--rules random adaptive] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import torch

from jeirt.estimator import JEIRT
from jeirt.splits import hold_out_models, split_by_question
from jeirt.tasks import evaluation
from jeirt_book.experiments.new_models import metabench_held_out, training_only

ROOT = Path(__file__).resolve().parents[1]
KS = (10, 30, 100, 300)


def module_at(commit: str, path: str, name: str, replace: tuple[str, str] | None = None) -> types.ModuleType:
    """The module `path` as it was at `commit`, importable as `name` (one import line rewritten by `replace`)."""
    source = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    if replace is not None:
        if replace[0] not in source:
            raise ValueError(f"{path} at {commit} has no line {replace[0]!r} to rewrite.")
        source = source.replace(*replace)
    module = types.ModuleType(name)
    module.__file__ = f"{commit}:{path}"
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def one_run(ev: types.ModuleType, bank, labels: np.ndarray, rule: str, seed: int = 0) -> list:
    """The estimates of book/efficient.md's run for one rule, every k
    (`jeirt_book.experiments.new_models.questions_asked` then `estimate_scores`), with module `ev`."""
    graded = ~np.isnan(labels)
    posteriors, nested = {}, rule in ("random", "adaptive", "adaptive-accuracy")
    if rule == "random":
        order = ev.select_questions(bank, KS[-1], rule, labels=labels, seed=seed)
    elif nested:
        order, posteriors = ev.adaptive_selection(bank, KS[-1], labels, rule, keep=KS)
    out = []
    for k in KS:
        picks = order[:, :k] if nested else ev.select_questions(bank, k, rule, labels=labels, seed=seed)
        asked = np.zeros_like(graded)
        np.put_along_axis(asked, picks, True, axis=1)
        out.append(
            ev.estimate_scores(bank, labels, asked, targets=graded, draws=100, seed=seed, posterior=posteriors.get(k))
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="4a5bdec", help="the commit whose code is timed against this tree's")
    parser.add_argument("--rules", nargs="+", default=["random", "adaptive"], choices=evaluation.SELECTION_RULES)
    parser.add_argument("--held", type=int, default=300, help="held-out metabench models")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))

    base_onboard = module_at(args.base, "jeirt/onboard.py", "base_onboard")
    base = module_at(
        args.base,
        "jeirt/tasks/evaluation.py",
        "base_evaluation",
        ("from jeirt.onboard import fit_model_vectors", "from base_onboard import fit_model_vectors"),
    )
    assert base.fit_model_vectors is base_onboard.fit_model_vectors

    meta, held = metabench_held_out(args.held, None, seed=0)  # the efficient page's held-out models
    split = hold_out_models(meta, split_by_question(meta, seed=0), held)
    model = JEIRT(d=256, encoder="all-MiniLM-L6-v2", training={"max_epochs": 200}, random_state=0, progress=False).fit(
        meta, training_only(split)
    )
    bank = evaluation.QuestionBank.from_model(model, meta, prior_models=[m for m in meta.models if m not in set(held)])
    labels = meta.labels[meta.model_index(held)].astype(np.float64)
    banks = {
        "this tree": bank,
        args.base: base.QuestionBank(**{f: getattr(bank, f) for f in bank.__dataclass_fields__}),
    }
    modules = {"this tree": evaluation, args.base: base}
    print(
        f"metabench: {len(held)} held-out models x {meta.n_items} questions, d = 256, k = {KS}, "
        f"{args.threads} thread(s); {args.base} against this tree, alternating, {args.rounds} round(s)"
    )
    for rule in args.rules:
        seconds = {name: [] for name in modules}
        estimates = {}
        for _ in range(args.rounds):
            for name in (args.base, "this tree"):
                start = time.perf_counter()
                estimates[name] = one_run(modules[name], banks[name], labels, rule)
                seconds[name].append(time.perf_counter() - start)
        diff = max(
            float(np.abs(a["estimate"].to_numpy() - b["estimate"].to_numpy()).max())
            for a, b in zip(estimates[args.base], estimates["this tree"])
        )
        old, new = min(seconds[args.base]), min(seconds["this tree"])
        print(
            f"{rule:>18}: {args.base} {old:6.1f} s, this tree {new:6.1f} s ({old / new:.2f}x; runs "
            f"{', '.join(f'{s:.1f}' for s in seconds[args.base])} / "
            f"{', '.join(f'{s:.1f}' for s in seconds['this tree'])}); "
            f"largest estimate difference {diff:.2e}"
        )


if __name__ == "__main__":
    main()
