"""Probes, discovered by name (``family.Name``).

``resolve_probes("harmful,encoding.Base64")`` expands a comma-separated selection: a full name, a
family (every active probe whose name starts with ``family.``), or ``all``. Third parties add
probes through the ``redline.probes`` entry-point group.
"""

from __future__ import annotations

from redline.plugins import PluginRegistry, UnknownPluginError
from redline.probes.base import Probe, ProbeItem, ProbeResult, Prompt, PromptProbe

__all__ = ["Probe", "ProbeItem", "Prompt", "PromptProbe", "ProbeResult", "probes", "resolve_probes", "get_probe"]

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
        "bias.DirectStereotypes": "redline.probes.bias.stereotypes:DirectStereotypes",
        "bias.ForcedChoice": "redline.probes.bias.stereotypes:ForcedChoice",
        "bias.OccupationStories": "redline.probes.bias.occupations:OccupationStories",
        "bias.Decisions": "redline.probes.bias.decisions:Decisions",
        "bias.ReferenceLetters": "redline.probes.bias.language:ReferenceLetters",
        "bias.RelationshipAdvice": "redline.probes.bias.advice:RelationshipAdvice",
    },
)


def resolve_probes(selection: str | None) -> list[str]:
    """Probe names for a comma-separated selection (see module doc). Order is kept, duplicates
    dropped. Raises :class:`UnknownPluginError` naming the first unknown entry."""
    names = probes.names()
    chosen: list[str] = []
    for raw in (selection or DEFAULT_PROBES).split(","):
        entry = raw.strip()
        if not entry:
            continue
        if entry == "all":
            matched = [n for n in names if getattr(probes.load(n), "active", True)]
        elif entry in probes:
            matched = [entry]
        else:
            matched = [n for n in names if n.startswith(entry + ".") and getattr(probes.load(n), "active", True)]
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
