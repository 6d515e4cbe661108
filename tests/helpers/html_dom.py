"""A small DOM for tests that read our HTML pages without a browser: :func:`parse` builds a tree
of :class:`Node` with Python's own HTML parser, and :meth:`Node.select` finds elements by tag,
id, class and attribute values (a tiny subset of CSS selectors: ``tag#id.class[attr=value]``,
with descendant steps separated by spaces)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

__all__ = ["Node", "parse"]

VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})

_STEP = re.compile(r"^(?P<tag>[a-z0-9]+)?(?P<rest>(?:[#.][\w-]+|\[[^\]]+\])*)$")
_PART = re.compile(r"#(?P<id>[\w-]+)|\.(?P<cls>[\w-]+)|\[(?P<attr>[\w-]+)(?:=(?P<q>[\"']?)(?P<value>.*?)(?P=q))?\]")


@dataclass
class Node:
    """An element: its tag, attributes (``None`` for a bare attribute), children and text."""

    tag: str
    attrs: dict[str, str | None] = field(default_factory=dict)
    children: list[Node | str] = field(default_factory=list)
    parent: Node | None = None

    @property
    def text(self) -> str:
        """The text of the element and its descendants, as written (entities decoded)."""
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def get(self, name: str) -> str | None:
        return self.attrs.get(name)

    def iter(self) -> list[Node]:
        """Every descendant element, in document order."""
        found: list[Node] = []
        for child in self.children:
            if isinstance(child, Node):
                found.append(child)
                found.extend(child.iter())
        return found

    def _matches(self, step: str) -> bool:
        m = _STEP.match(step)
        if m is None:
            raise ValueError(f"selector step {step!r} is not supported")
        if m.group("tag") and m.group("tag") != self.tag:
            return False
        for part in _PART.finditer(m.group("rest") or ""):
            if part.group("id") and self.attrs.get("id") != part.group("id"):
                return False
            if part.group("cls") and part.group("cls") not in self.classes:
                return False
            if part.group("attr"):
                name = part.group("attr")
                if name not in self.attrs:
                    return False
                if part.group("value") is not None and self.attrs.get(name) != part.group("value"):
                    return False
        return True

    def select(self, selector: str) -> list[Node]:
        """Every descendant matching ``selector`` (steps separated by spaces are descendants)."""
        steps = selector.split()
        current = [self]
        for step in steps:
            found: list[Node] = []
            seen: set[int] = set()
            for node in current:
                for d in node.iter():
                    if id(d) not in seen and d._matches(step):
                        seen.add(id(d))
                        found.append(d)
            current = found
        return current

    def one(self, selector: str) -> Node:
        """The one element matching ``selector`` (an ``AssertionError`` for none or several)."""
        found = self.select(selector)
        assert len(found) == 1, f"{len(found)} elements match {selector!r}"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document")
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, dict(attrs), parent=self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Node(tag, dict(attrs), parent=self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def parse(html: str) -> Node:
    """The document tree of ``html``."""
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root
