"""Compliance taxonomies that probes are tagged with: OWASP, MITRE ATLAS and NIST.

Every framework tag of a probe is one reviewed against the framework's own definition, with the
reason it fits, in ``redline/data/tag_review.toml`` (read by :func:`tag_review`); a probe carries
at least one tag of each system unless that table says why none of its items fits (OWASP has no
item for a harmful request asked plainly, none of the three for the refusal of a benign request).
A test checks every registered probe. ``redline scan --probes owasp:llm01`` selects by tag, and the
reports group findings by one framework (``redline report --framework owasp|atlas|nist``).

Tags, written ``system:value``:

* ``owasp:llm01`` … ``owasp:llm10`` — the **OWASP Top 10 for LLM Applications 2025** (OWASP
  GenAI Security Project, released 18 November 2024; https://genai.owasp.org/llm-top-10/ and
  https://owasp.org/www-project-top-10-for-large-language-model-applications/). Item names as
  published, e.g. "LLM01:2025 Prompt Injection".
* ``atlas:AML.T0051`` (sub-techniques ``atlas:AML.T0051.000``) — technique ids of **MITRE ATLAS**
  (Adversarial Threat Landscape for Artificial-Intelligence Systems, https://atlas.mitre.org/
  techniques; data in https://github.com/mitre-atlas/atlas-data). Only the techniques that fit
  what an LLM red-teaming probe does are listed in :data:`ATLAS_TECHNIQUES`; the names are the
  current ones (ATLAS renamed "ML" to "AI" in several names in 2025, e.g. AML.T0024 "Exfiltration
  via AI Inference API", formerly "via ML Inference API"; AML.T0056 "Extract LLM System Prompt",
  formerly "LLM Meta Prompt Extraction"; AML.T0053 "AI Agent Tool Invocation", formerly "LLM
  Plugin Compromise"). A new probe that needs another technique adds it here with its name.
* ``nist:<slug>`` — the twelve risk categories of **NIST AI 600-1**, *Artificial Intelligence
  Risk Management Framework: Generative Artificial Intelligence Profile* (NIST, July 2024,
  section 2 "Overview of Risks Unique to or Exacerbated by GAI",
  https://doi.org/10.6028/NIST.AI.600-1). The slugs are redline's short names for them.

Any other tag (``harm:cbrn``, ``cwe:79``, ``jailbreak``) is free-form: it is selectable with
``--probes`` but belongs to no framework here.
"""

from __future__ import annotations

import difflib
import functools
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from redline.plugins import UnknownPluginError

__all__ = [
    "ATLAS_TECHNIQUES",
    "CATALOGUES",
    "FRAMEWORKS",
    "FRAMEWORK_TITLES",
    "NIST_AI_600_1",
    "OWASP_LLM_2025",
    "TagReview",
    "UnknownTagError",
    "category_name",
    "check_tag",
    "framework_of",
    "framework_tags",
    "is_known",
    "normalise_tag",
    "shown",
    "tag_matches",
    "tag_review",
    "tag_reviews",
    "uncovered_categories",
]


class UnknownTagError(UnknownPluginError):
    """A tag (``--probes owasp:llm11``, ``--framework``) that names nothing; one line with
    suggestions."""


#: OWASP Top 10 for LLM Applications 2025: ``llm01`` … ``llm10`` → the item's name.
OWASP_LLM_2025: Mapping[str, str] = {
    "llm01": "Prompt Injection",
    "llm02": "Sensitive Information Disclosure",
    "llm03": "Supply Chain",
    "llm04": "Data and Model Poisoning",
    "llm05": "Improper Output Handling",
    "llm06": "Excessive Agency",
    "llm07": "System Prompt Leakage",
    "llm08": "Vector and Embedding Weaknesses",
    "llm09": "Misinformation",
    "llm10": "Unbounded Consumption",
}

