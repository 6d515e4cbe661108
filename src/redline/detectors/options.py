"""Detector options from the command line: ``--detector-opt NAME.KEY=VALUE``.

``toxicity.Classifier.model=/models/tox`` → ``{"toxicity.Classifier": {"model": "/models/tox"}}``.
Values are read as YAML scalars/lists (``threshold=0.7`` is a number, ``hosts=[a.example, b.example]``
a list), else kept as text. The detector name must be a known detector or a judge spec
(``hf:./judge.label=unsafe``: the spec before the last dot, its local path made absolute as the
judge's name is).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from redline.detectors import check_detector_spec
from redline.errors import RedlineError, UsageError
from redline.untrusted import UntrustedInputError, option_value

__all__ = ["DetectorOptionError", "parse_detector_options"]


class DetectorOptionError(UsageError):
    """A ``--detector-opt`` that is not ``NAME.KEY=VALUE`` or names an unknown detector."""


def parse_detector_options(items: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Parse ``--detector-opt`` items into ``{detector name: {key: value}}`` (see module doc)."""
    options: dict[str, dict[str, Any]] = {}
    for item in items:
        target, sep, raw = item.partition("=")
        name, dot, key = target.strip().rpartition(".")
        if not sep or not dot or not name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise DetectorOptionError(
                f"--detector-opt {item!r}: expected DETECTOR.KEY=VALUE, e.g. toxicity.Classifier.model=PATH"
            )
        try:  # a registry name as it is; a judge's name normalised: hf:./judge -> hf:/abs/judge
            name = check_detector_spec(name)
        except RedlineError as exc:  # an unknown name: the registry's message
            raise DetectorOptionError(f"--detector-opt {item!r}: {exc}") from None
        try:
            value = option_value(raw)
        except UntrustedInputError as exc:  # YAML past the bounds (an alias bomb): refused
            raise DetectorOptionError(f"--detector-opt {target.strip()}: {exc}") from None
        options.setdefault(name, {})[key] = value
    return options
