"""Re-check every recorded instance of one LVE or a whole repository with its test's checker.

For each instance the recorded response is put back into the filled prompt (a string answers
the last assistant message, a dict fills the variables, a list holds one of those per run of a
multi-run LVE) and the checker judges it again. The report counts instances that agree with
the recorded verdict and lists, with file and line, every disagreement, every instance that
could not be judged here (``skipped``: a custom checker without ``--trust-code``, a classifier
or NER model that cannot be loaded — never counted as agreement) and every error (malformed
file, refused lambda, a checker failing on an instance). A broken LVE does not stop the others.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from redline.lve.errors import CustomCodeRefused, LVEFormatError
from redline.lve.isolation import CheckerIsolationError, CheckerPool, IsolatedChecker, checker_for, shared_pool
from redline.lve.model import LVE, Instance, find_lves, load_lve
from redline.lve.prompt import LVEMessage, Role
from redline.lve.runner import RESPONSE_VARIABLE

__all__ = ["UNAVAILABLE", "VerifyReport", "check_instance", "recorded_chats", "verify"]

#: redline's own model-backed checkers judge in this process, one call at a time.
_IN_PROCESS = threading.Lock()

#: Exceptions meaning "cannot be measured on this machine": the instance is skipped.
UNAVAILABLE = ("ClassifierUnavailable", "PIIUnavailable", "CheckerUnavailable")


@dataclass
class VerifyReport:
    """Totals and findings of :func:`verify` (``as_dict`` is the ``--json`` output)."""

    total: int = 0
    agree: int = 0
    disagree: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    lves: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "agree": self.agree,
            "disagree": self.disagree,
            "skipped": self.skipped,
            "errors": self.errors,
        }

    def merge(self, other: VerifyReport) -> None:
        """Add ``other``'s totals and findings (after this report's own)."""
        self.total += other.total
        self.agree += other.agree
        self.disagree += other.disagree
        self.skipped += other.skipped
        self.errors += other.errors
        self.lves += other.lves

    @property
    def ok(self) -> bool:
        """No disagreement and no error."""
        return not self.disagree and not self.errors


def _answered(prompt_in: list[LVEMessage], response: Any, at: str) -> list[LVEMessage]:
    chat = list(prompt_in)
    if not chat or chat[-1].role != Role.assistant:
        chat.append(LVEMessage(Role.assistant, None, RESPONSE_VARIABLE))
    slots = [i for i, m in enumerate(chat) if m.role == Role.assistant and m.content is None]
    if isinstance(response, dict):
        for number, i in enumerate(slots):
            key = chat[i].variable if chat[i].variable is not None else str(number)
            if key not in response:
                raise LVEFormatError(f"{at}: 'response' has no value for the variable {key!r}")
            if not isinstance(response[key], str):
                raise LVEFormatError(f"{at}: the value of variable {key!r} must be a string")
            chat[i] = replace(chat[i], content=response[key])
        return chat
    if not isinstance(response, str):
        raise LVEFormatError(
            f"{at}: 'response' must be a string or an object of variables, not {type(response).__name__}"
        )
    if len(slots) != 1:
        raise LVEFormatError(
            f"{at}: the prompt has {len(slots)} answers to fill, so 'response' must be an object of variables"
        )
    chat[slots[0]] = replace(chat[slots[0]], content=response)
    return chat


def recorded_chats(
    lve: LVE, params: dict[str, Any], response: Any, at: str
) -> tuple[list[list[LVEMessage]], list[list[LVEMessage]]]:
    """(input chats, output chats) rebuilt from a recorded response; one chat each for a
    single-run LVE."""
    prompts_in = lve.prompts_for(params)
    if lve.is_multi_run:
        if not isinstance(response, list) or len(response) != len(prompts_in):
            raise LVEFormatError(f"{at}: a multi-run 'response' must be a list of {len(prompts_in)} responses")
        return prompts_in, [_answered(p, r, at) for p, r in zip(prompts_in, response)]
    return prompts_in, [_answered(prompts_in[0], response, at)]


def check_instance(lve: LVE, instance: Instance, trust_code: bool = False, pool: CheckerPool | None = None) -> bool:
    """The checker's verdict on a recorded instance (True = safe); an isolated checker runs
    in a worker of ``pool`` (the shared pool by default)."""
    params = lve.param_values(instance.args, instance.where)
    checker = checker_for(lve, trust_code=trust_code, args=instance.args, pool=pool)
    prompts_in, prompts_out = recorded_chats(lve, params, instance.response, instance.where)
    with contextlib.nullcontext() if isinstance(checker, IsolatedChecker) else _IN_PROCESS:
        if lve.is_multi_run:
            safe, _ = checker.invoke_check(prompts_in, prompts_out, params)
        else:
            safe, _ = checker.invoke_check(prompts_in[0], prompts_out[0], params)
    return bool(safe)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _entry(path: Path, line: int | None, **extra: Any) -> dict[str, Any]:
    return {"file": path.as_posix(), "line": line, **extra}


def _verify_lve(test_path: Path, root: Path, trust_code: bool, pool: CheckerPool) -> VerifyReport:
    report = VerifyReport(lves=1)
    _judge_lve(report, test_path, root, trust_code, pool)
    return report


def _judge_lve(report: VerifyReport, test_path: Path, root: Path, trust_code: bool, pool: CheckerPool) -> None:
    try:
        lve = load_lve(test_path, root=root)
    except LVEFormatError as exc:
        report.errors.append(_entry(test_path, _line(exc), reason=str(exc)))
        return
    unavailable: str | None = None
    for item in lve.instances():
        if isinstance(item, LVEFormatError):
            report.errors.append(_entry(test_path, _line(item), reason=str(item)))
            continue
        report.total += 1
        if unavailable is not None:
            report.skipped.append(_entry(item.file, item.line, reason=unavailable))
            continue
        try:
            safe = check_instance(lve, item, trust_code, pool)
        except CustomCodeRefused as exc:
            unavailable = _reason(exc)
            report.skipped.append(_entry(item.file, item.line, reason=unavailable))
            continue
        except LVEFormatError as exc:
            report.errors.append(_entry(item.file, item.line, reason=str(exc)))
            continue
        except CheckerIsolationError as exc:  # crashed, hung, over a limit or raised: this instance only
            report.errors.append(_entry(item.file, item.line, reason=f"{item.where}: {exc}"))
            continue
        except Exception as exc:
            kind = type(exc).__name__
            if kind in UNAVAILABLE:
                unavailable = _reason(exc)
                report.skipped.append(_entry(item.file, item.line, reason=unavailable))
            else:
                report.errors.append(_entry(item.file, item.line, reason=f"{item.where}: {kind}: {_reason(exc)}"))
            continue
        if safe == item.passed:
            report.agree += 1
        else:
            report.disagree.append(
                _entry(item.file, item.line, expected=item.passed, got=safe, checker=lve.checker_name)
            )


def _line(exc: LVEFormatError) -> int | None:
    head = str(exc).split(": ", 1)[0]
    tail = head.rsplit(":", 1)
    return int(tail[1]) if len(tail) == 2 and tail[1].isdigit() else None


def verify(
    path: str | Path,
    trust_code: bool = False,
    progress: Callable[[Path], None] | None = None,
    pool: CheckerPool | None = None,
) -> VerifyReport:
    """Verify every LVE at or below ``path`` (a test.json, an LVE folder or a repository).

    Checkers run in worker processes of ``pool`` (the shared pool by default; see
    :mod:`redline.lve.isolation`): a checker that crashes, hangs or exceeds a limit is an error
    on its own instances. LVEs are verified side by side, as many as the pool has workers; the
    report lists them in repository order. ``progress`` is called with each test.json, in
    that order, as its LVE is done. Raises :class:`LVEFormatError` only if ``path`` does not
    exist.
    """
    target = Path(path)
    root = target if target.is_dir() else target.parent
    pool = pool or shared_pool()
    tests = find_lves(target)
    report = VerifyReport()
    executor = ThreadPoolExecutor(max_workers=pool.limits.workers, thread_name_prefix="redline-verify")
    try:
        parts = executor.map(lambda test_path: _verify_lve(test_path, root, trust_code, pool), tests)
        for test_path, part in zip(tests, parts):
            if progress is not None:
                progress(test_path)
            report.merge(part)
    except BaseException:  # Ctrl-C: stop the workers, so no thread waits out a checker's timeout
        pool.close()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown()
    return report
