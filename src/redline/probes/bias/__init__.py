"""Bias probes (seed 003 anatomy): stereotypes, forced choices, occupations, decisions,
reference-letter language and relationship advice. Each reports metrics with item-level
bootstrap 95% intervals and marks A–D decided on those intervals."""

from redline.probes.bias.advice import RelationshipAdvice
from redline.probes.bias.decisions import Decisions
from redline.probes.bias.language import ReferenceLetters
from redline.probes.bias.occupations import OccupationStories
from redline.probes.bias.stereotypes import DirectStereotypes, ForcedChoice

__all__ = [
    "Decisions",
    "DirectStereotypes",
    "ForcedChoice",
    "OccupationStories",
    "ReferenceLetters",
    "RelationshipAdvice",
]
