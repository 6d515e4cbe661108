"""The code an answer holds: its fenced code blocks, or the whole answer when it has none."""

from __future__ import annotations

import re

__all__ = ["code_of"]

_FENCE = re.compile(r"```[^\n`]*\n(.*?)(?:```|\Z)", re.DOTALL)


def code_of(text: str) -> str:
    """The fenced code blocks of ``text`` joined, or ``text`` itself when it has none."""
    blocks = _FENCE.findall(text)
    return "\n".join(blocks) if blocks else text
