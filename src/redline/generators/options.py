"""Generator options, declared once: :class:`GeneratorOption`.

A family lists the options it reads in its ``option_specs`` class attribute, a tuple of
:class:`GeneratorOption` that a subclass extends (``Parent.option_specs + (...)``); the transport
options of every remote family are declared once, in :mod:`redline.generators.transport.options`.
Everything else is derived from that one declaration:

* the constructor reads each declared option, applies its default and refuses a bad value with
  one line (:meth:`GeneratorOption.read`, called by :class:`~redline.generators.base.Generator`,
  which keeps the values in ``option_values``);
* the family's ``accepted_options`` (the names a scan configuration may give it);
* the checks of a scan configuration's ``generator:`` and of ``--gen-opt`` values
  (:meth:`GeneratorOption.check`, called by :func:`redline.engine.config_file.validate_generator_options`);
* a one-line description per option for listings (:meth:`GeneratorOption.describe`).

This module raises :class:`ValueError` whose message is the requirement (``"must be an integer >= 1"``);
the caller puts the option's name, the bad value and where it came from around it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["SAMPLING_OPTIONS", "SEED_OPTION", "GeneratorOption", "OptionKind", "with_defaults"]

OptionKind = Literal["int", "number", "text", "choice", "url", "env", "mapping", "template", "any"]
"""What an option holds:

* ``int``, ``number`` — an integer, a number (``minimum`` and ``exclusive`` bound it);
* ``text`` — a non-empty string (``pattern`` and ``expected`` may restrict it);
* ``choice`` — one of ``choices``, matched ignoring case and given back as spelt in ``choices``;
* ``url`` — an ``http://`` or ``https://`` URL; ``env`` — the name of an environment variable;
* ``mapping`` — a mapping; ``template`` — JSON text, a mapping or a list (a request body);
* ``any`` — anything (passed on to the endpoint as given)."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class GeneratorOption:
    """One option a generator family reads: its name, kind, default and bounds, and a line of help.

    ``default`` is the value a generator uses when the option is not given (``None``: unset; a
    family may then fall back on something that depends on the class or the machine, e.g. its
    default endpoint). ``minimum`` bounds ``int`` and ``number`` options (``exclusive``: the bound
    itself is refused). ``pattern`` is a regular expression a ``text`` value must match as a whole,
    described to the user by ``expected`` (``"cpu, cuda, cuda:N, mps or auto"``).
    """

    name: str
    kind: OptionKind
    default: Any = None
    help: str = ""
    minimum: float | None = None
    exclusive: bool = False
    choices: tuple[str, ...] = ()
    pattern: str | None = None
    expected: str = ""

    @property
    def requirement(self) -> str:
        """What a value must be, as the end of a sentence: ``"must be a number > 0"``."""
        bound = ""
        if self.minimum is not None:
            bound = f" {'>' if self.exclusive else '>='} {self.minimum:g}"
        if self.kind == "int":
            return f"must be an integer{bound}"
        if self.kind == "number":
            return f"must be a number{bound}"
        if self.kind == "text":
            return f"must be {self.expected}" if self.expected else "must be a non-empty string"
        if self.kind == "choice":
            return "must be " + _alternatives(self.choices)
        if self.kind == "url":
            return "must be a URL starting with http:// or https://"
        if self.kind == "env":
            return "must be the name of an environment variable, e.g. OPENAI_API_KEY"
        if self.kind == "mapping":
            return "must be a mapping"
        if self.kind == "template":
            return "must be JSON text or a mapping"
        return "may be anything"

    def describe(self) -> str:
        """One line for a listing: ``"timeout (number > 0, default 60): seconds per request"``."""
        if self.kind == "any":
            kind = "any value"
        else:
            kind = self.requirement.removeprefix("must be ").removeprefix("a ").removeprefix("an ")
        default = "" if self.default is None else f", default {self.default!r}"
        return f"{self.name} ({kind}{default})" + (f": {self.help}" if self.help else "")

    def with_default(self, default: Any) -> GeneratorOption:
        """This option with another default (a family that tunes an inherited option)."""
        return dataclasses.replace(self, default=default)

    # -- checks ------------------------------------------------------------------------------------
    def check(self, value: Any) -> Any:
        """The value of a scan configuration (YAML ``generator:`` or ``--gen-opt``, typed by YAML)
        checked strictly: a number must be a number, not text. Returns the value as the generator
        will be given it (text stripped, a choice as spelt in :attr:`choices`); raises
        :class:`ValueError` with :attr:`requirement` as its message."""
        if self.kind in ("int", "number"):
            if isinstance(value, bool) or not isinstance(value, int if self.kind == "int" else (int, float)):
                raise ValueError(self.requirement)
            return self._bounded(value)
        if self.kind in ("text", "choice", "url"):
            if not isinstance(value, str) or not value.strip():
                raise ValueError(self.requirement)
            text = value.strip()
            if self.kind == "url" and not text.startswith(("http://", "https://")):
                raise ValueError(self.requirement)
            return self._matched(text)
        if self.kind == "env":
            if not isinstance(value, str) or not _ENV_NAME.fullmatch(value):
                raise ValueError(self.requirement)
            return value
        return self._structured(value)

    def read(self, value: Any) -> Any:
        """The value given to a generator's constructor (from a stored run, a configuration already
        checked by :meth:`check`, or a Python caller) read leniently: ``int`` and ``number``
        options accept what :class:`int` / :class:`float` can convert (``"5"``) and are returned
        as ``int`` / ``float``; ``text``, ``url`` and ``env`` values are taken as text (a URL is
        checked when the generator starts). Raises :class:`ValueError` with :attr:`requirement`."""
        if self.kind in ("int", "number"):
            try:
                number = int(value) if self.kind == "int" else float(value)
            except (TypeError, ValueError, OverflowError):
                raise ValueError(self.requirement) from None
            return self._bounded(number)
        if self.kind in ("text", "choice"):
            return self._matched(str(value))
        if self.kind in ("url", "env"):
            return str(value)
        return self._structured(value)

    def _bounded(self, number: Any) -> Any:
        if self.minimum is not None and (number <= self.minimum if self.exclusive else number < self.minimum):
            raise ValueError(self.requirement)
        return number

    def _matched(self, text: str) -> str:
        if self.kind == "choice":
            for choice in self.choices:
                if text.lower() == choice.lower():
                    return choice
            raise ValueError(self.requirement)
        if self.pattern is not None and not re.fullmatch(self.pattern, text):
            raise ValueError(self.requirement)
        return text

    def _structured(self, value: Any) -> Any:
        if self.kind == "mapping" and not isinstance(value, dict):
            raise ValueError(self.requirement)
        if self.kind == "template" and not isinstance(value, (str, dict, list)):
            raise ValueError(self.requirement)
        return value


