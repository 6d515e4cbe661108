"""Compliance tags: every registered probe maps to OWASP LLM 2025, MITRE ATLAS and NIST AI 600-1
with known values, and ``--probes TAG`` selects by tag."""

from __future__ import annotations

import pytest

from redline.plugins import UnknownPluginError
from redline.probes import probes, resolve_probes
from redline.taxonomy import (
    ATLAS_TECHNIQUES,
    FRAMEWORKS,
    NIST_AI_600_1,
    OWASP_LLM_2025,
    UnknownTagError,
    category_name,
    check_tag,
    framework_of,
    framework_tags,
    is_known,
    normalise_tag,
    tag_matches,
    tag_review,
)


@pytest.mark.parametrize("name", probes.names())
def test_every_registered_probe_is_mapped_to_the_three_frameworks(name: str) -> None:
    """Iterates the registry: probes other modules add are held to it as well. A framework none of
    whose items fits the probe is left out, with the reason in the reviewed table."""
    cls = probes.load(name)
    for framework in FRAMEWORKS:
        assert framework_tags(cls.tags, framework) or framework in tag_review(name).none, (
            f"{name} has no {framework}: tag (tags: {cls.tags})"
        )
    unknown = [t for t in cls.tags if not is_known(t)]
    assert not unknown, f"{name}: tags not in redline.taxonomy: {unknown}"
    assert all(normalise_tag(t) == t for t in cls.tags if framework_of(t)), f"{name}: write tags as {cls.tags}"


def test_catalogues_hold_the_published_items() -> None:
    assert list(OWASP_LLM_2025) == [f"llm{i:02d}" for i in range(1, 11)]
    assert OWASP_LLM_2025["llm01"] == "Prompt Injection"
    assert OWASP_LLM_2025["llm07"] == "System Prompt Leakage"
    assert OWASP_LLM_2025["llm10"] == "Unbounded Consumption"
    assert len(NIST_AI_600_1) == 12
    assert set(NIST_AI_600_1) == {
        "cbrn",
        "confabulation",
        "dangerous-content",
        "data-privacy",
        "environmental",
        "harmful-bias",
        "human-ai-configuration",
        "information-integrity",
        "information-security",
        "intellectual-property",
        "obscene-content",
        "value-chain",
    }
    assert all(t.startswith("AML.T") for t in ATLAS_TECHNIQUES)
    assert ATLAS_TECHNIQUES["AML.T0054"] == "LLM Jailbreak"


def test_names_and_normalising() -> None:
    assert category_name("owasp:llm01") == "LLM01:2025 Prompt Injection"
    assert category_name("atlas:AML.T0051.001") == "AML.T0051.001 LLM Prompt Injection: Indirect"
    assert category_name("nist:cbrn") == "CBRN Information or Capabilities"
    assert category_name("harm:cbrn") == "harm:cbrn"
    assert normalise_tag(" OWASP:LLM01 ") == "owasp:llm01"
    assert normalise_tag("ATLAS:aml.t0051") == "atlas:AML.T0051"
    assert check_tag("Nist:Data-Privacy") == "nist:data-privacy"
    assert framework_tags(["x", "owasp:llm09", "owasp:llm01", "owasp:llm09"], "owasp") == ["owasp:llm01", "owasp:llm09"]
    assert tag_matches("atlas:AML.T0051", "atlas:AML.T0051.001")
    assert not tag_matches("atlas:AML.T0051.001", "atlas:AML.T0051")
    assert not tag_matches("atlas:AML.T005", "atlas:AML.T0051")


@pytest.mark.parametrize(
    ("tag", "suggests"),
    [("owasp:llm11", "owasp:llm10"), ("nist:data-privcy", "nist:data-privacy"), ("atlas:AML.T0051.009", "AML.T0051")],
)
def test_unknown_framework_tag_is_one_line_with_suggestions(tag: str, suggests: str) -> None:
    with pytest.raises(UnknownTagError) as info:
        check_tag(tag)
    message = str(info.value)
    assert "\n" not in message and tag in message and suggests in message
    with pytest.raises(UnknownPluginError):  # what callers of resolve_probes already handle
        resolve_probes(tag)


def test_selection_by_tag_of_each_system() -> None:
    for selection in ("owasp:llm01", "atlas:AML.T0051", "nist:data-privacy", "harm:cbrn"):
        chosen = resolve_probes(selection)
        assert chosen
        for name in chosen:
            tags = [normalise_tag(t) for t in probes.load(name).tags]
            assert any(tag_matches(normalise_tag(selection), t) for t in tags), (selection, name)
    # every active probe carrying the tag is selected
    expected = [n for n in probes.names() if probes.load(n).active and "nist:data-privacy" in probes.load(n).tags]
    assert resolve_probes("nist:data-privacy") == expected
    # a technique selects its sub-techniques
    assert "injection.Direct" in resolve_probes("atlas:AML.T0051")
    assert "injection.Direct" not in resolve_probes("atlas:AML.T0051.001")
    # case does not matter
    assert resolve_probes("ATLAS:aml.t0054") == resolve_probes("atlas:AML.T0054")


def test_tags_combine_with_names_and_families() -> None:
    chosen = resolve_probes("encoding.Base64,nist:cbrn,leakage")
    assert chosen[0] == "encoding.Base64"
    assert "harmful.WeaponsDualUse" in chosen
    assert {n for n in chosen if n.startswith("leakage.")} == set(resolve_probes("leakage"))
    assert len(chosen) == len(set(chosen))


def test_a_tag_no_probe_carries_is_one_line() -> None:
    with pytest.raises(UnknownTagError) as info:
        resolve_probes("harm:cbrnn")
    assert "harm:cbrn" in str(info.value) and "\n" not in str(info.value)


def test_bare_tag_that_is_no_family_selects() -> None:
    chosen = resolve_probes("hallucination")
    assert chosen and all("hallucination" in probes.load(n).tags for n in chosen)
