"""LVE checkers in worker processes: one worker per LVE, OS limits, errors on their own instances."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import redline.lve as package
from helpers.lve_repos import write_lve
from redline.lve import isolation, limits, load_lve
from redline.lve.checkers.base import BaseChecker
from redline.lve.isolation import CheckerIsolationError, CheckerLimits, CheckerPool, IsolatedChecker, checker_for
from redline.lve.verify import verify

SAFE = ({"x": "hi"}, "hello", True)
UNSAFE = ({"x": "hi"}, "the secret is 42", False)

#: A custom checker whose stored response is the pid of the process that judged it.
PID_CHECKER = """
import os
from lve.checkers import BaseChecker

class Pid(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        return True

    def postprocess_response(self, response):
        return str(os.getpid())
"""


def _pool(**limits: object) -> CheckerPool:
    values: dict[str, object] = {"timeout": 20.0, "cpu_seconds": 20, "memory_mb": 512, "workers": 2}
    values.update(limits)
    return CheckerPool(CheckerLimits(**values))  # type: ignore[arg-type]


@pytest.fixture
def pool():
    with _pool() as made:
        yield made


def _lve(root: Path, name: str):
    return load_lve(root / name / "m" / "test.json", root=root)


def test_a_checker_is_judged_in_a_worker_that_serves_its_lve_only(tmp_path, pool):
    write_lve(tmp_path, "a", {"checker_name": "Pid"}, [SAFE], custom=PID_CHECKER)
    write_lve(tmp_path, "b", {"checker_name": "Pid"}, [SAFE], custom=PID_CHECKER)
    first = checker_for(_lve(tmp_path, "a"), trust_code=True, pool=pool)
    assert isinstance(first, IsolatedChecker) and first.postprocessing
    pid_a = first.postprocess_response("x")
    assert pid_a != str(os.getpid())
    assert first.postprocess_response("y") == pid_a  # reused for every call of its LVE
    pid_b = checker_for(_lve(tmp_path, "b"), trust_code=True, pool=pool).postprocess_response("x")
    assert pid_b not in (pid_a, str(os.getpid()))
    assert pool.started == 2


def test_a_module_patched_by_one_lve_is_unchanged_for_the_next(tmp_path):
    poison = """
import re
from lve.checkers import BaseChecker
re.search = lambda *args, **kwargs: None

class Poison(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        re.search = lambda *args, **kwargs: None
        return True
"""
    write_lve(tmp_path, "a_poison", {"checker_name": "Poison"}, [SAFE], custom=poison)
    write_lve(
        tmp_path,
        "b_victim",
        {"checker_name": "LambdaChecker", "func": "lambda r, x: re.search('secret', r) is None"},
        [SAFE, UNSAFE],
    )
    with _pool(workers=1) as one:  # one worker at a time: the victim's must still be a new one
        report = verify(tmp_path, trust_code=True, pool=one)
    assert report.errors == [] and report.disagree == []
    assert (report.total, report.agree) == (3, 3)  # the recorded-unsafe instance is still unsafe


def test_a_crashing_checker_is_an_error_on_its_own_instances_only(tmp_path, pool):
    crash = "lambda r, x: (t := 0, [t := (t,) for _ in range(300000)], {t}) and True"
    write_lve(tmp_path, "a_crash", {"checker_name": "LambdaChecker", "func": crash}, [SAFE, UNSAFE])
    write_lve(
        tmp_path, "b_fine", {"checker_name": "LambdaChecker", "func": "lambda r, x: 'secret' not in r"}, [SAFE, UNSAFE]
    )
    report = verify(tmp_path, pool=pool)
    assert report.agree == 2 and report.disagree == []
    assert [(Path(e["file"]).parts[-4], e["line"]) for e in report.errors] == [("a_crash", 1), ("a_crash", 2)]
    assert all("crashed its worker (SIGSEGV)" in e["reason"] for e in report.errors)


def test_a_hung_checker_is_stopped_and_its_lve_given_up_after_its_strikes(tmp_path):
    hang = "lambda r, x: [[[[0] * 1000] * 1000] * 1000] * 1000 == [[[[0] * 1000] * 1000] * 1000] * 1000"
    write_lve(tmp_path, "hang", {"checker_name": "LambdaChecker", "func": hang}, [SAFE, SAFE, SAFE])
    with _pool(timeout=1.0, strikes=1) as small:
        started = time.monotonic()
        report = verify(tmp_path, pool=small)
        took = time.monotonic() - started
    reasons = [e["reason"] for e in report.errors]
    assert len(reasons) == 3 and report.agree == 0
    assert "did not answer within 1 s" in reasons[0]
    assert all("not run: the checker already failed once on this LVE" in r for r in reasons[1:])
    assert took < 15  # one timeout, not three


def test_cpu_time_is_limited_by_the_os(tmp_path):
    busy = "lambda r, x: [[[[0] * 1000] * 1000] * 1000] * 1000 == [[[[0] * 1000] * 1000] * 1000] * 1000"
    write_lve(tmp_path, "busy", {"checker_name": "LambdaChecker", "func": busy}, [SAFE])
    with _pool(timeout=60.0, cpu_seconds=1) as small:
        report = verify(tmp_path, pool=small)
    assert "exceeded its CPU time limit (1 s)" in report.errors[0]["reason"]


def test_memory_is_limited_by_the_os(tmp_path):
    hog = "lambda r, x: len(str([[[0] * 1000] * 1000] * 1000)) > 0"  # a 3 GB string, made by C code
    write_lve(tmp_path, "hog", {"checker_name": "LambdaChecker", "func": hog}, [SAFE])
    with _pool(memory_mb=128, timeout=60.0) as small:
        report = verify(tmp_path, pool=small)
    assert "memory" in report.errors[0]["reason"]


def test_an_exception_in_a_checker_is_an_error_and_its_worker_is_kept(tmp_path, pool):
    raising = """
from lve.checkers import BaseChecker

class Raises(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        return 1 / 0
"""
    write_lve(tmp_path, "raises", {"checker_name": "Raises"}, [SAFE, SAFE], custom=raising)
    report = verify(tmp_path, trust_code=True, pool=pool)
    assert [e["reason"].split(": ", 1)[1] for e in report.errors] == [
        "the checker raised ZeroDivisionError: division by zero"
    ] * 2
    assert pool.started == 1


def test_a_custom_checker_that_fails_to_import_names_its_file(tmp_path, pool):
    write_lve(tmp_path, "broken", {"checker_name": "Broken"}, [SAFE], custom="raise RuntimeError('nope')\n")
    with pytest.raises(Exception, match=r"checker\.py: custom checker failed to import: RuntimeError: nope"):
        checker_for(_lve(tmp_path, "broken"), trust_code=True, pool=pool)


def test_custom_code_is_never_imported_in_the_scanning_process(tmp_path, pool):
    marker = tmp_path / "imported-in"
    custom = f"""
import os
from lve.checkers import BaseChecker
open({str(marker)!r}, "a").write(str(os.getpid()) + "\\n")

class Marked(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        return True
"""
    write_lve(tmp_path, "marked", {"checker_name": "Marked"}, [SAFE], custom=custom)
    report = verify(tmp_path, trust_code=True, pool=pool)
    assert report.agree == 1
    pids = marker.read_text().split()
    assert pids and str(os.getpid()) not in pids


def test_an_oversized_reply_is_refused(tmp_path):
    big = """
from lve.checkers import BaseChecker

class Big(BaseChecker):
    def is_safe(self, prompt, response, param_values=None):
        return True

    def postprocess_response(self, response):
        return "x" * 5000
"""
    write_lve(tmp_path, "big", {"checker_name": "Big"}, [SAFE], custom=big)
    with CheckerPool(CheckerLimits(max_reply=1000, workers=1)) as small:
        checker = checker_for(_lve(tmp_path, "big"), trust_code=True, pool=small)
        with pytest.raises(CheckerIsolationError, match="reply is over 1000 bytes"):
            checker.postprocess_response("r")


def test_closing_the_pool_ends_a_waiting_call_at_once(tmp_path):
    hang = "lambda r, x: [[[[0] * 1000] * 1000] * 1000] * 1000 == [[[[0] * 1000] * 1000] * 1000] * 1000"
    write_lve(tmp_path, "hang", {"checker_name": "LambdaChecker", "func": hang}, [SAFE])
    small = _pool(timeout=120.0, cpu_seconds=120)
    checker = checker_for(_lve(tmp_path, "hang"), pool=small)
    lve = _lve(tmp_path, "hang")
    chat = lve.prompts_for({"x": "hi"})[0]
    failure: list[BaseException] = []

    def judge() -> None:
        try:
            checker.invoke_check(chat, chat, {"x": "hi"})
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=judge)
    thread.start()
    while not small._running:  # the call has its worker
        time.sleep(0.01)
    time.sleep(0.2)
    started = time.monotonic()
    small.close()
    thread.join(30)
    assert not thread.is_alive() and time.monotonic() - started < 10
    assert isinstance(failure[0], CheckerIsolationError)


def test_redlines_model_backed_checkers_stay_in_process(tmp_path, pool):
    write_lve(tmp_path, "tox", {"checker_name": "ToxicityChecker"}, [SAFE])
    checker = checker_for(_lve(tmp_path, "tox"), pool=pool)
    assert isinstance(checker, BaseChecker) and pool.started == 0


def test_limits_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        CheckerLimits(timeout=0)


def test_the_shared_pool_takes_the_configured_limits_and_restarts_when_they_change(monkeypatch):
    monkeypatch.setattr(limits, "_configured", None)
    monkeypatch.setattr(isolation, "_SHARED", None)
    monkeypatch.setattr(isolation, "_SHARED_WITH", None)
    first = CheckerLimits(timeout=5.0, cpu_seconds=5, memory_mb=256)
    limits.configure_shared_pool(first)
    pool = isolation.shared_pool()
    assert pool.limits is first and isolation.shared_pool() is pool  # kept while the limits stay
    second = CheckerLimits(timeout=9.0, cpu_seconds=9, memory_mb=512)
    limits.configure_shared_pool(second)
    again = isolation.shared_pool()
    assert again is not pool and again.limits is second and pool._closed
    again.close()


def test_the_package_gives_its_modules_names_when_first_used():
    assert package.load_lve is load_lve and "load_lve" in dir(package)
    with pytest.raises(AttributeError, match="no_such_name"):
        package.no_such_name  # noqa: B018
