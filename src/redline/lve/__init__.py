"""The LVE repository format: load, run, record and verify LVEs."""

from redline.lve.model import LVE, CustomCodeRefused, Instance, LVEFormatError, find_lves, load_lve
from redline.lve.prompt import LVEMessage, Role, substitute

__all__ = ["LVE", "Instance", "LVEFormatError", "CustomCodeRefused", "find_lves", "load_lve", "LVEMessage", "Role", "substitute"]
