"""Print the verdict rules' calibration table: each kind of rule on planted worlds (the claim on its
boundary, far from it, and false by as much), 200 draws each (`jeirt_book.calibration`).

    python scripts/calibrate_rules.py            # the table; exit 1 where a bound is missed
    python scripts/calibrate_rules.py --draws 1000 --seed 1
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    from jeirt_book import calibration

    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--draws", type=int, default=calibration.DRAWS, help="planted data sets per world")
    parser.add_argument("--seed", type=int, default=0, help="seed of the draws")
    args = parser.parse_args(argv)
    if args.draws < 20:
        parser.error(f"--draws {args.draws}; give at least 20 draws per world.")
    table = calibration.calibrate(args.draws, args.seed)
    print(calibration.table_text(table))
    missed = table[table["met"] == False]  # noqa: E712 (None: a design shown for comparison)
    if len(missed):
        print(f"\n{len(missed)} world(s) miss their bound", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