def _alternatives(choices: tuple[str, ...]) -> str:
    """``("a", "b", "c")`` → ``"a, b or c"``."""
    if len(choices) <= 1:
        return "".join(choices)
    return ", ".join(choices[:-1]) + " or " + choices[-1]


def with_defaults(specs: tuple[GeneratorOption, ...], **defaults: Any) -> tuple[GeneratorOption, ...]:
    """``specs`` with the defaults of the options named in ``defaults`` replaced (a family that
    tunes what it inherits, e.g. a larger ``batch_size``). An unknown name is a :class:`KeyError`."""
    unknown = set(defaults) - {spec.name for spec in specs}
    if unknown:
        raise KeyError(f"no option {', '.join(sorted(unknown))} to change the default of")
    return tuple(spec.with_default(defaults[spec.name]) if spec.name in defaults else spec for spec in specs)


SAMPLING_OPTIONS: tuple[GeneratorOption, ...] = (
    GeneratorOption("max_tokens", "int", minimum=1, help="the most tokens per output"),
    GeneratorOption("temperature", "number", minimum=0, help="sampling temperature (0: greedy)"),
    GeneratorOption("top_p", "number", minimum=0, help="nucleus sampling: the probability mass sampled from"),
)
"""The sampling options of every family that samples text, with no default (the endpoint's own);
local families set theirs with :func:`with_defaults`."""

SEED_OPTION = GeneratorOption("seed", "int", help="the random seed of sampling")
