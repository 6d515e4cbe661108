"""evaluation.metrics: the category an attempt's failure rate is broken down by."""

from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType

import pytest

from redline.evaluation.metrics import category_of


class Label(str):
    """A str subclass: read as its plain text."""


@pytest.mark.parametrize(
    ("notes", "expected"),
    [
        ({"prompt_metadata": {"category": "crime"}, "item_metadata": {"category": "item"}}, "crime"),
        ({"item_metadata": {"category": "item"}}, "item"),
        ({"prompt_metadata": {"category": 3}}, "3"),  # any scalar, as text
        ({"prompt_metadata": {"category": None}, "item_metadata": {"category": "item"}}, "item"),
        ({"prompt_metadata": {"category": {"nested": 1}}, "item_metadata": {"category": "item"}}, "item"),
        ({"prompt_metadata": {"category": ["a", "b"]}}, None),
        ({"prompt_metadata": MappingProxyType({"category": "proxy"})}, "proxy"),  # any mapping
        ({"prompt_metadata": OrderedDict(category="ordered")}, "ordered"),
        ({"prompt_metadata": "not a mapping", "item_metadata": {"category": "item"}}, "item"),
        ({"prompt_metadata": {"category": Label("sub")}}, "sub"),
        ({}, None),
    ],
)
def test_category_of_reads_the_prompts_category_then_the_items(notes, expected):
    category = category_of(notes)
    assert category == expected
    assert category is None or type(category) is str
