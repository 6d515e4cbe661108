"""Probes, discovered by name (``family.Name``).

``resolve_probes("harmful,encoding.Base64")`` expands a comma-separated selection: a full name, a
family (every active probe whose name starts with ``family.``; a family with only inactive probes,
such as ``dataset``, selects those), or ``all``. With no selection,
:data:`DEFAULT_PROBES` is used, minus the probes whose class sets ``default_scan = False`` (the
larger additions to those families), which keeps the default scan short. Third parties add
probes through the ``redline.probes`` entry-point group.
"""

from __future__ import annotations

from redline.plugins import PluginRegistry, UnknownPluginError
from redline.probes.base import Probe, ProbeItem, ProbeResult, Prompt, PromptProbe

__all__ = ["Probe", "ProbeItem", "ProbeResult", "Prompt", "PromptProbe", "get_probe", "probes", "resolve_probes"]

DEFAULT_PROBES = "harmful,encoding,injection"

probes = PluginRegistry(
    "probe",
    "redline.probes",
    {
        "harmful.Requests": "redline.probes.harmful:HarmfulRequests",
        "encoding.Base64": "redline.probes.encoding:Base64",
        "encoding.ROT13": "redline.probes.encoding:ROT13",
        "encoding.Hex": "redline.probes.encoding:Hex",
        "injection.HiddenInData": "redline.probes.injection:HiddenInData",
        "injection.Direct": "redline.probes.injection_direct:Direct",
        "injection.SystemPromptExtraction": "redline.probes.injection_direct:SystemPromptExtraction",
        "injection.Email": "redline.probes.injection_indirect:Email",
        "injection.WebPage": "redline.probes.injection_indirect:WebPage",
        "injection.RetrievedContext": "redline.probes.injection_indirect:RetrievedContext",
        "encoding.Base32": "redline.probes.encoding:Base32",
        "encoding.Morse": "redline.probes.encoding:Morse",
        "encoding.Leetspeak": "redline.probes.encoding:Leetspeak",
        "encoding.UnicodeTags": "redline.probes.encoding:UnicodeTags",
        "encoding.ZeroWidth": "redline.probes.encoding:ZeroWidth",
        "harmful.Malware": "redline.probes.harmful_topics:Malware",
        "harmful.WeaponsDualUse": "redline.probes.harmful_topics:WeaponsDualUse",
        "harmful.SelfHarm": "redline.probes.harmful_topics:SelfHarm",
        "harmful.HarassmentHate": "redline.probes.harmful_topics:HarassmentHate",
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
    },
)


def _probe_class(name: str) -> type[Probe]:
    """The class registered as probe ``name`` (built-in or entry point: a :class:`Probe` subclass)."""
    cls: type[Probe] = probes.load(name)
    return cls


def resolve_probes(selection: str | None) -> list[str]:
    """Probe names for a comma-separated selection (see module doc). Order is kept, duplicates
    dropped. Raises :class:`UnknownPluginError` naming the first unknown entry."""
    names = probes.names()
    chosen: list[str] = []
    default = not selection  # the default scan leaves out probes marked ``default_scan = False``
    for raw in (selection or DEFAULT_PROBES).split(","):
        entry = raw.strip()
        if not entry:
            continue
        if entry == "all":
            matched = [n for n in names if _probe_class(n).active]
        elif entry in probes:
            matched = [entry]
        else:
            matched = [
                n
                for n in names
                if n.startswith(entry + ".")
                and _probe_class(n).active
                and (not default or _probe_class(n).default_scan)
            ]
            if not matched:
                # a family whose probes are all inactive (``dataset``) still names them explicitly
                matched = [n for n in names if n.startswith(entry + ".") and not _probe_class(n).active]
            if not matched:
                families = sorted({n.split(".")[0] for n in names})
                raise UnknownPluginError(
                    probes.unknown_message(entry).replace(")", f"; families: {', '.join(families)})")
                )
        for name in matched:
            if name not in chosen:
                chosen.append(name)
    if not chosen:
        raise UnknownPluginError("no probes selected")
    return chosen


def get_probe(name: str, **options: object) -> Probe:
    """Instantiate the probe registered as ``name``."""
    cls = probes.load(name)
    return cls(**options)
