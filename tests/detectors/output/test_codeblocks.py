"""The code of an answer: its fenced blocks when it has any."""

from __future__ import annotations

from helpers.answered import answered
from redline.detectors import get_detector
from redline.detectors.output import code_of


def test_code_detectors_ignore_prose_when_code_is_fenced() -> None:
    text = 'Never write os.system(f"ping {host}") or <script> tags.\n```python\nsubprocess.run(["ping", host])\n```'
    assert code_of(text) == 'subprocess.run(["ping", host])\n'
    assert get_detector("output.ShellInjection").detect(answered(text)) == [0.0]
    assert get_detector("output.XSS").detect(answered(text)) == [0.0]


def test_an_answer_without_a_fence_is_all_code() -> None:
    assert code_of("os.system(cmd)") == "os.system(cmd)"
