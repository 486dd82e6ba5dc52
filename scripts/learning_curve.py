"""When the question text pays: the learning curve's runs (`jeirt_book.experiments.learning_curve`).

Every method of the curve x seed at each size of training questions below the full split, on each
dataset, written as a `jeirt compare` table (the .csv and its .json); the page adds the full split's
runs from results/compare_question_split.csv. About half an hour on one core of 2 shared ones (MiniLM).

    OMP_NUM_THREADS=1 python scripts/learning_curve.py --out results/learning_curve.csv
"""

from __future__ import annotations

import torch
from result_files import results_parser

from jeirt_book.experiments import learning_curve


def main(argv: list[str] | None = None) -> int:
    parser = results_parser(__doc__, "results/learning_curve.csv", datasets="mmlu_pro,zeroeval,metabench")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    runs = learning_curve.run(args.datasets, args.encoder, args.seeds, out=args.out)
    print(f"{len(runs)} runs written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
