"""redline.jsonio: JSON text read from stores, endpoints and files, whatever it holds."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from redline import jsonio

# Run in a child process: an orjson that does not bound nesting (before 3.9.15) overflows the C
# stack and kills the interpreter, which would take the test session down with it.
_DEEP_READS = textwrap.dedent(
    """
    from redline import jsonio
    from redline.store import rows

    deep = "[" * 300_000 + "]" * 300_000
    for text in (deep, deep.encode(), '{"a":' * 300_000 + "1" + "}" * 300_000):
        try:
            jsonio.loads(text)
        except ValueError:
            print("refused")
    try:
        jsonio.orjson_loads(deep.encode())
    except ValueError:
        print("refused")
    try:
        rows.json_value(deep, "the attempt")
    except rows.Bad as exc:
        print(exc)
    """
)


def test_json_nested_far_too_deep_is_refused_with_a_value_error_instead_of_crashing_the_process() -> None:
    done = subprocess.run([sys.executable, "-c", _DEEP_READS], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[:4] == ["refused"] * 4
    assert "nests more than" in lines[4]


def test_ordinary_json_with_many_brackets_still_reads_the_same() -> None:
    value = {"outputs": [{"text": str(i), "lang": "en"} for i in range(3000)], "n": 1}
    assert jsonio.loads(jsonio.dumps(value)) == value
    assert jsonio.loads(jsonio.dumps_bytes(value)) == value
