"""The LVE repository format: load, run, record and verify LVEs (language model
vulnerabilities and exposures, github.com/lve-org/lve).

* :mod:`redline.lve.model` — ``test.json`` and instances (:func:`load_lve`, :func:`find_lves`);
* :mod:`redline.lve.prompt` — messages and ``{name}`` substitution;
* :mod:`redline.lve.runner` — run an LVE against a generator and record instances;
* :mod:`redline.lve.verify` — re-check recorded instances.
"""

from redline.lve.errors import CustomCodeRefused, LVEFormatError
from redline.lve.model import LVE, Instance, MultiRunPrompt, find_lves, load_lve, parse_instance
from redline.lve.prompt import LVEMessage, Role, substitute

__all__ = [
    "LVE",
    "CustomCodeRefused",
    "Instance",
    "LVEFormatError",
    "LVEMessage",
    "MultiRunPrompt",
    "Role",
    "find_lves",
    "load_lve",
    "parse_instance",
    "substitute",
]
