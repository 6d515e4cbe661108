"""Evaluate untrusted ``lambda`` expressions from shared LVE files without reaching the system.

LVE files come from a shared repository, so a checker lambda such as
``"lambda r, a, b: int(r) == int(a) + int(b)"`` is untrusted code. :func:`compile_lambda`
accepts it only after a static check of its syntax tree, and runs it in a closed namespace
with runtime bounds:

Static check (anything else raises :class:`UnsafeLambdaError`, and nothing runs):

* the source is one ``lambda`` expression (at most 10,000 characters, nested at most 100
  levels deep: deeper trees can exhaust the interpreter's stack while compiling);
* only names are assigned (comprehension and walrus targets): ``for re.search in …`` is refused;
* only expression syntax: no imports or statements can appear in a lambda anyway, and
  ``await``/``yield`` are refused;
* every name is a lambda parameter, a comprehension/walrus variable, or one of
  :data:`SAFE_NAMES` (``int``, ``len``, ``re`` …) — ``open``, ``eval``, ``exec``,
  ``__import__``, ``getattr``, ``globals``, ``type`` … are refused by name, and so is any
  name starting with ``__`` (or the evaluator's reserved ``_rl_`` prefix);
* every attribute is in an allow-list of public methods of ``str``/``list``/``dict``/…, regex
  match objects and the safe ``re``/``math``/``json`` namespaces: no dunders
  (``().__class__.__bases__``), no ``format``/``format_map`` (attribute walks through format
  strings), no frame or code attributes of generators (``gi_frame``), no padding methods that
  allocate at will (``ljust``, ``zfill`` …);
* f-string format specs must be constant and small.

Runtime bounds (exceeding one raises :class:`LambdaLimitError`): the evaluator rewrites every
call, ``**``/``*``/``<<``/``+``/``%`` and every comprehension so that

* ``9**9**9``, ``1 << 10**9``, ``"x" * 10**12`` and similar are refused *before* they
  allocate (integers are kept under :attr:`Limits.max_int_bits` bits, strings/lists under
  :attr:`Limits.max_size` items);
* every call and comprehension step counts against a step budget, and the work of built-in
  calls on large arguments against a work budget, so nested loops and runaway recursion stop;
* ``range`` is capped, and printf-style ``%`` formatting of strings is refused.

Each compiled lambda gets its own stand-ins for ``re``, ``math`` and ``json``.

These checks are the first line of defence only. Regular expressions written by the LVE author
run as given (a catastrophic pattern can be slow), and C code called by a lambda can still use
memory or time the meters do not see: the guarantee is the process boundary of
:mod:`redline.lve.isolation`, where every LVE's checker runs in its own worker process with OS
limits and a timeout per call.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import json
import math
import re
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from redline.errors import RedlineError

__all__ = [
    "SAFE_NAMES",
    "LambdaLimitError",
    "Limits",
    "SafeLambda",
    "UnsafeLambdaError",
    "check_lambda_source",
    "compile_lambda",
]


class UnsafeLambdaError(RedlineError, ValueError):
    """A lambda from a shared file was refused before running; the message names what it tried."""


class LambdaLimitError(RedlineError, RuntimeError):
    """A lambda exceeded a runtime bound (size, integer size, steps or work) while running."""


@dataclass(frozen=True)
class Limits:
    """Runtime bounds for one evaluation of a lambda."""

    max_source: int = 10_000
    max_depth: int = 100  # nesting of the syntax tree (compiling a deeper one can exhaust the stack)
    max_size: int = 1_000_000  # items of a str/bytes/list/… result, and of range()
    max_int_bits: int = 64_000  # about 19,000 decimal digits
    max_steps: int = 500_000  # calls + comprehension items
    max_work: int = 30_000_000  # characters/items handed to built-in calls


DEFAULT_LIMITS = Limits()

# -- the namespace ---------------------------------------------------------------------------

#: Names that are refused with a specific explanation (they are not in the namespace anyway).
FORBIDDEN_NAMES = {
    "open": "file access",
    "exec": "code execution",
    "eval": "code execution",
    "compile": "code execution",
    "__import__": "imports",
    "__builtins__": "the builtins module",
    "globals": "the global namespace",
    "locals": "the local namespace",
    "vars": "object namespaces",
    "dir": "object introspection",
    "getattr": "dynamic attribute access",
    "setattr": "dynamic attribute access",
    "delattr": "dynamic attribute access",
    "hasattr": "dynamic attribute access",
    "type": "class creation",
    "object": "class internals",
    "super": "class internals",
    "classmethod": "class internals",
    "staticmethod": "class internals",
    "property": "class internals",
    "memoryview": "raw memory",
    "bytearray": "raw memory",
    "breakpoint": "the debugger",
    "input": "reading the terminal",
    "print": "writing to the terminal",
    "help": "the interactive help",
    "exit": "stopping the process",
    "quit": "stopping the process",
    "format": "format strings (attribute walks)",
    "iter": "iterator protocol internals",
    "next": "iterator protocol internals",
    "pow": "unbounded exponentiation",
    "os": "the operating system",
    "sys": "the interpreter",
    "subprocess": "processes",
    "importlib": "imports",
    "builtins": "the builtins module",
}


def _safe_range(*args: int) -> range:
    result = range(*args)
    if len(result) > _meter().limits.max_size:
        raise LambdaLimitError(f"range of {len(result)} items exceeds the limit of {_meter().limits.max_size}")
    return result


def _check_sub(repl: Any, string: Any) -> None:
    if isinstance(repl, (str, bytes)) and isinstance(string, (str, bytes)):
        projected = len(string) + (len(string) + 1) * len(repl)
        _meter().check_size(projected, "re.sub result")


def _re_sub(pattern: Any, repl: Any, string: Any, count: int = 0, flags: int = 0) -> Any:
    _check_sub(repl, string)
    return re.sub(pattern, repl, string, count=count, flags=flags)


def _re_subn(pattern: Any, repl: Any, string: Any, count: int = 0, flags: int = 0) -> Any:
    _check_sub(repl, string)
    return re.subn(pattern, repl, string, count=count, flags=flags)


def _namespace(members: dict[str, Any]) -> types.SimpleNamespace:
    """A read-only-by-convention module stand-in exposing only ``members`` (never the real
    module, whose attributes lead to ``sys`` and ``os``)."""
    return types.SimpleNamespace(**members)


SAFE_RE = _namespace(
    {
        "search": re.search,
        "match": re.match,
        "fullmatch": re.fullmatch,
        "findall": re.findall,
        "finditer": re.finditer,
        "split": re.split,
        "sub": _re_sub,
        "subn": _re_subn,
        "escape": re.escape,
        "compile": re.compile,
        "I": re.I,
        "IGNORECASE": re.IGNORECASE,
        "M": re.M,
        "MULTILINE": re.MULTILINE,
        "S": re.S,
        "DOTALL": re.DOTALL,
        "A": re.A,
        "ASCII": re.ASCII,
        "X": re.X,
        "VERBOSE": re.VERBOSE,
    },
)

SAFE_MATH = _namespace(
    {
        name: getattr(math, name)
        for name in (
            "floor",
            "ceil",
            "trunc",
            "sqrt",
            "isqrt",
            "fabs",
            "isclose",
            "log",
            "log10",
            "log2",
            "exp",
            "gcd",
            "copysign",
            "fsum",
            "isnan",
            "isinf",
            "isfinite",
            "pi",
            "e",
            "inf",
            "nan",
        )
    },
)

SAFE_JSON = _namespace({"loads": json.loads, "dumps": json.dumps})

_BUILTIN_NAMES = (
    "abs",
    "all",
    "any",
    "bin",
    "bool",
    "chr",
    "dict",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "frozenset",
    "hex",
    "int",
    "isinstance",
    "len",
    "list",
    "map",
    "max",
    "min",
    "oct",
    "ord",
    "reversed",
    "round",
    "set",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
)

#: Everything a lambda can name besides its own parameters.
SAFE_NAMES: dict[str, Any] = {name: getattr(builtins, name) for name in _BUILTIN_NAMES}
SAFE_NAMES.update({"range": _safe_range, "re": SAFE_RE, "math": SAFE_MATH, "json": SAFE_JSON})

# Attributes: the public methods of the value types a lambda handles, minus dangerous ones.
_UNSAFE_ATTRIBUTES = {
    "format": "format strings can walk attributes",
    "format_map": "format strings can walk attributes",
    "ljust": "unbounded padding",
    "rjust": "unbounded padding",
    "center": "unbounded padding",
    "zfill": "unbounded padding",
    "expandtabs": "unbounded padding",
    "translate": "unbounded expansion",
    "maketrans": "unbounded expansion",
    "to_bytes": "unbounded allocation",
    "mro": "class internals",
}
_ATTRIBUTE_SOURCES: tuple[Any, ...] = (
    str,
    bytes,
    int,
    float,
    bool,
    list,
    tuple,
    dict,
    set,
    frozenset,
    range,
    re.compile(""),
    re.match("", ""),
)
SAFE_ATTRIBUTES: frozenset[str] = frozenset(
    {a for source in _ATTRIBUTE_SOURCES for a in dir(source) if not a.startswith("_")}
    | set(vars(SAFE_RE))
    | set(vars(SAFE_MATH))
    | set(vars(SAFE_JSON))
) - frozenset(_UNSAFE_ATTRIBUTES)

_ALLOWED_NODES = (
    ast.Expression,
    ast.Lambda,
    ast.arguments,
    ast.arg,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.BinOp,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.LShift,
    ast.RShift,
    ast.BitOr,
    ast.BitXor,
    ast.BitAnd,
    ast.UnaryOp,
    ast.Not,
    ast.USub,
    ast.UAdd,
    ast.Invert,
    ast.IfExp,
    ast.Dict,
    ast.Set,
    ast.List,
    ast.Tuple,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.comprehension,
    ast.Compare,
    ast.Eq,
    ast.NotEq,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.Is,
    ast.IsNot,
    ast.In,
    ast.NotIn,
    ast.Call,
    ast.keyword,
    ast.Constant,
    ast.Attribute,
    ast.Subscript,
    ast.Slice,
    ast.Starred,
    ast.Name,
    ast.Load,
    ast.Store,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.NamedExpr,
)

# -- static check ----------------------------------------------------------------------------


def _bound_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _refuse_name(name: str, what: str = "name") -> None:
    if name in FORBIDDEN_NAMES:
        raise UnsafeLambdaError(f"{what} {name!r} is forbidden in a checker lambda ({FORBIDDEN_NAMES[name]})")
    if name.startswith(("__", "_rl_")):
        raise UnsafeLambdaError(f"{what} {name!r} is forbidden in a checker lambda (reserved names)")


def _source_order(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)


def _check_syntax(nodes: list[ast.AST]) -> None:
    for node in nodes:
        if not isinstance(node, _ALLOWED_NODES):
            raise UnsafeLambdaError(f"{type(node).__name__} is not allowed in a checker lambda")
        if isinstance(node, ast.comprehension) and node.is_async:
            raise UnsafeLambdaError("async comprehensions are not allowed in a checker lambda")


def _check_names(nodes: list[ast.AST], bound: set[str]) -> None:
    for node in sorted((n for n in nodes if isinstance(n, (ast.arg, ast.Name, ast.keyword))), key=_source_order):
        if isinstance(node, ast.arg):
            _refuse_name(node.arg, "parameter")
        elif isinstance(node, ast.Name):
            _refuse_name(node.id)
            if isinstance(node.ctx, ast.Load) and node.id not in bound and node.id not in SAFE_NAMES:
                raise UnsafeLambdaError(
                    f"name {node.id!r} is not allowed in a checker lambda (not a parameter or a safe builtin)"
                )
        elif isinstance(node, ast.keyword) and node.arg is not None:
            _refuse_name(node.arg, "keyword")


def _check_targets(nodes: list[ast.AST]) -> None:
    """Only names are assigned (comprehension and walrus targets): ``for re.search in …`` or
    ``for d["k"] in …`` would rebind a shared object for every later call."""
    for node in nodes:
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            what = "an attribute" if isinstance(node, ast.Attribute) else "an item"
            raise UnsafeLambdaError(f"assigning to {what} is forbidden in a checker lambda (only names are assigned)")


def _depth(tree: ast.AST) -> int:
    """The nesting depth of ``tree`` (iterative: a deep tree must not exhaust the stack)."""
    deepest, todo = 0, [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        todo.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _check_attributes(nodes: list[ast.AST]) -> None:
    for node in sorted((n for n in nodes if isinstance(n, ast.Attribute)), key=_source_order):
        if node.attr.startswith("_"):
            raise UnsafeLambdaError(f"attribute {node.attr!r} is forbidden in a checker lambda (dunder/private access)")
        if node.attr in _UNSAFE_ATTRIBUTES:
            raise UnsafeLambdaError(
                f"attribute {node.attr!r} is forbidden in a checker lambda ({_UNSAFE_ATTRIBUTES[node.attr]})"
            )
        if node.attr not in SAFE_ATTRIBUTES:
            raise UnsafeLambdaError(f"attribute {node.attr!r} is not allowed in a checker lambda")


def _check_format_specs(nodes: list[ast.AST]) -> None:
    for node in nodes:
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            spec = node.format_spec
            parts = spec.values if isinstance(spec, ast.JoinedStr) else [spec]
            if not all(isinstance(p, ast.Constant) for p in parts):
                raise UnsafeLambdaError("computed f-string format specs are not allowed in a checker lambda")
            text = "".join(str(p.value) for p in parts)  # type: ignore[attr-defined]
            if any(len(run) > 3 for run in re.findall(r"[0-9]+", text)):
                raise UnsafeLambdaError(f"f-string format spec {text!r} is too wide for a checker lambda")


def check_lambda_source(source: str, limits: Limits = DEFAULT_LIMITS) -> ast.Expression:
    """Parse ``source`` and check it against the allow-list; returns the syntax tree.

    Raises :class:`UnsafeLambdaError` naming the first thing refused: disallowed syntax, then
    names (the most telling: ``__import__``, ``open`` …), then attributes, in source order.
    """
    if not isinstance(source, str):
        raise UnsafeLambdaError(f"a checker lambda must be a string, not {type(source).__name__}")
    if len(source) > limits.max_source:
        raise UnsafeLambdaError(f"checker lambda is {len(source)} characters long (limit {limits.max_source})")
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise UnsafeLambdaError(f"checker lambda is not valid Python: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise UnsafeLambdaError("checker lambda is nested too deeply to parse") from None
    if not isinstance(tree.body, ast.Lambda):
        raise UnsafeLambdaError(f"a checker must be a single lambda expression, not {type(tree.body).__name__}")
    depth = _depth(tree)
    if depth > limits.max_depth:
        raise UnsafeLambdaError(f"checker lambda is nested {depth} levels deep (limit {limits.max_depth})")
    nodes = list(ast.walk(tree))
    _check_syntax(nodes)
    _check_targets(nodes)
    _check_names(nodes, _bound_names(tree))
    _check_attributes(nodes)
    _check_format_specs(nodes)
    return tree


# -- runtime guards --------------------------------------------------------------------------


class _Meter:
    """Counters for one evaluation (reset by :class:`SafeLambda` before each call)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.steps = 0
        self.work = 0

    def reset(self) -> None:
        self.steps = 0
        self.work = 0

    def step(self, n: int = 1) -> None:
        self.steps += n
        if self.steps > self.limits.max_steps:
            raise LambdaLimitError(f"checker lambda took more than {self.limits.max_steps} steps")

    def charge(self, n: int) -> None:
        self.work += n
        if self.work > self.limits.max_work:
            raise LambdaLimitError(f"checker lambda did more than {self.limits.max_work} units of work")

    def check_size(self, size: int, what: str) -> None:
        if size > self.limits.max_size:
            raise LambdaLimitError(f"{what} of {size} items exceeds the limit of {self.limits.max_size}")

    def check_int(self, value: Any, what: str) -> None:
        if isinstance(value, int) and value.bit_length() > self.limits.max_int_bits:
            raise LambdaLimitError(f"{what} exceeds {self.limits.max_int_bits} bits")


