"""The methods every report names, with their references (issue 41 item 9): what "About this report" lists and
docs/statistics.md explains, and the null hypothesis of the task-level test in words. Pure text."""

from __future__ import annotations

NULL_IN_WORDS = ("equal arm means: the mean task difference is 0. The test is exact when there is no effect on any "
                 "task (within each task the arms' results are interchangeable, so each task difference is as "
                 "likely to have either sign); when the arms differ in spread or shape it is asymptotically valid, "
                 "with a skewness correction from 10 tasks on")
"""The task-level test's null hypothesis in words (JSON ``test.null``)."""

STATISTIC = ("mean task difference under sign flips (exact below 17 tasks; studentizing it orders the flips "
             "identically, since a flip keeps the sum of squares) and, from 10 tasks, Hall's skewness-corrected "
             "studentized mean under the bootstrap (bootstrap-t); the test rejects only when both parts do")
"""The task-level test's statistic (JSON ``test.statistic``)."""

def test_name(order: str) -> str:
    """What the task-level test is called for a ledger whose arms' order is ``order`` (its ``design.order``;
    ``counterbalanced`` when absent; issue 41 item 8): a randomization test when the order was randomised, a
    permutation test otherwise (JSON ``test.name``)."""
    return "randomization test" if order == "randomized" else "permutation test"


def order_note(order: str, seed: int | None) -> str:
    """The sentence "About this report" says of the arms' order (issue 41 item 8)."""
    if order == "randomized":
        return (f"The arms' order within each task and repetition was randomised by the design (seeded, orderSeed "
                f"{seed}; each attempt's position is in the ledger and verified), so the sign-flip test is a "
                "randomization test: its null distribution is the design's own.")
    return ("The arms' order within each task and repetition is counterbalanced (the seed's rule), not "
            "randomised, so the test is a permutation test resting on the assumption that order does not matter "
            "rather than on the design (design.order \"randomized\" makes it a randomization test).")


METHOD_REFERENCES = (
    "Task-level test: Fisher's sign-flip (randomization) test over the task differences (Fisher 1935, The Design "
    "of Experiments), exact when no task has an effect; from 10 tasks it rejects only when the bootstrap-t of "
    "Hall's skewness-corrected studentized mean also rejects (Hall 1992, JRSS B 54; Efron and Tibshirani 1993, "
    "An Introduction to the Bootstrap, chapter 12), which keeps the test of equal means near its level when the "
    "arms differ in spread and skew.",
    "Intervals: inversion of the same test, the shifts it does not reject (Lehmann and Romano, Testing "
    "Statistical Hypotheses, 3rd ed., 2005, sections 3.5 and 5.9); ratios by Fieller's construction "
    "(Fieller 1954) with the sign-flip test.",
    "Multiplicity: Holm's step-down procedure (Holm 1979, Scandinavian Journal of Statistics 6) over the secondary "
    "metrics, and over the agents' primary p-values when a study has several agents.",
    "Per-arm rates: Clopper–Pearson (1934, Biometrika 26) at the Korn–Graubard effective sample size over task "
    "clusters (Korn and Graubard 1998, Survey Methodology 24).",
    "Repositories: a permutation test of heterogeneity across repositories and, with enough repositories, the "
    "sign-flip test with the repository as the unit (cluster randomization inference).",
    "Variance components: method-of-moments (ANOVA) estimators of a two-way random-effects model (Searle, "
    "Casella and McCulloch, Variance Components, 1992).",
    "Sequential design: an e-process bounded by Ville's inequality (Ville 1939) from the betting construction "
    "(Waudby-Smith and Ramdas 2024, JRSS B 86; Shafer 2021, JRSS A 184; Shafer and Vovk 2019): one-sided in the "
    "declared direction, the sign-flip likelihood-ratio bet tanh(c z) on each task difference over the mean size "
    "so far, with one bet size c fixed from maxTasks and alpha before any data and recorded as betSize "
    "(magnitudeBet; ledgers that record magnitudeMixture mixed c = 0.5, 0.7 on root-mean-square-standardized "
    "differences, a mixture of test martingales being one), its confidence sequence by inversion (Howard, "
    "Ramdas, McAuliffe and Sekhon 2021, Annals of Statistics 49).",
    "Simulated operating characteristics (type-I error, coverage, power) are in docs/benchmarks.md "
    "(bench/bench_coverage.py, bench/bench_sequential.py, bench/bench_sequential_power.py).",
)
"""One sentence per method, each with its reference."""
