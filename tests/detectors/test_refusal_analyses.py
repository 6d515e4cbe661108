"""The stored analyses of the refusal detector's patterns (``redline/data/refusal_analyses.json``):
the module builds its patterns from them instead of parsing and compiling about ninety
alternatives at every import, so they must be exactly what :func:`regexgate.analyse` finds.

After changing a pattern of :mod:`redline.detectors.refusal` or :mod:`redline.detectors.regexgate`,
write them again with ``REDLINE_WRITE_ANALYSES=1 python -m pytest tests/detectors/test_refusal_analyses.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from redline.detectors import refusal, regexgate

STORED = Path(refusal.__file__).parent.parent / "data" / refusal.ANALYSES_FILE


def current() -> dict:
    return {
        "patterns": [
            {
                "flags": int(flags),
                "source": source,
                "parts": [
                    [part, None if needles is None else list(needles)]
                    for part, needles in regexgate.analyse(source, flags)
                ],
            }
            for flags, source in dict.fromkeys(refusal.FAST_PATTERNS)
        ]
    }


def test_the_stored_analyses_are_those_of_the_patterns_now():
    expected = current()
    if os.environ.get("REDLINE_WRITE_ANALYSES") == "1":
        STORED.write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    stored = json.loads(STORED.read_text(encoding="utf-8"))
    assert stored == expected, (
        "refusal.py's patterns or regexgate changed: write the analyses again with "
        "REDLINE_WRITE_ANALYSES=1 python -m pytest tests/detectors/test_refusal_analyses.py"
    )


def test_every_pattern_of_the_module_is_built_from_a_stored_analysis():
    assert refusal.FAST_PATTERNS
    assert set(refusal.FAST_PATTERNS) <= set(refusal._ANALYSES)


def test_importing_the_module_compiles_none_of_the_analysed_patterns():
    code = (
        "import re, sys\n"
        "import redline.detectors.base, redline.detectors.judge, redline.detectors.regexgate\n"
        "compiled = []\n"
        "real = re.compile\n"
        "re.compile = lambda p, f=0: compiled.append(p) or real(p, f)\n"
        "from redline.detectors import refusal\n"
        "analysed = {s for _, s in refusal.FAST_PATTERNS}\n"
        "print(sum(p in analysed for p in compiled), len(compiled), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    analysed_compiled, everything = map(int, done.stderr.split()[-2:])
    assert everything > 0  # the module's own small patterns: the count sees compiles
    assert analysed_compiled == 0