_LOCAL = threading.local()


def _stack() -> list[_Meter]:
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = [_Meter(DEFAULT_LIMITS)]
    return stack


def _meter() -> _Meter:
    return _stack()[-1]


_SIZED = (str, bytes, list, tuple, dict, set, frozenset, range)
_SEQUENCES = (str, bytes, list, tuple)
_CONTAINERS = (list, tuple, set, frozenset)


def _cost(value: Any) -> int:
    """Rough work a built-in does on ``value``: its length, plus the lengths of the strings
    and containers directly inside a container (so ``"".join([big] * n)`` is priced)."""
    if isinstance(value, (str, bytes, range)):
        return len(value)
    if isinstance(value, dict):
        return len(value) + sum(len(v) for v in value.values() if isinstance(v, _SEQUENCES))
    if isinstance(value, _CONTAINERS):
        return len(value) + sum(len(v) for v in value if isinstance(v, _SEQUENCES))
    return 0


def _size(value: Any) -> int:
    return len(value) if isinstance(value, _SIZED) else 0


def _counted(iterable: Iterable[Any]) -> Iterator[Any]:
    meter = _meter()
    for item in iterable:
        meter.step()
        cost = _cost(item)
        if cost:
            meter.charge(cost)
        yield item


def _guard_result(value: Any, what: str) -> Any:
    meter = _meter()
    meter.check_int(value, what)
    size = _size(value)
    if size:
        meter.check_size(size, what)
        meter.charge(size)  # allocation is work: many large results exhaust the budget
    if isinstance(value, Iterator) and not isinstance(value, _SIZED):
        return _counted(value)  # lazy results (map, zip, finditer …) are priced per item
    return value


