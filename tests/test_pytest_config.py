"""The test run itself is clean: the project's pytest configuration draws no deprecation warning."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_collecting_tests_draws_no_pytest_deprecation_warning():
    """pytest-asyncio warns at start-up, before pytest captures warnings, when an option it will
    change the default of is unset; ``-W default`` makes Python show such a warning."""
    proc = subprocess.run(
        [sys.executable, "-W", "default", "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        + ["tests/test_attempt.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "DeprecationWarning" not in proc.stdout + proc.stderr
    assert "asyncio_default_fixture_loop_scope" not in proc.stdout + proc.stderr
