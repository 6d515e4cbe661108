"""Secrets a request carries: API keys and ``${VAR}`` references to environment variables.

Values are read from the environment when a generator starts and are never written to the store,
logs or reports: a configuration keeps the ``${VAR}`` form, and every message a generator
records passes through its ``redact``.
"""

from __future__ import annotations

import os
import re

from redline.generators.base import GeneratorUnavailable

__all__ = ["ENV_REFERENCE", "env_references", "expand_env", "header_safe"]

#: A ``${VAR}`` reference to an environment variable.
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def header_safe(value: str) -> bool:
    """True when ``value`` can be sent as an HTTP header value (visible ASCII, spaces, tabs)."""
    return all(ch == "\t" or 32 <= ord(ch) < 127 for ch in value)


def env_references(value: str) -> list[str]:
    """The names of the environment variables ``value`` refers to as ``${VAR}``."""
    return ENV_REFERENCE.findall(value)


def expand_env(value: str, where: str) -> str:
    """Replace each ``${VAR}`` in ``value`` by the environment variable ``VAR`` (without the
    whitespace around it: a secret read from a file often ends in a newline). A missing or empty
    variable, or one holding a character no HTTP header may carry, raises
    :class:`GeneratorUnavailable` naming the variable, never its value."""

    def replace(match: re.Match) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise GeneratorUnavailable(f"{where} needs the environment variable {name}, which is not set")
        text = os.environ[name].strip()
        if not text:
            raise GeneratorUnavailable(f"{where} needs the environment variable {name}, which is empty")
        if not header_safe(text):
            raise GeneratorUnavailable(
                f"{where}: the environment variable {name} contains a line break or another character "
                "an HTTP header cannot hold"
            )
        return text

    return ENV_REFERENCE.sub(replace, value)
