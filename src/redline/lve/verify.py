"""Re-check every recorded instance of one LVE or a whole repository with its test's checker."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline.lve.model import CustomCodeRefused, Instance, LVE, LVEFormatError, find_lves, load_lve
from redline.lve.prompt import LVEMessage, Role

__all__ = ["VerifyReport", "verify", "prompt_out_for", "check_instance"]

NOT_MEASURABLE = ("ClassifierUnavailable", "PIIUnavailable")


@dataclass
class VerifyReport:
    total: int = 0
    agree: int = 0
    disagree: list[dict] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    lves: int = 0

    def as_dict(self) -> dict:
        return {"total": self.total, "agree": self.agree, "disagree": self.disagree, "skipped": self.skipped, "errors": self.errors}

    @property
    def ok(self) -> bool:
        return not self.disagree and not self.errors


def _with_response(prompt_in: list[LVEMessage], response: Any, where: str) -> list[LVEMessage]:
    out = copy.deepcopy(prompt_in)
    if isinstance(response, dict):
        slots = [m for m in out if m.role == Role.assistant and m.content is None]
        for i, message in enumerate(slots):
            key = message.variable if message.variable is not None else str(i)
            if key not in response:
                raise LVEFormatError(f"{where}: response has no value for variable {key!r}")
            message.content = response[key]
        return out
    if not isinstance(response, str):
        raise LVEFormatError(f"{where}: 'response' must be a string here, not {type(response).__name__}")
    if out and out[-1].role == Role.assistant and out[-1].content is None:
        out[-1].content = response
    else:
        out.append(LVEMessage(Role.assistant, response))
    return out


def prompt_out_for(lve: LVE, params: dict, response: Any, where: str) -> tuple[list, list]:
    """(input chats, output chats) for a recorded response (lists of one chat for single-run)."""
    prompts_in = lve.prompts_for(params)
    if lve.is_multi_run:
        if not isinstance(response, list) or len(response) != len(prompts_in):
            raise LVEFormatError(f"{where}: multi-run 'response' must be a list of {len(prompts_in)} responses")
        return prompts_in, [_with_response(p, r, where) for p, r in zip(prompts_in, response)]
    return prompts_in, [_with_response(prompts_in[0], response, where)]


def check_instance(lve: LVE, checker: Any, instance: Instance) -> bool:
    params = lve.param_values(instance.args, instance.where)
    prompts_in, prompts_out = prompt_out_for(lve, params, instance.response, instance.where)
    if lve.is_multi_run:
        safe, _ = checker.invoke_check(prompts_in, prompts_out, params)
    else:
        safe, _ = checker.invoke_check(prompts_in[0], prompts_out[0], params)
    return bool(safe)


def verify(path: str | Path, trust_code: bool = False) -> VerifyReport:
    """Verify every LVE at or below ``path``; a broken LVE is reported and the others go on."""
    report = VerifyReport()
    root = Path(path) if Path(path).is_dir() else Path(path).parent
    for test_path in find_lves(path):
        report.lves += 1
        try:
            lve = load_lve(test_path, root=root)
            checker = lve.checker(trust_code=trust_code)
        except CustomCodeRefused as exc:
            for instance in _instances_quietly(test_path, root):
                report.total += 1
                report.skipped.append({"file": instance.file.as_posix(), "line": instance.line, "reason": str(exc)})
            continue
        except LVEFormatError as exc:
            report.errors.append({"file": str(test_path), "line": None, "reason": str(exc)})
            continue
        for item in lve.instances():
            if isinstance(item, LVEFormatError):
                report.errors.append({"file": str(test_path), "line": None, "reason": str(item)})
                continue
            report.total += 1
            try:
                safe = check_instance(lve, checker, item)
            except LVEFormatError as exc:
                report.errors.append({"file": item.file.as_posix(), "line": item.line, "reason": str(exc)})
                continue
            except Exception as exc:  # noqa: BLE001
                kind = type(exc).__name__
                reason = f"{kind}: {str(exc).splitlines()[0] if str(exc) else ''}".strip()
                target = report.skipped if kind in NOT_MEASURABLE else report.errors
                target.append({"file": item.file.as_posix(), "line": item.line, "reason": reason})
                continue
            if safe == item.passed:
                report.agree += 1
            else:
                report.disagree.append(
                    {"file": item.file.as_posix(), "line": item.line, "expected": item.passed, "got": safe, "checker": lve.checker_name}
                )
    return report


def _instances_quietly(test_path: Path, root: Path):
    try:
        lve = load_lve(test_path, root=root)
    except LVEFormatError:
        return
    for item in lve.instances():
        if isinstance(item, Instance):
            yield item
