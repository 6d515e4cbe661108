"""Untrusted checker lambdas: what is allowed, what is refused before running, and runtime bounds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from redline.lve.sandbox.safe_eval import LambdaLimitError, Limits, UnsafeLambdaError, compile_lambda


@pytest.mark.parametrize(
    ("source", "args", "kwargs", "expected"),
    [
        ("lambda r, a, b: int(r) == int(a) + int(b)", ("15",), {"a": 12, "b": 3}, True),
        ("lambda rs, a, b: all(int(r) == int(a) + int(b) for r in rs)", (["4", "5"],), {"a": "3", "b": "1"}, False),
        (
            r"lambda r, value: r == 'ERROR' or re.match(r'(\d{4,10})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})', r.strip()) is not None",
            (" 2023-01-02 03:04:05 ",),
            {"value": "x"},
            True,
        ),
        ("lambda r: str(int(1) + 2) in r and r.lower().startswith('the')", ("The answer is 3",), {}, True),
        ("lambda r: sorted({k: v for k, v in json.loads(r).items()}) == ['a', 'b']", ('{"b": 1, "a": 2}',), {}, True),
        (
            "lambda r: len(set(w for w in r.split() if w.isalpha())) == 2 and f'{len(r):>3}' == '  7'",
            ("aa bb 1",),
            {},
            True,
        ),
        (
            "lambda r: (n := len(r)) == 3 and [*r] == ['a', 'b', 'c'] and r[::-1] == 'cba' and 7 % 3 == 1",
            ("abc",),
            {},
            True,
        ),
        (
            "lambda r: math.isclose(float(r.replace(',', '')), 1000.0) and 2 ** 10 == 1024 and 'ab' * 2 == 'abab'",
            ("1,000",),
            {},
            True,
        ),
        (
            "lambda r: max(map(len, r.split())) == 5 and dict(enumerate('xy')) == {0: 'x', 1: 'y'} and list(range(3)) == [0, 1, 2]",
            ("hello a",),
            {},
            True,
        ),
        (
            "lambda r: [a for a, _ in zip(r, range(2))] == ['h', 'i'] and str.join('-', ['a', 'b']) == 'a-b'",
            ("hi!",),
            {},
            True,
        ),
    ],
)
def test_benign_lambdas_run(source, args, kwargs, expected):
    assert compile_lambda(source)(*args, **kwargs) is expected


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("__import__('os').system('touch /tmp/pwned')", "single lambda"),
        ("lambda r: __import__('os').system('touch /tmp/pwned')", "'__import__' is forbidden"),
        ("lambda r: open('/etc/passwd').read()", "'open' is forbidden"),
        ("lambda r: exec('import os')", "'exec' is forbidden"),
        ("lambda r: eval('1+1')", "'eval' is forbidden"),
        ("lambda r: compile('1', 'x', 'eval')", "'compile' is forbidden"),
        ("lambda r: globals()", "'globals' is forbidden"),
        ("lambda r: getattr(r, 'upper')()", "'getattr' is forbidden"),
        ("lambda r: type(r)", "'type' is forbidden"),
        ("lambda r: ().__class__.__bases__[0].__subclasses__()", "'__class__' is forbidden"),
        ("lambda r: r.__class__", "'__class__' is forbidden"),
        ("lambda r: (lambda: 0).__globals__", "'__globals__' is forbidden"),
        ("lambda r: '{0.__class__.__mro__}'.format(r)", "'format' is forbidden"),
        ("lambda r: (x for x in r).gi_frame.f_back", "'gi_frame' is not allowed"),
        ("lambda r: re.enum.sys.modules", "'enum' is not allowed"),
        ("lambda r: os.system('id')", "'os' is forbidden"),
        ("lambda r: subprocess.run(['id'])", "'subprocess' is forbidden"),
        ("lambda r, __builtins__=None: 1", "'__builtins__' is forbidden"),
        ("lambda r: _rl_call(print, 1)", "reserved"),
        ("lambda r: undefined_name(r)", "'undefined_name' is not allowed"),
        ("lambda r: r.ljust(10**9)", "'ljust' is forbidden"),
        ("lambda r: f'{r:>999999999}'", "too wide"),
        ("import os", "not valid Python"),
        ("print('hi')", "single lambda"),
        ("lambda r: [x async for x in r]", "not allowed"),
    ],
)
def test_malicious_lambdas_are_refused_naming_what_they_tried(source, needle):
    with pytest.raises(UnsafeLambdaError) as info:
        compile_lambda(source)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_a_refused_lambda_never_runs(tmp_path: Path):
    marker = tmp_path / "ran"
    sources = [
        f"lambda r: open({str(marker)!r}, 'w').write('x')",
        f"(lambda: open({str(marker)!r}, 'w'))()",
        f"lambda r=open({str(marker)!r}, 'w'): r",  # a default value would run at definition time
    ]
    for source in sources:
        with pytest.raises(UnsafeLambdaError):
            compile_lambda(source)
    assert not marker.exists()


@pytest.mark.parametrize(
    "source",
    [
        "lambda r: 9 ** 9 ** 9",
        "lambda r: 10 ** 100000",
        "lambda r: 1 << 10 ** 9",
        "lambda r: 'x' * 10 ** 12",
        "lambda r: [0] * 10 ** 10",
        "lambda r: sum(range(10 ** 12))",
        "lambda r: [1 for a in range(10 ** 6) for b in range(10 ** 6)]",
        "lambda r: (lambda f: f(f))(lambda f: f(f))",
        "lambda r: (lambda f: f(f, 40))(lambda f, n: n and f(f, n - 1) + f(f, n - 1))",
        "lambda r: ''.join(r * 1000 for _ in range(10 ** 5))",
        "lambda r: ''.join(map(lambda _: r * 1000, range(10 ** 5)))",
        "lambda r: ('x' * 10 ** 6).join([''] * 10 ** 6)",
        "lambda r: ('a' * 10 ** 6).replace('a', 'bb' * 10 ** 5)",
        "lambda r: re.sub('', 'x' * 1000, 'y' * 10 ** 5)",
        "lambda r: [l.extend(l) for l in [[1]] for _ in range(100)]",
        "lambda r: sum([[1]] * 10 ** 5, [])",
        "lambda r: '%0999999999d' % 1",
        "lambda r: [f'{r}{r}' for _ in range(10 ** 5)]",
    ],
)
def test_runaway_lambdas_are_stopped_quickly(source):
    func = compile_lambda(source)
    start = time.monotonic()
    with pytest.raises(LambdaLimitError):
        func("hello world " * 100)
    assert time.monotonic() - start < 5


def test_limits_are_per_call_and_configurable():
    func = compile_lambda("lambda r: len([c for c in r])", Limits(max_steps=100))
    assert func("x" * 50) == 50
    assert func("x" * 50) == 50  # the budget is fresh for each call
    with pytest.raises(LambdaLimitError, match="steps"):
        func("x" * 500)


def test_signature_helpers():
    func = compile_lambda("lambda r, a, b=1: r")
    assert func.parameters == ["r", "a", "b"]
    assert func.accepts("a") and not func.accepts("c")
    assert compile_lambda("lambda **kw: 1").accepts("anything")
    with pytest.raises(TypeError, match="cannot be called"):
        func.bind_check("x", c=1)


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("lambda r: [0 for re.search in [lambda *a, **k: True]] and True", "assigning to an attribute"),
        ("lambda r: [0 for json.loads in [len]]", "assigning to an attribute"),
        ("lambda r, d: [0 for d['k'] in [1]]", "assigning to an item"),
        ("lambda r: " + "-" * 4000 + "1", "nested too deeply"),
        ("lambda r: " + "not " * 150 + "r", "nested 15"),
    ],
)
def test_lambdas_that_rebind_shared_objects_or_nest_too_deeply_are_refused(source, needle):
    with pytest.raises(UnsafeLambdaError, match=needle):
        compile_lambda(source)


def test_each_lambda_has_its_own_module_stand_ins():
    first = compile_lambda("lambda r: re.search('x', r) is not None")
    second = compile_lambda("lambda r: re.search('x', r) is not None")
    stand_in = first._function.__globals__["re"]
    assert stand_in is not second._function.__globals__["re"]
    stand_in.search = lambda *args: None  # what a lambda could do if the static checks missed it
    assert first("x") is False and second("x") is True
