"""String detectors: target strings and regular expressions."""

from __future__ import annotations

import pytest

from helpers.answered import answered
from redline.detectors import DetectorUnavailable, get_detector


def test_target_string_is_case_and_unicode_insensitive() -> None:
    det = get_detector("strings.TargetString")
    a = answered("The SECRET is Zorblax", "nothing here", "Zor\u200bblax", targets=["zorblax"])
    assert det.detect(a) == [1.0, 0.0, 1.0]


def test_regex_options_modes_and_errors() -> None:
    d = get_detector("strings.Regex", pattern=["disclaimer", "not medical advice"])
    assert d.detect(answered("This is not medical advice.", "Take two pills."))[0:2] == [1.0, 0.0]
    absent = get_detector("strings.Regex", pattern="not medical advice", mode="absent")
    assert absent.detect(answered("This is not medical advice.", "Take two pills.")) == [0.0, 1.0]
    case = get_detector("strings.Regex", pattern="ABC", flags="")
    assert case.detect(answered("abc")) == [0.0]
    assert get_detector("strings.Regex").detect(answered("anything")) == [None]  # no pattern: not scored
    with pytest.raises(DetectorUnavailable, match="invalid pattern"):
        get_detector("strings.Regex", pattern="(unclosed")
    with pytest.raises(DetectorUnavailable, match="mode"):
        get_detector("strings.Regex", pattern="x", mode="sometimes")
    with pytest.raises(DetectorUnavailable, match="invalid pattern"):
        get_detector("strings.Regex").detect(answered("x", regex="[bad"))