def _rl_call(func: Any, *args: Any, **kwargs: Any) -> Any:
    meter = _meter()
    meter.step()
    meter.charge(sum(_cost(a) for a in args) + sum(_cost(v) for v in kwargs.values()))
    owner = getattr(func, "__self__", None)
    name = getattr(func, "__name__", "")
    margs = args
    if owner is None and getattr(func, "__objclass__", None) is not None and args:
        owner, margs = args[0], args[1:]  # an unbound method such as str.join(sep, items)
    if isinstance(owner, (str, bytes)) and owner:
        if name == "join" and margs and isinstance(margs[0], _SIZED):
            items = margs[0]
            meter.check_size(len(owner) * max(len(items) - 1, 0) + _cost(items), "join result")
        elif (
            name == "replace"
            and len(margs) >= 2
            and isinstance(margs[0], type(owner))
            and isinstance(margs[1], type(owner))
        ):
            # margs[0] is an instance of type(owner) (checked above); mypy cannot tie the two
            # str | bytes narrowings together.
            hits = owner.count(margs[0]) if margs[0] else len(owner) + 1  # type: ignore[arg-type]
            meter.check_size(len(owner) + hits * max(len(margs[1]) - len(margs[0]), 0), "replace result")
        meter.charge(len(owner))
    elif isinstance(owner, re.Pattern) and name in ("sub", "subn") and len(margs) >= 2:
        _check_sub(margs[0], margs[1])
    if func is sum and (len(args) > 1 or "start" in kwargs):
        start = args[1] if len(args) > 1 else kwargs["start"]
        if not isinstance(start, (int, float, complex)):
            raise LambdaLimitError("sum() with a non-numeric start (quadratic concatenation) is not allowed")
    result = func(*args, **kwargs)
    if isinstance(owner, _SIZED):
        meter.check_size(len(owner), f"{type(owner).__name__} after {name}()")
    return _guard_result(result, f"result of {name or 'call'}()")


