"""Checkers driven by a lambda from the LVE file: :class:`LambdaChecker`,
:class:`MultiRunLambdaChecker` and :class:`NumberChecker`.

Lambdas are untrusted: they are compiled by :func:`redline.lve.sandbox.safe_eval.compile_lambda`
(allow-listed syntax and names, bounded runtime) and :class:`UnsafeLambdaError` is raised at
construction for anything refused. A lambda that raises on a response (``int("forty")``)
judges it unsafe — the response does not satisfy the predicate — while a lambda whose
parameters do not fit the call, or one that exceeds a runtime bound, is an error
(:class:`~redline.lve.checkers.base.CheckerError`, :class:`LambdaLimitError`), never a verdict.
"""

from __future__ import annotations

import math
import re
from typing import Any

from redline.lve.checkers.base import BaseChecker, Chat, CheckerError, MultiRunBaseChecker
from redline.lve.sandbox.safe_eval import LambdaLimitError, SafeLambda, compile_lambda

__all__ = ["LambdaChecker", "MultiRunLambdaChecker", "NumberChecker", "evaluate_predicate", "parse_number"]


def evaluate_predicate(func: SafeLambda, first: Any, params: dict[str, Any]) -> bool:
    """``bool(func(first, **params))``; False if the lambda raises, :class:`CheckerError` if
    the call does not bind, :class:`LambdaLimitError` (or :class:`MemoryError`, in a worker
    whose memory is limited) if it exceeds a bound."""
    try:
        func.bind_check(first, **params)
    except TypeError as exc:
        raise CheckerError(str(exc)) from None
    try:
        return bool(func(first, **params))
    except (LambdaLimitError, MemoryError):  # a bound, not an answer: never a verdict
        raise
    except Exception:
        return False


class LambdaChecker(BaseChecker):
    """Safe when ``func(response, **param_values)`` is true.

    **Attributes** — *func*: a lambda (as a string) taking the response and the prompt
    parameters by name, e.g. ``"lambda r, a, b: int(r) == int(a) + int(b)"``.
    """

    def __init__(self, func: str) -> None:
        super().__init__()
        self.func = compile_lambda(func)

    def is_safe(self, prompt: Chat, response: str, param_values: dict[str, Any] | None = None) -> bool:
        return evaluate_predicate(self.func, response, dict(param_values or {}))


class MultiRunLambdaChecker(MultiRunBaseChecker):
    """Safe when ``func(responses, **param_values)`` is true, ``responses`` holding one
    response per run in run order.

    **Attributes** — *func*: e.g. ``"lambda rs, a, b: all(int(r) == int(a) + int(b) for r in rs)"``.
    """

    def __init__(self, func: str) -> None:
        super().__init__()
        self.func = compile_lambda(func)

    def is_safe(self, prompt: list[Chat], response: list[str], param_values: dict[str, Any] | None = None) -> bool:
        return evaluate_predicate(self.func, list(response), dict(param_values or {}))


_SPACES = re.compile(r"[\s\u00a0\u2009\u202f_']")
_THOUSANDS_COMMA = re.compile(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?")
_THOUSANDS_DOT = re.compile(r"[+-]?\d{1,3}(\.\d{3}){2,}(,\d*)?")


def parse_number(value: Any) -> float | None:
    """A number written in any common format, or ``None`` if ``value`` is not one.

    ``"1,000.0"``, ``"1 000"``, ``"1'000"``, ``"1.000.000"``, ``"1.000,5"``, ``"−3"``, ``"12."``
    and ``1000`` all parse; when both ``,`` and ``.`` appear the last one is the decimal
    separator, and a lone ``,`` followed by other than three digits is a decimal comma.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        return None
    text = _SPACES.sub("", value.strip()).replace("\u2212", "-").rstrip(".")
    if not text:
        return None
    if "," in text and "." in text:
        decimal = "," if text.rfind(",") > text.rfind(".") else "."
        thousands = "." if decimal == "," else ","
        text = text.replace(thousands, "").replace(decimal, ".")
    elif "," in text:
        if _THOUSANDS_COMMA.fullmatch(text):
            text = text.replace(",", "")
        elif text.count(",") == 1:
            text = text.replace(",", ".")
    elif text.count(".") > 1 and _THOUSANDS_DOT.fullmatch(text):
        text = text.replace(".", "")
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


class NumberChecker(BaseChecker):
    """Safe when the response is the number ``expected_value_func`` computes from the prompt
    parameters, after both are normalised (thousands separators, decimal comma, ``.0``).

    **Attributes** — *expected_value_func*: a lambda over (some of) the prompt parameters by
    name, e.g. ``"lambda a, b: int(a) * int(b)"``; it is called once per instance. A response
    that is not a number is unsafe. *rel_tol*: relative tolerance of the comparison (1e-9).
    """

    def __init__(self, expected_value_func: str, rel_tol: float = 1e-9) -> None:
        super().__init__()
        self.expected_value_func = compile_lambda(expected_value_func)
        self.rel_tol = float(rel_tol)

    def expected(self, param_values: dict[str, Any]) -> float:
        """The expected number for these parameters (:class:`CheckerError` if it is not one)."""
        func = self.expected_value_func
        kwargs = {k: v for k, v in param_values.items() if func.accepts(k)}
        try:
            func.bind_check(**kwargs)
            value = func(**kwargs)
        except (LambdaLimitError, MemoryError):
            raise
        except Exception as exc:
            raise CheckerError(f"expected_value_func failed: {type(exc).__name__}: {exc}") from None
        number = parse_number(value)
        if number is None:
            raise CheckerError(f"expected_value_func returned {value!r}, not a number")
        return number

    def is_safe(self, prompt: Chat, response: str, param_values: dict[str, Any] | None = None) -> bool:
        expected = self.expected(dict(param_values or {}))
        got = parse_number(response)
        return got is not None and math.isclose(got, expected, rel_tol=self.rel_tol, abs_tol=1e-12)
