"""Every compliance tag of every registered probe is one the reviewed table
(``redline/data/tag_review.toml``) holds, with the reason it fits the framework's own definition;
a framework a probe has no tag of is one the table says why none of its items fits."""

from __future__ import annotations

import pytest

from redline.probes import probes
from redline.taxonomy import FRAMEWORKS, framework_of, framework_tags, is_known, tag_review, tag_reviews


@pytest.mark.parametrize("name", probes.names())
def test_every_framework_tag_of_a_probe_is_in_the_reviewed_table(name: str) -> None:
    review = tag_review(name)
    tags = [t for t in probes.load(name).tags if framework_of(t)]
    unreviewed = [t for t in tags if t not in review.tags]
    assert not unreviewed, f"{name}: tags not reviewed in redline/data/tag_review.toml: {unreviewed}"
    for framework in FRAMEWORKS:
        has = framework_tags(tags, framework)
        assert has or framework in review.none, f"{name} has no {framework}: tag and the table says not why"
        assert not (has and framework in review.none), f"{name}: {has} though the table says none fits"


def test_every_entry_of_the_table_is_a_known_tag_with_a_reason_and_names_a_registered_probe() -> None:
    names = probes.names()
    for key, entry in tag_reviews().items():
        assert key in names or any(n.startswith(key + ".") for n in names), f"{key}: no such probe or family"
        for tag, reason in entry.items():
            if tag == "none":
                assert set(reason) <= set(FRAMEWORKS) and all(str(r).strip() for r in reason.values()), key
                continue
            assert framework_of(tag) and is_known(tag), f"{key}: {tag} is not a framework tag redline knows"
            assert isinstance(reason, str) and len(reason.split()) >= 2, f"{key}: {tag} has no reason"


def test_harmful_requests_are_filed_under_no_prompt_injection_or_misinformation_category() -> None:
    for name in [n for n in probes.names() if n.startswith("harmful.")]:
        tags = probes.load(name).tags
        assert "owasp:llm01" not in tags and "owasp:llm09" not in tags, name
        assert "nist:dangerous-content" in tags
    assert "owasp" in tag_review("harmful.Requests").none
    # a jailbreak is a prompt injection (LLM01) by OWASP's own definition
    assert "owasp:llm01" in probes.load("jailbreak.Persona").tags
