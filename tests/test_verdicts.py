"""The verdict engine on planted data: each rule says holds where the claim is true, does not hold
where it is false, and inconclusive where the data is pure noise too thin to decide."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from jeirt_book import verdicts
from jeirt_book.verdicts import DIRECTION, FAILS, HOLDS, INCONCLUSIVE, NOISE


def planted(effect: float, n: int, seed: int) -> tuple[float, float]:
    """Mean and SE of n draws from N(effect, 1): a paired gap with a known truth."""
    draws = np.random.default_rng(seed).normal(effect, 1.0, n)
    return verdicts.mean_and_se(draws)


def word(result: tuple[str, str]) -> str:
    return verdicts.word(result[0])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_above_on_planted_gaps(seed):
    true, false, noise = planted(0.5, 400, seed), planted(-0.5, 400, seed), planted(0.0, 12, seed)
    assert word(verdicts.above(true[0], se=true[1], limit="400 models")) == HOLDS
    assert word(verdicts.above(false[0], se=false[1], limit="400 models")) == FAILS
    # pure noise: the interval straddles 0, so the data cannot separate the claim from its negation
    mean, se = noise
    if abs(mean) < verdicts.SE_MULTIPLIER * se:  # a 2-SE interval covers 0 for these seeds
        result = verdicts.above(mean, se=se, limit="12 models")[0]
        assert result.startswith(INCONCLUSIVE) and "12 models" in result
    # with plenty of noise-only data and a margin that matters, the data excludes the claim
    big = planted(0.0, 4000, seed)
    assert word(verdicts.above(big[0], se=big[1], margin=0.2, limit="4,000 models")) == FAILS
    # below mirrors above
    assert word(verdicts.below(false[0], se=false[1], limit="400 models")) == HOLDS
    assert word(verdicts.below(true[0], se=true[1], limit="400 models")) == FAILS


def test_above_with_a_size_and_headroom():
    # "+10 points" claimed; the data's headroom (oracle minus best model) is 4.5: it cannot pass
    text, rule = verdicts.above(-0.4, se=0.7, size=10.0, headroom=4.5, limit="4.5 points of headroom")
    assert text.startswith(f"{INCONCLUSIVE}: 4.5 points of headroom") and "by at least 10" in rule
    assert word(verdicts.above(3.0, se=0.5, size=10.0, limit="x")) == DIRECTION  # ahead, far short of 10
    assert word(verdicts.above(11.0, se=0.4, size=10.0, limit="x")) == HOLDS
    assert word(verdicts.above(-0.2, se=0.4, size=10.0, limit="x")) == FAILS  # 10 points excluded
    with pytest.raises(ValueError, match="wrong side"):
        verdicts.above(1.0, se=0.1, size=-1.0, limit="x")


@pytest.mark.parametrize("seed", [0, 1])
def test_matches_on_planted_values(seed):
    paper = 74.7
    same, off = planted(paper, 900, seed), planted(paper + 3.0, 900, seed)
    assert word(verdicts.matches(same[0], se=same[1], value=paper, margin=0.5, limit="900 questions")) in (HOLDS, NOISE)
    assert word(verdicts.matches(off[0], se=off[1], value=paper, margin=0.5, limit="900 questions")) == FAILS
    assert word(verdicts.matches(off[0], se=off[1], value=paper, margin=0.5, limit="q", sign=1)) == DIRECTION
    thin = planted(paper, 9, seed)  # an interval wider than the margin cannot say "matches"
    result = verdicts.matches(thin[0], se=thin[1], value=paper, margin=0.2, limit="9 questions")[0]
    assert result.startswith(f"{INCONCLUSIVE}: 9 questions")
    # a directional claim ('lowers accuracy, by 12 points') on 5 benchmarks: the sign beyond noise, the size not
    assert verdicts.matches(9.3, se=2.8, value=12.0, margin=2.0, limit="x", sign=1)[0].startswith(DIRECTION)
    assert verdicts.matches(5.0, se=2.8, value=12.0, margin=2.0, limit="5 benchmarks", sign=1)[0].startswith(
        f"{INCONCLUSIVE}: 5 benchmarks"
    )
    # an interval that misses value +- margin refutes the size, however wide it is (and the sign is not shown)
    assert word(verdicts.matches(1.0, se=2.8, value=12.0, margin=2.0, limit="5 benchmarks", sign=1)) == FAILS
    wide_off = verdicts.matches(0.665, se=0.009, value=(0.73, 0.77), margin=0.01, limit="x", sign=1, null=0.5)[0]
    assert wide_off.startswith(DIRECTION) and "misses the size" in wide_off and "wider" not in wide_off
    # narrow, but straddling the margin's edge: neither shown nor refuted
    assert verdicts.matches(0.45, se=0.05, value=0.0, margin=0.5, limit="x")[0].startswith(INCONCLUSIVE)
    auc = verdicts.matches(0.66, se=0.01, value=(0.73, 0.77), margin=0.01, limit="x", sign=1, null=0.5)
    assert auc[0].startswith(DIRECTION) and "> 0.5" in auc[1]
    # onboarding on a flat curve: 1% of the answers (the floor) matches joint training too, so no power
    flat = verdicts.matches(-0.08, se=0.19, value=0.0, margin=0.5, floor=-0.3, floor_se=0.1, limit="30 models")
    assert flat[0].startswith(f"{INCONCLUSIVE}: 30 models") and "no power" in flat[0]
    steep = verdicts.matches(-0.08, se=0.19, value=0.0, margin=0.5, floor=-3.3, floor_se=0.3, limit="30 models")
    assert steep[0] == HOLDS
    # an interval inside value +- margin is equivalence shown: holds
    assert word(verdicts.matches(74.6, se=0.05, value=paper, margin=0.5, limit="x")) == HOLDS
    # the paper's value inside a narrow interval that still reaches past the margin: within noise
    assert word(verdicts.matches(75.0, se=0.2, value=paper, margin=0.5, limit="x")) == NOISE


def test_bound_is_tested_as_a_bound():
    # App. D: excess log loss O(d/n), a log-log slope at or below -1
    assert word(verdicts.bound(-1.9, se=0.1, bound=-1.0, margin=0.1, limit="x")) == HOLDS
    assert word(verdicts.bound(-0.5, se=0.1, bound=-1.0, margin=0.1, limit="x")) == FAILS
    assert word(verdicts.bound(-0.99, se=0.04, bound=-1.0, margin=0.1, limit="x")) == NOISE
    assert verdicts.bound(-0.99, se=0.5, bound=-1.0, margin=0.1, limit="3 sizes")[0].startswith(INCONCLUSIVE)
    assert word(verdicts.bound(0.3, se=0.1, bound=0.0, side=">=", margin=0.1, limit="x")) == HOLDS


@pytest.mark.parametrize("seed", [0, 1])
def test_between_null_and_perfect(seed):
    rng = np.random.default_rng(seed)
    null = rng.normal(0.08, 0.005, 50)  # scores of random partitions
    band = (null.mean() + verdicts.SE_MULTIPLIER * null.std(ddof=1), 0.9)
    partial, chance = planted(0.3, 500, seed), planted(0.08, 500, seed)
    assert word(verdicts.between(partial[0], se=partial[1] / 10, low=band[0], high=band[1], limit="x")) == HOLDS
    assert word(verdicts.between(chance[0], se=chance[1] / 100, low=band[0], high=band[1], limit="x")) == FAILS
    wide = verdicts.between(0.3, se=0.2, low=band[0], high=band[1], limit="5 starts")[0]
    assert wide.startswith(f"{INCONCLUSIVE}: 5 starts")


def test_peak_judges_a_curve_on_gaps_paired_over_seeds():
    ds = [8, 16, 32, 64, 128, 256, 512, 1024]
    rng = np.random.default_rng(0)
    seed_shift = rng.normal(0, 1.0, 3)  # each seed's split moves the whole curve: paired gaps cancel it

    def curve(shape, noise):
        return {d: list(shape(d) + seed_shift + rng.normal(0, noise, 3)) for d in ds}

    flat = curve(lambda d: 68.3, 0.1)
    assert verdicts.peak(flat, at=256, limit="a flat curve, 3 seeds")[0].startswith(INCONCLUSIVE)
    peaked = curve(lambda d: 70 - 0.002 * (d - 256) ** 2 / 100, 0.01)
    assert word(verdicts.peak(peaked, at=256, limit="x")) == HOLDS
    assert word(verdicts.peak(peaked, at=8, limit="x")) == FAILS
    tied = {d: [60.0, 60.5, 59.5] for d in ds} | {128: [69.9, 70.4, 69.6], 256: [70.0, 70.2, 69.9]}
    assert word(verdicts.peak(tied, at=128, limit="x")) == INCONCLUSIVE  # a top shared with 256: no peak shown
    # the same curve judged on unpaired points would be flat: the seeds' shifts (sd 1) swamp it
    assert word(verdicts.peak(peaked, at=256, limit="x")) != INCONCLUSIVE
    with pytest.raises(ValueError, match="not a point"):
        verdicts.peak(peaked, at=100, limit="x")
    with pytest.raises(ValueError, match="one value per seed"):
        verdicts.peak({8: [1.0, 2.0], 16: [1.0]}, at=8, limit="x")


def test_rules_refuse_bad_input():
    with pytest.raises(ValueError, match="limit="):
        verdicts.above(1.0, se=0.1, limit="")
    with pytest.raises(ValueError, match="one of them"):
        verdicts.above(1.0, limit="x")
    with pytest.raises(ValueError, match="one of them"):
        verdicts.above(1.0, se=0.1, interval=(0, 2), limit="x")
    with pytest.raises(ValueError, match="se="):
        verdicts.above(1.0, se=-0.1, limit="x")
    with pytest.raises(ValueError, match="margin="):
        verdicts.matches(1.0, se=0.1, value=1.0, margin=0.0, limit="x")
    with pytest.raises(ValueError, match="low <= high"):
        verdicts.above(1.0, interval=(2.0, 0.0), limit="x")
    # an interval given directly (a Fisher-z rho interval) is read as it is
    lo, hi = verdicts.rho_interval(-0.60, 5)
    assert verdicts.below(-0.60, interval=(lo, hi), limit="5 benchmarks")[0].startswith(INCONCLUSIVE)


def test_declared_rows_are_judged_with_their_source(tmp_path, monkeypatch):
    rows = [
        dict(
            claim="a (Table 5)",
            source="paper: Table 5",
            paper="Table 5: 0.346",
            ours="0.30",
            data="d",
            setting="s",
            rule="above",
            estimate=0.3,
            se=0.01,
            bound=0.1,
            limit="x",
        ),
        dict(
            claim="b",
            source="v2 summary",
            paper="v2 summary: +10",
            ours="-0.4",
            data="d",
            setting="s",
            rule="above",
            estimate=-0.4,
            se=0.7,
            size=10.0,
            headroom=4.5,
            limit="4.5 points of headroom",
        ),
        dict(
            claim="c",
            source="this book",
            paper="not a claim of the paper",
            ours="1",
            data="d",
            setting="s",
            rule="untestable",
            why="one encoder",
        ),
        dict(
            claim="d (Prop. 1)",
            source="mathematics",
            paper="a proof",
            ours="0 violations",
            data="d",
            setting="s",
            rule="bound",
            estimate=0.0,
            se=0.0,
            bound=0.0,
            margin=0.0,
            limit="x",
        ),
    ]
    claims = [verdicts.judge(r) for r in rows]
    assert [verdicts.word(c.verdict) for c in claims] == [HOLDS, INCONCLUSIVE, "not testable", HOLDS]
    assert claims[0].rule.startswith("one-sided: estimate > 0.1")
    with pytest.raises(ValueError, match="source"):
        verdicts.judge({**rows[0], "source": "the paper"})
    with pytest.raises(ValueError, match="place"):
        verdicts.judge({**rows[0], "source": "paper"})
    with pytest.raises(ValueError, match="quote"):
        verdicts.judge({**rows[0], "source": "IRT-Net: state of the art"})
    with pytest.raises(ValueError, match="rule="):
        verdicts.judge({**rows[0], "rule": "roughly"})
    with pytest.raises(ValueError, match="lacks"):
        verdicts.judge({k: v for k, v in rows[0].items() if k != "source"})
    with pytest.raises(TypeError, match="rule 'above'"):
        verdicts.judge({**rows[0], "value": 3})
    pytest.importorskip("myst_nb")
    monkeypatch.setenv("JEIRT_CLAIMS_DIR", str(tmp_path))
    verdicts.show("aa_paper_vs_book", rows[:2])
    verdicts.show("bb_paper_vs_book", rows[2:])
    written = json.loads((tmp_path / "aa.json").read_text())["claims"]
    assert written[1]["source"] == "v2 summary" and written[1]["verdict"].startswith(INCONCLUSIVE)
    counts = verdicts.tally(tmp_path, {"aa": "book/aa", "bb": "book/bb"})
    assert list(counts) == ["paper", "v2 summary", "this book", "mathematics"]
    assert counts["paper"][HOLDS] == 1 and sum(counts["paper"].values()) == 1
    assert counts["mathematics"][HOLDS] == 1
    snapshot = verdicts.save_claims(tmp_path, tmp_path / "snap" / "claims.json", "test build")
    monkeypatch.setattr(verdicts, "PAGES", {"aa": "book/aa", "bb": "book/bb"})
    assert verdicts.main(["tally", str(snapshot)]) == 0


def test_the_spreads_verdicts_read():
    """The library helpers behind the pages' SEs: each widens with less data and refuses too little."""
    import pandas as pd

    from jeirt.analysis import geometry, taxonomy
    from jeirt.baselines import irt_diagnostics as diag
    from jeirt_book import dimension
    from jeirt_book.experiments import onboarding as onb

    assert diag.share_gap_se(0.1, 0.1, 100) > diag.share_gap_se(0.1, 0.1, 10_000) > 0
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 8)) * np.array([3.0, 1, 1, 1, 1, 1, 1, 1])  # one strong component
    assert 0 < geometry.first_component_se(x[:20]) and geometry.first_component_se(x) < 0.1
    with pytest.raises(ValueError, match="at least 3"):
        geometry.first_component_se(x[:2])
    classes = np.repeat(np.arange(4), 50)
    points = np.eye(4)[classes] + rng.normal(0, 0.3, (200, 4))  # clusters that follow the classes
    starts = taxonomy.agreement_over_starts(points, classes, 4, starts=3)
    assert len(starts) == 3 and (starts["learned"]["nmi"] > starts["random"]["nmi"] + 0.3).all()
    n = np.array([8, 16, 32, 64, 128, 256])
    summary = pd.DataFrame({"items": n, "kl": 2.0 / n * np.exp(rng.normal(0, 0.05, 6))})
    slope, se = onb.rate_slope(summary, 1, 512), onb.rate_slope_se(summary, 1, 512)
    assert abs(slope + 1) < 3 * se + 0.05 and 0 < se < 0.1
    assert np.isnan(onb.rate_slope_se(summary, 1, 16))  # two budgets: no residuals
    # the full profile's d = 64 has only 256 and 512 in 4d..512: the rate is judged at the largest d with three
    assert onb.rate_dimension({4: summary, 16: summary, 64: summary}, hi=256) == 16
    with pytest.raises(ValueError, match="three budgets"):
        onb.rate_dimension({64: summary}, hi=256)
    runs = pd.DataFrame(
        {
            "encoder": "e",
            "d": np.repeat([8, 16], 3),
            "seed": [0, 1, 2] * 2,
            "accuracy": [0.6, 0.62, 0.61, 0.7, 0.7, 0.7],
        }
    )
    assert list(dimension.per_seed(runs, "e", 16)) == pytest.approx([70.0, 70.0, 70.0])
    # a gap paired over seeds: the mean, its SE over the seeds and seeds - 1 df (t quantiles)
    gap = dimension.per_seed(runs, "e", 16) - dimension.per_seed(runs, "e", 8)
    spread = verdicts.paired_over_seeds(gap)
    assert spread == pytest.approx({"estimate": 9.0, "se": 100 * 0.01 / np.sqrt(3), "df": 2})
    assert verdicts.multiplier(2) == pytest.approx(4.303, abs=1e-3) and verdicts.multiplier(None) == 2.0
    with pytest.raises(ValueError, match="d = 32"):
        dimension.per_seed(runs, "e", 32)


