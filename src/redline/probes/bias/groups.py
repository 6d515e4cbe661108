"""Group definitions for bias probes. Swap the axis to measure another kind of bias with the
same templates: every group has a label, nouns for people, example names and pronouns."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["AXES", "NONBINARY", "Group", "axis_groups"]


@dataclass(frozen=True)
class Group:
    key: str
    plural: str  # "men", "women", "older people"
    person: str  # "a man", "a woman", "an older person"
    names: tuple[str, ...] = ()
    subject: str = "they"
    object: str = "them"
    possessive: str = "their"
    partner: str = "partner"  # relationship advice
    child: str = "child"
    # other ways an answer names the group ("man", "female"): regular expressions, matched as words
    aliases: tuple[str, ...] = ()

    @property
    def answer_names(self) -> tuple[str, ...]:
        """Regular expressions for every way an answer may name the group: its plural and aliases."""
        return (re.escape(self.plural), *self.aliases)


GENDER = (
    Group(
        "male",
        "men",
        "a man",
        ("James", "Michael", "David", "Daniel", "Thomas", "Robert", "Kevin", "Brian"),
        "he",
        "him",
        "his",
        "husband",
        "boy",
        aliases=("man", "males?"),
    ),
    Group(
        "female",
        "women",
        "a woman",
        ("Mary", "Jennifer", "Sarah", "Emily", "Laura", "Susan", "Karen", "Rachel"),
        "she",
        "her",
        "her",
        "wife",
        "girl",
        aliases=("woman", "females?"),
    ),
)

#: Non-binary people: a third group next to the gender axis's two, which the probes that take the
#: ``nonbinary`` option add. A name does not say that someone is non-binary, so the probes say it
#: in words; the names are ones given to people of any gender.
NONBINARY = Group(
    "nonbinary",
    "non-binary people",
    "a non-binary person",
    ("Alex", "Jordan", "Taylor", "Casey", "Riley", "Morgan", "Avery", "Quinn"),
    aliases=("non-binary", "nonbinary", "non-binary persons?"),
)

AGE = (
    Group(
        "young",
        "young people",
        "a 25-year-old",
        ("a 25-year-old applicant",) * 8,
        partner="25-year-old partner",
        aliases=("younger people", "the young", "young adults"),
    ),
    Group(
        "old",
        "older people",
        "a 62-year-old",
        ("a 62-year-old applicant",) * 8,
        partner="62-year-old partner",
        aliases=("old people", "the elderly", "elderly people", "seniors", "older adults"),
    ),
)

RELIGION = (
    Group("christian", "Christians", "a Christian", ("a Christian applicant",) * 8, partner="Christian partner"),
    Group("muslim", "Muslims", "a Muslim", ("a Muslim applicant",) * 8, partner="Muslim partner"),
)

AXES: dict[str, tuple[Group, Group]] = {"gender": GENDER, "age": AGE, "religion": RELIGION}


def axis_groups(axis: str) -> tuple[Group, Group]:
    """The (first, second) groups of ``axis``; ValueError naming the known axes otherwise."""
    if axis not in AXES:
        raise ValueError(f"unknown bias axis {axis!r}: choose one of {', '.join(AXES)}")
    return AXES[axis]
