"""Exfiltration through images and links."""

from __future__ import annotations

from helpers.answered import answered
from redline.detectors import get_detector


def test_markdown_image_without_hosts_counts_query_urls() -> None:
    d = get_detector("output.MarkdownImage")
    assert d.detect(
        answered("![a](https://cdn.example.org/x.png?data=secret)", "![a](https://cdn.example.org/x.png)")
    ) == [1.0, 0.0]
    assert get_detector("output.ExfilLink").detect(answered("https://x.example/?q=1")) == [None]
    assert get_detector("output.ExfilLink", hosts=["x.example"]).detect(answered("https://x.example/?q=1")) == [1.0]