def _rl_binop(op: str, left: Any, right: Any) -> Any:
    meter = _meter()
    meter.step()
    limits = meter.limits
    if op == "**":
        if (
            isinstance(left, int)
            and isinstance(right, int)
            and right > 0
            and abs(left) > 1
            and right * left.bit_length() > limits.max_int_bits + left.bit_length()
        ):
            raise LambdaLimitError(f"{left.bit_length()}-bit integer ** {right} exceeds {limits.max_int_bits} bits")
        result = left**right
    elif op == "<<":
        if isinstance(left, int) and isinstance(right, int) and left and right > limits.max_int_bits:
            raise LambdaLimitError(f"<< {right} exceeds {limits.max_int_bits} bits")
        result = left << right
    elif op == "*":
        for seq, n in ((left, right), (right, left)):
            if isinstance(seq, _SEQUENCES) and isinstance(n, int):
                meter.check_size(len(seq) * max(n, 0), "repetition")
        if (
            isinstance(left, int)
            and isinstance(right, int)
            and left.bit_length() + right.bit_length() > limits.max_int_bits + 1
        ):
            raise LambdaLimitError(f"product exceeds {limits.max_int_bits} bits")
        result = left * right
    elif op == "+":
        if isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
            meter.check_size(len(left) + len(right), "concatenation")
        result = left + right
    elif op == "%":
        if isinstance(left, (str, bytes)):
            raise LambdaLimitError("printf-style '%' formatting is not allowed in a checker lambda")
        result = left % right
    else:  # pragma: no cover - the transformer only emits the operators above
        raise LambdaLimitError(f"operator {op} is not guarded")
    meter.check_int(result, f"result of {op}")
    size = _size(result)
    if size:
        meter.charge(size)
    return result