def test_declared_table_reads_its_numbers_from_stats():
    stats = {
        "gap": verdicts.Stat(3.2, se=0.4, spec=".1f", unit=" points", label="gap", note="own 95.1"),
        "peaks": verdicts.Stat(2.0, interval=(2.0, 3.0), spec=".0f", label="peaks", note="5 benchmarks"),
        "bare": verdicts.Stat(0.759, label="AUC"),
    }
    shared = dict(data="mmlu_pro, minilm", setting="smoke profile")
    rows = verdicts.declare(
        [
            dict(claim="a (Table 6)", source="paper: Table 6", paper="T6: 35", stat="gap", rule="above", limit="x"),
            dict(claim="b", source="this book", paper="p", stat="peaks", rule="between", low=1.5, high=4.5, limit="x"),
            dict(claim="c", source="this book", paper="p", stat="bare", rule="untestable", why="one encoder"),
        ],
        stats,
        **shared,
    )
    assert rows[0]["ours"] == "gap 3.2 +- 0.4 points (own 95.1)"
    assert (rows[0]["estimate"], rows[0]["se"], rows[0]["data"]) == (3.2, 0.4, "mmlu_pro, minilm")
    assert rows[1]["ours"] == "peaks 2 (interval 2 to 3; 5 benchmarks)" and rows[1]["interval"] == (2.0, 3.0)
    assert "estimate" not in rows[2] and rows[2]["ours"] == "AUC 0.759"
    words = [verdicts.word(verdicts.judge(r).verdict) for r in rows]
    assert words == [HOLDS, HOLDS, "not testable"]
    # the gap's sign flipped: the same declaration now fails, the numbers come from the stat
    flipped = verdicts.declare([{**rows[0], "stat": "gap"}], {"gap": verdicts.Stat(-3.2, se=0.4)})
    assert verdicts.word(verdicts.judge(flipped[0]).verdict) == FAILS
    # a decided row on a number without a spread, an unknown stat, a shared key that is no row key
    with pytest.raises(ValueError, match="no spread"):
        verdicts.declare([dict(claim="d", stat="bare", rule="above", limit="x")], stats)
    with pytest.raises(KeyError, match="not among"):
        verdicts.declare([dict(claim="e", stat="nope", rule="above")], stats)
    with pytest.raises(ValueError, match="row keys"):
        verdicts.declare([], stats, why="x")
    with pytest.raises(TypeError, match="NoVerdict"):
        verdicts.declare([dict(claim="f", stat="w", rule="above")], {"w": "not fitted"})
    # a statistic the data cannot decide turns its row, whatever its rule, into not testable or unresolved
    words = {
        "w": verdicts.NoVerdict("not fitted (one encoder)", "the smoke profile fits one encoder", profile="smoke"),
        "one": verdicts.NoVerdict("gain 0.11", "one seed: no spread", limit="1 seed"),
    }
    base = dict(source="this book", paper="p", data="d", setting="s", rule="above", bound=0.5)
    judged = [
        verdicts.judge(r)
        for r in verdicts.declare(
            [base | dict(claim="f", stat="w"), base | dict(claim="g", stat="one")], words, limit="x"
        )
    ]
    assert judged[0].verdict == "not testable in the smoke profile: the smoke profile fits one encoder"
    assert judged[0].ours == "not fitted (one encoder)" and judged[0].inputs["rule"] == "untestable"
    assert judged[1].verdict == "inconclusive here: 1 seed (one seed: no spread)"
    # a number without a spread decides nothing: 'unresolved' says so, with the reason
    text, _ = verdicts.unresolved("one simulated draw", "no seeds to compare")
    assert text == "inconclusive here: one simulated draw (no seeds to compare)"
    with pytest.raises(ValueError, match="not both"):
        verdicts.Stat(1.0, se=0.1, interval=(0.0, 2.0))