#: The MITRE ATLAS techniques redline's probes use (and those close to them that new probes may
#: use), id → name.
ATLAS_TECHNIQUES: Mapping[str, str] = {
    "AML.T0010": "AI Supply Chain Compromise",
    "AML.T0024": "Exfiltration via AI Inference API",
    "AML.T0024.000": "Infer Training Data Membership",
    "AML.T0024.001": "Invert AI Model",
    "AML.T0024.002": "Extract AI Model",
    "AML.T0029": "Denial of AI Service",
    "AML.T0034": "Cost Harvesting",
    "AML.T0043": "Craft Adversarial Data",
    "AML.T0048": "External Harms",
    "AML.T0048.000": "Financial Harm",
    "AML.T0048.001": "Reputational Harm",
    "AML.T0048.002": "Societal Harm",
    "AML.T0048.003": "User Harm",
    "AML.T0048.004": "AI Intellectual Property Theft",
    "AML.T0051": "LLM Prompt Injection",
    "AML.T0051.000": "LLM Prompt Injection: Direct",
    "AML.T0051.001": "LLM Prompt Injection: Indirect",
    "AML.T0051.002": "LLM Prompt Injection: Triggered",
    "AML.T0052": "Phishing",
    "AML.T0052.000": "Spearphishing via Social Engineering LLM",
    "AML.T0053": "AI Agent Tool Invocation",
    "AML.T0054": "LLM Jailbreak",
    "AML.T0056": "Extract LLM System Prompt",
    "AML.T0057": "LLM Data Leakage",
    "AML.T0060": "Publish Hallucinated Entities",
    "AML.T0061": "LLM Prompt Self-Replication",
    "AML.T0062": "Discover LLM Hallucinations",
    "AML.T0065": "LLM Prompt Crafting",
    "AML.T0066": "Retrieval Content Crafting",
    "AML.T0067": "LLM Trusted Output Components Manipulation",
    "AML.T0068": "LLM Prompt Obfuscation",
    "AML.T0070": "RAG Poisoning",
    "AML.T0086": "Exfiltration via AI Agent Tool Invocation",
}

#: NIST AI 600-1's twelve GAI risk categories: redline's slug → the category's name.
NIST_AI_600_1: Mapping[str, str] = {
    "cbrn": "CBRN Information or Capabilities",
    "confabulation": "Confabulation",
    "dangerous-content": "Dangerous, Violent, or Hateful Content",
    "data-privacy": "Data Privacy",
    "environmental": "Environmental Impacts",
    "harmful-bias": "Harmful Bias and Homogenization",
    "human-ai-configuration": "Human-AI Configuration",
    "information-integrity": "Information Integrity",
    "information-security": "Information Security",
    "intellectual-property": "Intellectual Property",
    "obscene-content": "Obscene, Degrading, and/or Abusive Content",
    "value-chain": "Value Chain and Component Integration",
}

#: The frameworks, in the order reports list them.
FRAMEWORKS: tuple[str, ...] = ("owasp", "atlas", "nist")

FRAMEWORK_TITLES: Mapping[str, str] = {
    "owasp": "OWASP Top 10 for LLM Applications 2025",
    "atlas": "MITRE ATLAS",
    "nist": "NIST AI 600-1 (Generative AI Profile)",
}

#: framework → (value → name), values as written in tags.
CATALOGUES: Mapping[str, Mapping[str, str]] = {
    "owasp": OWASP_LLM_2025,
    "atlas": ATLAS_TECHNIQUES,
    "nist": NIST_AI_600_1,
}

_ATLAS_ID = re.compile(r"^aml\.t\d{4}(\.\d{3})?$", re.IGNORECASE)


def framework_of(tag: str) -> str | None:
    """``"owasp"``, ``"atlas"`` or ``"nist"`` for a tag of that system, else ``None``."""
    system, sep, _ = tag.partition(":")
    system = system.strip().lower()
    return system if sep and system in CATALOGUES else None


def normalise_tag(tag: str) -> str:
    """``tag`` as probes write it: the system lower case, an OWASP item and a NIST slug lower
    case, an ATLAS id upper case (``ATLAS:aml.t0051`` → ``atlas:AML.T0051``); other tags with
    surrounding space removed."""
    text = tag.strip()
    framework = framework_of(text)
    if framework is None:
        return text
    value = text.partition(":")[2].strip()
    return f"{framework}:{value.upper() if framework == 'atlas' else value.lower()}"


def is_known(tag: str) -> bool:
    """Whether a framework tag names an item of its catalogue (any other tag: True)."""
    framework = framework_of(tag)
    if framework is None:
        return True
    return normalise_tag(tag).partition(":")[2] in CATALOGUES[framework]