def _rl_iter(iterable: Any) -> Iterator[Any]:
    return _counted(iterable)


def _rl_new(value: Any) -> Any:
    """Guard for slices and displays (``x[a:b]``, ``[*x]``, ``{**d}``): price the copy made."""
    size = _size(value)
    if size:
        _meter().charge(size)
    return value


def _rl_str(value: Any) -> Any:
    """Guard for f-string fields: price the conversion to text before it happens."""
    _meter().charge(_cost(value))
    return value


_GUARDED_OPS = {ast.Pow: "**", ast.LShift: "<<", ast.Mult: "*", ast.Add: "+", ast.Mod: "%"}


class _Guard(ast.NodeTransformer):
    """Route calls, growth operators and iteration through the runtime guards."""

    @staticmethod
    def _helper(name: str, node: ast.AST, args: list[ast.expr], keywords: list[ast.keyword] | None = None) -> ast.Call:
        call = ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args, keywords=keywords or [])
        return ast.copy_location(call, node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        op = _GUARDED_OPS.get(type(node.op))
        if op is None:
            return node
        return self._helper("_rl_binop", node, [ast.Constant(op), node.left, node.right])

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        return self._helper("_rl_call", node, [node.func, *node.args], node.keywords)

    def visit_comprehension(self, node: ast.comprehension) -> ast.AST:
        self.generic_visit(node)
        node.iter = self._helper("_rl_iter", node.iter, [node.iter])
        return node

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> ast.AST:
        self.generic_visit(node)
        return self._helper("_rl_iter", node, [node])

    def _priced(self, node: ast.expr) -> ast.AST:
        self.generic_visit(node)
        return self._helper("_rl_new", node, [node])

    def _priced_load(self, node: ast.Subscript | ast.List | ast.Tuple) -> ast.AST:
        if not isinstance(node.ctx, ast.Load):  # assignment targets stay as they are
            return self.generic_visit(node)
        return self._priced(node)

    # ast.NodeVisitor dispatches on these exact names.
    visit_Subscript = visit_List = visit_Tuple = _priced_load  # noqa: N815
    visit_Set = visit_Dict = visit_JoinedStr = _priced  # noqa: N815

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.AST:
        # The format spec is a constant JoinedStr (checked statically) and must stay one.
        node.value = self._helper("_rl_str", node.value, [self.visit(node.value)])
        return node


_HELPERS = {"_rl_call": _rl_call, "_rl_binop": _rl_binop, "_rl_iter": _rl_iter, "_rl_str": _rl_str, "_rl_new": _rl_new}


class SafeLambda:
    """A checked lambda. Calling it runs the function with fresh runtime bounds.

    ``source`` is the lambda as written; ``parameters`` its parameter names. Exceptions raised
    by the lambda's own code propagate unchanged; exceeding a bound raises
    :class:`LambdaLimitError`.
    """

    def __init__(self, source: str, function: Callable[..., Any], limits: Limits) -> None:
        self.source = source
        self._function = function
        self._limits = limits
        self.signature = inspect.signature(function)

    @property
    def parameters(self) -> list[str]:
        return list(self.signature.parameters)

    def accepts(self, name: str) -> bool:
        """Whether the lambda takes a keyword argument ``name`` (explicitly or via ``**kw``)."""
        params = self.signature.parameters
        return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    def bind_check(self, *args: Any, **kwargs: Any) -> None:
        """Raise :class:`TypeError` (with a clear message) if the call would not bind."""
        try:
            self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            given = ", ".join([f"{len(args)} positional"] + sorted(kwargs))
            raise TypeError(f"lambda{self.signature} cannot be called with ({given}): {exc}") from None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        stack = _stack()
        stack.append(_Meter(self._limits))
        try:
            return self._function(*args, **kwargs)
        except RecursionError:
            raise LambdaLimitError("checker lambda recursed too deeply") from None
        finally:
            stack.pop()

    def __repr__(self) -> str:
        return f"SafeLambda({self.source!r})"


def compile_lambda(source: str, limits: Limits = DEFAULT_LIMITS) -> SafeLambda:
    """Check ``source`` (a ``lambda ...`` expression) and return it as a :class:`SafeLambda`.

    Raises :class:`UnsafeLambdaError` for anything outside the allow-list (and for syntax
    errors); in that case no part of the lambda has been evaluated.
    """
    tree = check_lambda_source(source, limits)
    guarded = ast.fix_missing_locations(_Guard().visit(tree))
    code = compile(guarded, "<checker lambda>", "eval")
    namespace: dict[str, Any] = {"__builtins__": {}}
    namespace.update(SAFE_NAMES)
    # Each lambda gets its own module stand-ins: nothing one lambda could change in them is
    # seen by another (the worker process of an LVE is the guarantee; this is the first line).
    namespace.update({name: _namespace(vars(SAFE_NAMES[name])) for name in ("re", "math", "json")})
    namespace.update(_HELPERS)
    stack = _stack()
    stack.append(_Meter(limits))
    try:
        function = eval(code, namespace, {})
    finally:
        stack.pop()
    return SafeLambda(source, function, limits)
