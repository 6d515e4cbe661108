"""Detectors for insecure output handling (OWASP LLM05): exfiltration URLs, XSS, SQL and shell
injection in generated code, and packages that generated code imports but that do not exist.

The code detectors read the fenced code blocks of an answer when it has any (so prose that
*mentions* ``<script>`` or ``os.system`` is not counted), otherwise the whole answer.
"""

from __future__ import annotations

from redline.detectors.output.codeblocks import code_of
from redline.detectors.output.links import ExfilLink, MarkdownImage, find_urls, host_matches, image_urls
from redline.detectors.output.packages import PackageHallucination
from redline.detectors.output.shell import ShellInjection, shell_injection_findings
from redline.detectors.output.sql import SQLInjection, sql_injection_findings
from redline.detectors.output.xss import XSS, xss_findings

__all__ = [
    "XSS",
    "ExfilLink",
    "MarkdownImage",
    "PackageHallucination",
    "SQLInjection",
    "ShellInjection",
    "code_of",
    "find_urls",
    "host_matches",
    "image_urls",
    "shell_injection_findings",
    "sql_injection_findings",
    "xss_findings",
]