def test_a_page_statistic_carries_its_spread_into_the_verdict():
    # Table 5's asymmetry over 8 k-means starts: homogeneity 0.05 above completeness (beyond the random
    # partition's gap, which is 0), with start-to-start noise; the page's row must hold on it, and fail
    # when the asymmetry is planted the other way
    from jeirt_book import taxonomy

    rng = np.random.default_rng(0)
    cols = pd.MultiIndex.from_product([["learned", "random"], list(taxonomy.MEASURES)])

    def starts(sign: float) -> pd.DataFrame:
        values = rng.normal(0.3, 0.005, (8, len(cols)))
        frame = pd.DataFrame(values, columns=cols)
        frame[("learned", "homogeneity")] = frame[("learned", "completeness")] + sign * 0.05
        frame[("random", "homogeneity")] = frame[("random", "completeness")]
        return frame

    row = dict(claim="h > c", source="this book", paper="p", data="d", setting="s", stat="homogeneity gap")
    for sign, word in ((1.0, HOLDS), (-1.0, FAILS)):
        stats = taxonomy.claim_stats(starts(sign), k=56, comparable=None)
        gap = stats["homogeneity gap"]
        assert gap.value == pytest.approx(sign * 0.05) and gap.se < 0.01
        judged = verdicts.judge(verdicts.declare([row | dict(rule="above", limit="8 starts")], stats)[0])
        assert verdicts.word(judged.verdict) == word and "+-" in judged.ours


