"""The round-4 fault reproductions (issue 40), one line each: ``python tests/faults_round4.py [N ...]``.

Each break of the round is reproduced by the test named beside it (real runs against the scripted servers on
127.0.0.1, real MCP servers, real bubblewrap); this script runs them one break at a time and prints
``break N: HELD`` when the reproduction no longer breaks, ``break N: BROKE`` when it does, and
``break N: NOT COVERED`` for a break no reproduction covers yet. Exit 0 only when every covered break held.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAIN = "tests/test_chain_faults.py::"
BREAKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "1": ("a stopped sequential study is continued", ("tests/test_sequential_continuation.py",)),
    "2": ("a continuation's ledger fails verification", (CHAIN + "test_every_ledger_of_the_chain_verifies_alone",)),
    "3": ("a chain of three runs pays twice", (CHAIN + "test_no_cell_runs_twice_and_spent_is_the_sum_of_charges",
                                               CHAIN + "test_the_chain_report_counts_equal_an_uninterrupted_run",
                                               CHAIN + "test_a_continuation_without_its_whole_chain_is_refused")),
    "4": ("a continuation reported alone hides its predecessor",
          (CHAIN + "test_one_link_reported_alone_says_the_chain_is_partial",
           CHAIN + "test_adjudicate_refuses_one_link_without_partial_chain",
           CHAIN + "test_adjudicate_says_whether_the_chain_is_whole",
           CHAIN + "test_power_reads_one_link_only_with_partial_chain_and_says_so")),
    "5": ("a crashed run can never be continued", ("tests/test_crash_continue.py",)),
    "6": ("annotations are checked only in the preflight", ("tests/test_server_word_per_attempt.py",
                                                             "tests/test_server_word_cli.py",
                                                             "tests/test_server_word_e2e.py")),
    "7": ("the prepared state has no size bound", ("tests/test_prepared_state_cap.py",)),
    "8": ("two legal task ids share a transcript file", ("tests/test_file_names.py",
                                                         "tests/test_observed_then_failed.py",
                                                         "tests/test_late_internal_errors.py")),
    "9": ("a deeply nested provider request crashes", ("tests/test_provider_json_bounds.py",)),
    "10": ("provider requests accept NaN and duplicated keys", ("tests/test_provider_json_bounds.py",)),
    "11": ("attempts that never started leave no evidence", ("tests/test_admission_errors.py",)),
    "12": ("an HTML report tracebacks on a large uniform ledger",
           ("tests/test_report_error_bars.py", "tests/test_unverified_warning.py",
            "property_tests/test_report_formats_random_ledgers.py")),
    "chain": ("must show: a three-run chain under scripted faults is one study (every ledger verifies alone, no "
              "cell twice, the chain report's counts equal an uninterrupted run's, spent = the sum of charges)",
              ("tests/test_chain_faults.py",)),
    "low": ("agentstudy ledger never checks transcripts", ("tests/test_ledger_transcripts.py",)),
    "low-seed": ("the sequential seed is not checked against the recorded task order",
                 ("tests/test_sequential_order_seed.py",)),
}


def main(argv: list[str]) -> int:
    """Run the reproductions of the breaks in ``argv`` (all without arguments); 0 when every covered one held."""
    chosen = argv or list(BREAKS)
    failed = False
    for key in chosen:
        title, tests = BREAKS[key]
        if not tests:
            print(f"break {key}: NOT COVERED ({title})", flush=True)
            continue
        result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *tests], cwd=ROOT,
                                capture_output=True, text=True, check=False)
        held = result.returncode == 0
        failed |= not held
        print(f"break {key}: {'HELD' if held else 'BROKE'} ({title})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