def check_tag(tag: str, where: str = "tag") -> str:
    """``tag`` normalised; :class:`UnknownTagError` naming it and the closest known tags when it
    is a framework tag that its catalogue does not hold."""
    normal = normalise_tag(tag)
    framework = framework_of(normal)
    if framework is None or is_known(normal):
        return normal
    known = [f"{framework}:{value}" for value in CATALOGUES[framework]]
    close = difflib.get_close_matches(normal, known, n=3, cutoff=0.6)
    if framework == "atlas" and _ATLAS_ID.match(normal.partition(":")[2]):
        parent = normal.rsplit(".", 1)[0] if normal.count(".") > 1 else normal
        close = [k for k in known if k.startswith(parent)][:3] or close
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise UnknownTagError(
        f"unknown {where} {shown(tag)}: not in {FRAMEWORK_TITLES[framework]}{hint} (known: {_span(framework)})"
    )


def shown(tag: str, limit: int = 80) -> str:
    """``tag`` quoted for a message, cut at ``limit`` characters."""
    text = tag.strip()
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _span(framework: str) -> str:
    values = list(CATALOGUES[framework])
    if framework == "owasp":
        return "owasp:llm01 … owasp:llm10"
    if framework == "nist":
        return ", ".join(f"nist:{v}" for v in values)
    return "the ATLAS ids in redline.taxonomy.ATLAS_TECHNIQUES"


def category_name(tag: str) -> str:
    """The published name of a framework tag's item (``owasp:llm01`` → ``LLM01:2025 Prompt
    Injection``, ``atlas:AML.T0054`` → ``AML.T0054 LLM Jailbreak``, ``nist:cbrn`` → ``CBRN
    Information or Capabilities``); the tag itself when it is not a known one."""
    normal = normalise_tag(tag)
    framework = framework_of(normal)
    if framework is None:
        return normal
    value = normal.partition(":")[2]
    name = CATALOGUES[framework].get(value)
    if name is None:
        return normal
    if framework == "owasp":
        return f"{value.upper()}:2025 {name}"
    if framework == "atlas":
        return f"{value} {name}"
    return name


def framework_tags(tags: Iterable[str], framework: str) -> list[str]:
    """The tags of ``framework`` among ``tags``, normalised, without repeats, in catalogue order
    (unknown ones last, as given)."""
    order = {f"{framework}:{value}": i for i, value in enumerate(CATALOGUES[framework])}
    found: list[str] = []
    for tag in tags:
        normal = normalise_tag(tag)
        if framework_of(normal) == framework and normal not in found:
            found.append(normal)
    return sorted(found, key=lambda t: order.get(t, len(order)))


def tag_matches(selected: str, tag: str) -> bool:
    """Whether a probe's ``tag`` is selected by ``selected`` (both normalised): the same tag, or
    for ATLAS a sub-technique of the selected technique (``atlas:AML.T0051`` selects
    ``atlas:AML.T0051.001``). Free-form tags compare without regard to case."""
    if selected == tag:
        return True
    if framework_of(selected) is None:
        return selected.lower() == tag.lower()
    return selected.startswith("atlas:") and tag.startswith(selected + ".")


def uncovered_categories(groups: Iterable[object], framework: str) -> list[str]:
    """The names of ``framework``'s categories that none of ``groups`` (objects with a ``tag``)
    covers, for the closed lists (OWASP's ten items, NIST's twelve categories); none for ATLAS,
    whose catalogue here holds only the techniques redline's probes use."""
    if framework == "atlas":
        return []
    covered = {getattr(g, "tag", None) for g in groups}
    return [category_name(f"{framework}:{v}") for v in CATALOGUES[framework] if f"{framework}:{v}" not in covered]


@dataclass(frozen=True)
class TagReview:
    """The reviewed framework tags of one probe (``redline/data/tag_review.toml``): ``tags``, the
    tags it may carry, each with why it fits; ``none``, per framework none of whose items fits,
    why."""

    tags: Mapping[str, str]
    none: Mapping[str, str]


@functools.cache
def tag_reviews() -> Mapping[str, Mapping[str, Any]]:
    """The reviewed table as read: probe family or probe name → ``{tag: reason, "none":
    {framework: reason}}``."""
    text = resources.files("redline").joinpath("data/tag_review.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def tag_review(probe: str) -> TagReview:
    """The reviewed tags of ``probe`` (``family.Name``): its family's entry with the probe's own
    added (empty for a probe the table does not know)."""
    table = tag_reviews()
    tags: dict[str, str] = {}
    none: dict[str, str] = {}
    for key in (probe.split(".", 1)[0], probe):
        entry = table.get(key) or {}
        tags.update({k: str(v) for k, v in entry.items() if k != "none"})
        none.update({k: str(v) for k, v in (entry.get("none") or {}).items()})
    return TagReview(tags=tags, none=none)
