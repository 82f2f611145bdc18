"""The anytime-valid confidence sequence (issue 41 item 7): the e-process inverted holds the true shift in at
least 1 - alpha of simulated studies at a data-dependent stop, and excludes 0 when the evidence stopped a study."""

from __future__ import annotations

import numpy as np

from agentstudy.protocol.sequential import e_process
from agentstudy.protocol.sequential_confidence import confidence_sequence


def test_the_sequence_holds_the_true_shift_at_a_greedy_stop() -> None:
    generator = np.random.default_rng(41)
    misses, studies = 0, 300
    for _ in range(studies):
        differences = generator.standard_t(3, size=30) + 2.0  # symmetric about 2, heavy-tailed
        wealth = e_process(differences, "higher")
        stop = int(np.argmax(wealth >= 20)) + 1 if np.any(wealth >= 20) else 30  # stop at the first efficacy look
        sequence = confidence_sequence(differences[:stop].tolist(), "higher", 0.05)
        low = -np.inf if sequence.low is None else sequence.low
        high = np.inf if sequence.high is None else sequence.high
        misses += not low <= 2.0 <= high
    assert misses / studies <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / studies)


def test_a_missing_difference_is_skipped_and_one_sign_excludes_zero() -> None:
    differences: list[float | None] = [5.0, 4.0, None, 6.0, 5.5, 4.5, 5.0, 6.5, 5.2, 4.8, 5.1, 6.0, 5.9, 4.4]
    sequence = confidence_sequence(differences, "higher", 0.05)
    assert sequence.estimate is not None and abs(sequence.estimate - np.mean([d for d in differences if d])) < 1e-12
    assert sequence.low is not None and sequence.low > 0
    assert confidence_sequence([None, None], "higher", 0.05).estimate is None
