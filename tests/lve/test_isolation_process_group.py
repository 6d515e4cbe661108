"""A trusted custom checker that signals its whole process group stops its own worker, not the scan."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    sys.path.insert(0, {tests!r})
    from helpers.lve_repos import write_lve
    from redline.lve.isolation import CheckerLimits, CheckerPool
    from redline.lve.verify import verify

    root = Path({root!r})
    killer = '''
    import os, signal
    from lve.checkers import BaseChecker

    class Killer(BaseChecker):
        def is_safe(self, prompt, response, param_values=None):
            os.killpg(0, signal.SIGKILL)
            return True
    '''
    safe = ({{"x": "hi"}}, "hello", True)
    write_lve(root, "a_killer", {{"checker_name": "Killer"}}, [safe], custom=killer)
    write_lve(root, "b_fine", {{"checker_name": "LambdaChecker", "func": "lambda r, x: 'secret' not in r"}}, [safe])
    limits = CheckerLimits(timeout=20.0, cpu_seconds=20, memory_mb=512, workers=2)
    with CheckerPool(limits) as pool:
        report = verify(root, trust_code=True, pool=pool)
    print(report.agree, [Path(e["file"]).parts[-4] for e in report.errors])
    """
)


def test_a_checker_that_kills_its_process_group_errs_its_own_instance_and_the_scan_goes_on(tmp_path: Path) -> None:
    tests = str(Path(__file__).resolve().parents[1])
    script = _SCRIPT.format(tests=tests, root=str(tmp_path))
    # A session of its own: before the fix, the checker's signal reached the process that ran it.
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, start_new_session=True
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.splitlines()[0] == "1 ['a_killer']"
