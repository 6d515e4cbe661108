"""Checker workers are reaped: a closed pool waits for its workers, and at exit every pool left
open is closed."""

from __future__ import annotations

from pathlib import Path

from helpers.lve_repos import write_lve
from redline.lve import isolation, load_lve
from redline.lve.isolation import CheckerLimits, CheckerPool, checker_for

PID_CHECKER = """
import os
from lve.checkers import BaseChecker

class Pid(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        return True

    def postprocess_response(self, response):
        return str(os.getpid())
"""


def _gone(pid: int) -> bool:
    """True when ``pid`` is not in the process table at all (a zombie still is)."""
    return not Path(f"/proc/{pid}").exists()


def test_a_closed_pool_has_waited_for_its_idle_workers(tmp_path):
    write_lve(tmp_path, "a", {"checker_name": "Pid"}, [({"x": "hi"}, "hello", True)], custom=PID_CHECKER)
    pool = CheckerPool(CheckerLimits(timeout=20.0, cpu_seconds=20, memory_mb=512, workers=2))
    lve = load_lve(tmp_path / "a" / "m" / "test.json", root=tmp_path)
    worker = int(checker_for(lve, trust_code=True, pool=pool).postprocess_response("x"))
    assert not _gone(worker)  # idle, kept for the next call
    pool.close()
    assert _gone(worker)


def test_at_exit_every_open_pool_is_closed_and_its_workers_waited_for(tmp_path):
    write_lve(tmp_path, "a", {"checker_name": "Pid"}, [({"x": "hi"}, "hello", True)], custom=PID_CHECKER)
    pool = CheckerPool(CheckerLimits(timeout=20.0, cpu_seconds=20, memory_mb=512, workers=2))
    lve = load_lve(tmp_path / "a" / "m" / "test.json", root=tmp_path)
    worker = int(checker_for(lve, trust_code=True, pool=pool).postprocess_response("x"))
    isolation._at_exit()
    assert _gone(worker)
