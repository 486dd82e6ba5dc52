"""The Out-of-distribution page's tables: ours in the layout of the paper's Tables 3 and 4. The
protocol is `jeirt.experiments.ood`, the alignment `jeirt.analysis.alignment`.
"""

from __future__ import annotations

import pandas as pd


def paper_layout(table: pd.DataFrame, alignment: pd.Series, encoder: str = "sent") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Our `jeirt.experiments.ood.left_out_table` and alignment in the layout of the paper's Tables 3 and 4 (in %,
    x 100; Table 3's diff is the drop, all - leave-out, as the paper prints it), under the paper's row
    label `encoder` ("sent": a sentence-transformer, as our MiniLM and mpnet are), for
    `jeirt.book.paper.side_by_side`."""
    t3 = 100 * table[["leave-out", "all"]].T
    t3.loc["diff"] = t3.loc["all"] - t3.loc["leave-out"]
    t3.index = pd.MultiIndex.from_product([[encoder], t3.index], names=["encoder", "setting"])
    t4 = (100 * alignment).to_frame(encoder).T.rename_axis("encoder")
    return t3.rename_axis(columns=None), t4.rename_axis(columns=None)
