"""The heading over a probe's example failures cannot be read as a failure count: it says how many
of the outputs that failed it shows."""

from __future__ import annotations

from redline.report.terminal import _shown_failures


def test_a_heading_showing_some_failures_says_how_many_of_the_failed_outputs_it_shows():
    assert _shown_failures(1, 2) == "showing 1 of the 2 outputs that failed"


def test_a_heading_showing_every_failure_names_them_all():
    assert _shown_failures(2, 2) == "the 2 outputs that failed"
    assert _shown_failures(1, 1) == "the output that failed"