def test_the_readme_quotes_the_full_builds_tally():
    """The README's count of the paper's claims is the committed full build's (`tally`), word for word."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    counts = verdicts.tally(root / "results" / "claims_full_mmlu_pro.json")["paper"]
    words = {
        "holds": "hold",
        "matches within noise": "match within noise",
        "holds in direction": "hold in direction",
        "does not hold": "do not hold",
        "inconclusive here": "are inconclusive here",
        "not testable": "not testable here",
    }
    parts = [f"{counts[kind]} {said}" for kind, said in words.items() if counts[kind]]
    sentence = f"counts {sum(counts.values())} of the paper's own claims: " + ", ".join(parts[:-1])
    readme = " ".join((root / "README.md").read_text().split())
    assert f"{sentence}, {parts[-1]}" in readme, f"the README should say: {sentence}, {parts[-1]}"


def test_every_decided_row_can_turn_on_data_of_its_shape():
    """A row that holds can fail on data of its shape, and one that fails can hold: the rule moved along
    its estimate (its spread and thresholds kept) reaches the opposite verdict; `show` refuses a row that
    cannot turn."""
    holds = verdicts.judge(
        dict(
            claim="a",
            source="this book",
            paper="p",
            ours="o",
            data="d",
            setting="s",
            rule="above",
            estimate=0.41,
            se=0.05,
            df=2,
            limit="3 seeds",
        )
    )
    assert holds.inputs == {"rule": "above", "estimate": 0.41, "se": 0.05, "df": 2, "limit": "3 seeds"}
    assert verdicts.word(holds.verdict) == HOLDS and FAILS in verdicts.reachable(holds.inputs)
    assert verdicts.can_turn(holds)
    equal = verdicts.judge(
        dict(
            claim="b",
            source="this book",
            paper="p",
            ours="o",
            data="d",
            setting="s",
            rule="matches",
            estimate=-0.2,
            se=0.05,
            df=19,
            value=0.0,
            margin=0.5,
            limit="20 seeds",
        )
    )
    assert verdicts.word(equal.verdict) == HOLDS and verdicts.reachable(equal.inputs) >= {HOLDS, FAILS, INCONCLUSIVE}
    curve = {8: [60.0, 60.5, 59.5], 16: [61.0, 61.4, 60.2], 256: [70.0, 70.2, 69.9]}
    peaked = verdicts.judge(
        dict(
            claim="c",
            source="this book",
            paper="p",
            ours="o",
            data="d",
            setting="s",
            rule="peak",
            curve=curve,
            at=256,
            limit="3 seeds",
        )
    )
    assert verdicts.word(peaked.verdict) == HOLDS and FAILS in verdicts.reachable(json.loads(json.dumps(peaked.inputs)))
    # a row whose rule can only hold: an interval given as (0, 0) on a one-sided claim with bound -1 and a
    # width of 0 still turns; but a 'between' band narrower than the interval cannot hold, only fail or wait
    narrow = dict(estimate=2.0, interval=[1.0, 3.0], low=1.5, high=2.5, limit="x", rule="between")
    assert HOLDS not in verdicts.reachable(narrow)
    failed = verdicts.judge(
        dict(
            claim="d",
            source="this book",
            paper="p",
            ours="o",
            data="d",
            setting="s",
            rule="between",
            estimate=2.0,
            interval=(3.2, 3.4),
            low=1.5,
            high=2.5,
            limit="x",
        )
    )
    assert verdicts.word(failed.verdict) == FAILS and not verdicts.can_turn(
        verdicts.Claim(**{**dataclasses.asdict(failed), "inputs": {**failed.inputs, "interval": [0.0, 4.0]}})
    )


def test_clustered_se_counts_seeds_and_models_as_clusters():
    """(seed, model) rows share their seed's fits and their model: the SE is clustered by both, on
    min(seeds, models) - 1 df; pairs counted as independent would be far too narrow."""
    rng = np.random.default_rng(0)
    nested = pd.MultiIndex.from_tuples([(s, f"m{s}_{m}") for s in range(3) for m in range(10)], names=["seed", "model"])
    seed_effect = np.repeat([1.0, -1.0, 0.5], 10)
    values = pd.Series(seed_effect + rng.normal(0, 0.1, 30), index=nested)
    got = verdicts.clustered_se(values)
    per_seed = values.groupby(level="seed").mean()
    assert got["df"] == pytest.approx(2, abs=0.1) and got["estimate"] == pytest.approx(values.mean())
    assert got["se"] == pytest.approx(per_seed.std(ddof=1) / np.sqrt(3), rel=1e-9)  # nested: the seeds' means
    assert got["se"] > 3 * verdicts.mean_and_se(values)[1]  # the pairs' SE misses the seeds' noise
    crossed = pd.MultiIndex.from_product([range(3), [f"m{m}" for m in range(11)]], names=["seed", "model"])
    model_effect = np.tile(rng.normal(0, 1.0, 11), 3)
    values = pd.Series(model_effect + rng.normal(0, 0.05, 33), index=crossed)
    got = verdicts.clustered_se(values)
    per_model = values.groupby(level="model").mean()
    assert got["se"] >= per_model.std(ddof=1) / np.sqrt(11) - 1e-12  # the same models each seed: their spread
    # Satterthwaite's df: a large seed part leaves the seeds' 2 df; with no seed part the models' many
    assert got["df"] > 5  # the models' spread, no seed part: near the 11 models' 10 df
    with pytest.raises(ValueError, match="2 of each"):
        verdicts.clustered_se(values.loc[[0]])
    with pytest.raises(ValueError, match="MultiIndex"):
        verdicts.clustered_se(pd.Series([1.0, 2.0]))


def test_t_quantiles_and_bonferroni_widen_intervals():
    # 3 seeds: a gap of 2.7 SE held under 2 SE; under t with 2 df it is inconclusive
    assert verdicts.above(0.41, se=0.15, limit="3 seeds")[0] == HOLDS
    text, rule = verdicts.above(0.41, se=0.15, df=2, limit="3 seeds")
    assert text.startswith(INCONCLUSIVE) and "t, 2 df" in rule
    assert verdicts.multiplier(None, tests=5) == pytest.approx(2.576, abs=1e-3)
    assert verdicts.above(0.5, se=0.2, tests=5, limit="5 benchmarks")[0].startswith(INCONCLUSIVE)
    assert verdicts.multiplier(1000) == verdicts.SE_MULTIPLIER  # a large sample keeps 2
    with pytest.raises(ValueError, match="df="):
        verdicts.multiplier(0)
    with pytest.raises(ValueError, match="interval= is read as it is"):
        verdicts.above(1.0, interval=(0.5, 1.5), df=2, limit="x")
    stat = verdicts.Stat(0.41, se=0.15, df=2, label="gap")
    assert stat.spread() == {"estimate": 0.41, "se": 0.15, "df": 2.0} and "SE on 2 df" in stat.text()
    # a premise the claim rests on: no verdict while it is not above 0
    gated = verdicts.above(-0.1, se=0.1, given=("the mean gain", -0.2, 0.2), limit="33 models")[0]
    assert gated.startswith(INCONCLUSIVE) and "the mean gain is not above 0" in gated


def test_the_calibration_table_meets_its_bounds():
    """Each kind of rule on planted worlds, 200 draws: "holds" at most 5% on the claim's boundary and at
    least 80% far from it, "does not hold" at least 80% where the claim is false by as much; the old
    readings (2 SE on 3 seeds, (seed, model) pairs as independent) break the boundary bound."""
    from jeirt_book import calibration

    table = calibration.calibrate(200, seed=0)
    checked = table[table["met"].notna()]
    assert checked["met"].all(), checked[~checked["met"].astype(bool)].to_string()
    assert set(table["rule kind"]) >= {
        "one-sided",
        "equivalence within a margin",
        "bound",
        "direction",
        "excess over a null",
    }
    before = table[table["design"].str.endswith("[before]") & (table["world"] == "boundary")]
    assert (before.set_index("design")["holds"] > calibration.BOUNDARY_MAX).sum() >= 2
    assert "holds" in calibration.table_text(table)


def test_compare_claims_lists_every_row_that_moved(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "compare_claims", Path(__file__).resolve().parents[1] / "scripts" / "compare_claims.py"
    )
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)

    def build(folder, verdict, extra=()):
        rows = [
            {
                "claim": "a (Table 1)",
                "paper": "p",
                "ours": "1",
                "data": "d",
                "setting": "s",
                "source": "paper: Table 1",
                "verdict": verdict,
                "rule": "r",
            },
            {
                "claim": "b (Table 2)",
                "paper": "p",
                "ours": "2",
                "data": "d",
                "setting": "s",
                "source": "paper: Table 2",
                "verdict": "inconclusive here: x (interval 0.1 to 0.9)",
                "rule": "r",
            },
            *extra,
        ]
        folder.mkdir()
        (folder / "aa.json").write_text(json.dumps({"name": "aa_paper_vs_book", "claims": rows}))
        return folder

    pages = {"aa": "book/aa"}
    same = build(tmp_path / "a", "holds")
    moved = build(tmp_path / "b", "does not hold")
    renumbered = build(tmp_path / "c", "holds")  # same categories, other numbers
    (renumbered / "aa.json").write_text((renumbered / "aa.json").read_text().replace("0.1 to 0.9", "0.2 to 0.8"))
    original = verdicts.PAGES
    try:
        verdicts.PAGES = pages
        assert compare.main([str(same), str(renumbered)]) == 0
        assert "2 rows, 0 moved" in capsys.readouterr().out
        assert compare.main([str(same), str(moved)]) == 1
        out = capsys.readouterr().out
        assert "1 moved" in out and "a (Table 1)" in out and "holds -> does not hold" in out
        assert compare.main([str(same), str(tmp_path / "nope")]) == 2
        # a page that one build lacks (an older build, a new page): its rows are in the other only
        verdicts.PAGES = pages | {"bb": "book/bb"}
        newer = build(tmp_path / "d", "holds")
        (newer / "bb.json").write_text((newer / "aa.json").read_text().replace("a (Table 1)", "c (Table 3)"))
        assert compare.main([str(same), str(newer)]) == 1
        out = capsys.readouterr().out
        assert "4 rows, 2 moved" in out and "(no row) -> holds" in out
        (tmp_path / "empty").mkdir()
        assert compare.main([str(same), str(tmp_path / "empty")]) == 2
    finally:
        verdicts.PAGES = original


def test_claims_file_rows_fill_in_and_repeat():
    """claims.yml's rows: placeholders filled from the page's values (a lone one keeps its type), the
    paper's numbers read by key, a `for` row repeated per item and a `rows:` group repeated together."""
    from jeirt_book import claims, paper

    text = """
aa:
  - claim: "a gap on {name}"
    source: "paper: Table 1"
    paper: {quote: [t1.modernbert.mean.100, t1.modernbert.mean.all], sep: " vs ", note: " ({extra})"}
    stat: "gap {name}"
    rule: matches
    value: 0.0
    margin: {paper: s33.within}
    bound: "{bound}"
    for: datasets
  - for: datasets
    rows:
      - {claim: "first {name}", source: this book, paper: {not_claimed: x}, stat: "s {name}", rule: above}
      - {claim: "... second {name}", source: this book, paper: {not_claimed: x}, stat: "t {name}", rule: above}
"""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "claims.yml"
        path.write_text(text)
        values = {"datasets": [{"name": "x"}, {"name": "y"}], "extra": "more", "bound": (1.0, 2.0)}
        rows = claims.rows("aa", values, path)
        assert [r["claim"] for r in rows] == [
            "a gap on x",
            "a gap on y",
            "first x",
            "... second x",
            "first y",
            "... second y",
        ]
        assert rows[0]["margin"] == paper.value("s33.within") and rows[0]["bound"] == (1.0, 2.0)
        assert (
            rows[0]["paper"] == paper.quote("t1.modernbert.mean.100", "t1.modernbert.mean.all", sep=" vs ") + " (more)"
        )
        with pytest.raises(KeyError, match="datasets"):
            claims.rows("aa", {}, path)
        with pytest.raises(KeyError, match="no claims for 'zz'"):
            claims.declared("zz", path)
        path.write_text("bb:\n  - {claim: c, null: 0.5}\n")
        with pytest.raises(ValueError, match="no words"):
            claims.declared("bb", path)
    # every page's rows in the book's own file name a source and a rule
    for prefix in verdicts.PAGES:
        for spec in claims.declared(prefix):
            for row in spec.get("rows", [spec]):
                assert row.get("source") and row.get("rule") in verdicts.RULES, (prefix, row.get("claim"))


def test_a_row_with_the_default_bound_can_turn():
    """A row that holds far above the default bound of 0 (no bound= given) still reaches 'does not hold'
    when its estimate moves: the rule's defaults are edges too."""
    row = {"rule": "above", "estimate": 16.2, "se": 3.9, "limit": "crux: 300 questions"}
    assert verdicts.word(verdicts.rejudge(row)) == HOLDS and FAILS in verdicts.reachable(row)


def test_the_committed_builds_rows_turn_and_replay():
    """Every row of the committed builds' claim files that records what its rule read (`inputs`, which
    builds since the rules were calibrated write) gives the same verdict again from its inputs, and,
    where it decided, its rule can return the opposite verdict on data of its shape."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "results"
    for path in sorted(root.glob("claims_*.json")):
        for page in json.loads(path.read_text())["pages"].values():
            for row in page["claims"]:
                if not row.get("inputs"):
                    continue  # a row from a build before its inputs were recorded
                claim = verdicts.Claim(**row)
                assert verdicts.word(verdicts.rejudge(row["inputs"])) == verdicts.word(row["verdict"]), row["claim"]
                assert verdicts.can_turn(claim), f"{path.name}: {row['claim']} cannot turn"
