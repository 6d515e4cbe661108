"""Evaluate untrusted lambda expressions from shared LVE files without reaching the system.

A lambda is parsed with :mod:`ast` and checked against an allow-list *before* anything runs:

* the expression must be a single ``lambda``;
* every name must be a lambda parameter, a comprehension variable or one of
  :data:`SAFE_BUILTINS` (no ``open``, ``eval``, ``exec``, ``__import__``, ``getattr``…);
* no attribute starting with ``_`` (no dunder walks such as ``().__class__.__bases__``), and no
  ``format``/``format_map`` (they reach attributes through format strings);
* no ``**`` with an exponent above 1000 and no multiplication by a constant above 10**6
  (resource exhaustion).

Anything else raises :class:`UnsafeLambdaError` naming what was refused; the lambda is never run.
"""

from __future__ import annotations

import ast
import builtins
import math
import re
from typing import Any, Callable

__all__ = ["UnsafeLambdaError", "SAFE_BUILTINS", "compile_lambda"]


class UnsafeLambdaError(ValueError):
    """A lambda from a shared file tried to use something outside the allow-list."""


SAFE_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in (
        "abs", "all", "any", "bool", "dict", "divmod", "enumerate", "filter", "float", "frozenset",
        "int", "isinstance", "len", "list", "map", "max", "min", "range", "reversed", "round", "set",
        "sorted", "str", "sum", "tuple", "zip", "ValueError", "True", "False", "None",
    )
    if hasattr(builtins, name)
}
SAFE_BUILTINS.update({"True": True, "False": False, "None": None, "re": re, "math": math})

_FORBIDDEN_ATTRIBUTES = {"format", "format_map", "mro", "gi_frame", "f_globals", "f_locals", "func_globals"}
_FORBIDDEN_NODES = (ast.Await, ast.Yield, ast.YieldFrom, ast.Starred)


def _bound_names(node: ast.AST) -> set[str]:
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Lambda):
            args = sub.args
            for a in args.posonlyargs + args.args + args.kwonlyargs:
                names.add(a.arg)
            if args.vararg:
                names.add(args.vararg.arg)
            if args.kwarg:
                names.add(args.kwarg.arg)
        elif isinstance(sub, ast.comprehension):
            for target in ast.walk(sub.target):
                if isinstance(target, ast.Name):
                    names.add(target.id)
        elif isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
            names.add(sub.target.id)
    return names


def _check(tree: ast.Expression, source: str) -> None:
    if not isinstance(tree.body, ast.Lambda):
        raise UnsafeLambdaError(f"not a lambda expression: {source!r}")
    bound = _bound_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, _FORBIDDEN_NODES):
            raise UnsafeLambdaError(f"{type(node).__name__} is not allowed in a checker lambda")
        if isinstance(node, ast.Name):
            if node.id not in bound and node.id not in SAFE_BUILTINS:
                raise UnsafeLambdaError(f"name {node.id!r} is not allowed in a checker lambda")
            if node.id.startswith("__"):
                raise UnsafeLambdaError(f"name {node.id!r} is not allowed in a checker lambda")
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_") or node.attr in _FORBIDDEN_ATTRIBUTES:
                raise UnsafeLambdaError(f"attribute {node.attr!r} is not allowed in a checker lambda")
        elif isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                exp = node.right
                if not (isinstance(exp, ast.Constant) and isinstance(exp.value, (int, float)) and abs(exp.value) <= 1000):
                    raise UnsafeLambdaError("'**' needs a constant exponent of at most 1000 in a checker lambda")
            if isinstance(node.op, (ast.Mult, ast.LShift)):
                for side in (node.left, node.right):
                    if isinstance(side, ast.Constant) and isinstance(side.value, int) and abs(side.value) > 10**6:
                        raise UnsafeLambdaError("multiplication by a constant above 10**6 is not allowed in a checker lambda")


def compile_lambda(source: str) -> Callable[..., Any]:
    """Check ``source`` (a ``lambda ...`` expression) and return the function.

    Raises :class:`UnsafeLambdaError` for anything outside the allow-list, and for syntax errors.
    """
    if not isinstance(source, str):
        raise UnsafeLambdaError(f"a checker lambda must be a string, not {type(source).__name__}")
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise UnsafeLambdaError(f"invalid lambda {source!r}: {exc.msg}") from None
    _check(tree, source)
    code = compile(tree, "<checker lambda>", "eval")
    return eval(code, {"__builtins__": dict(SAFE_BUILTINS)}, {})  # noqa: S307 - checked above
