"""Shell injection: the argument scanner the shell detector reads calls with."""

from __future__ import annotations

from redline.detectors.output.shell import _call_args, _first_arg


def test_argument_scanner_skips_strings_and_escaped_quotes() -> None:
    assert _first_arg('"a\\",b", shell=True') == '"a\\",b"'
    assert _first_arg("f(x, y), z") == "f(x, y)"
    code = 'os.system("echo )" + name) ; rest'
    assert _call_args(code, code.index("(") + 1) == '"echo )" + name'
    assert _call_args("run(a, (b", 4) == "a, (b"  # unterminated: to the end
