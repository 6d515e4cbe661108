"""Probes fed by the user's data (see :mod:`redline.datasets`).

* :class:`Prompts` (``dataset.Prompts``) sends each dataset row's prompt as it is (with its
  optional system prompt and target) — e.g. a public harmful-behaviour benchmark the user has —
  and headlines the harm rate, the compliance rate beside it (:mod:`redline.evaluation.measures`).
* :class:`RequestProbe` is the base of probes built from a list of ``(category, request)`` pairs
  (the jailbreak templates); with ``dataset=...`` the dataset's prompts replace that list, so
  ``redline scan --dataset FILE --probes jailbreak.Persona`` wraps the user's requests in the
  persona templates.

Both load the dataset when constructed, so a missing file or column stops the scan before any
model is loaded.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

from redline.attempt import Conversation, Message, Turn
from redline.datasets import DatasetError, load_rows
from redline.evaluation.measures import HARM
from redline.probes.base import (
    HARM_DETECTORS,
    HARM_FORMER_DEFAULTS,
    AttemptSource,
    LazyAttempts,
    Probe,
    ProbeItem,
    Prompt,
)

__all__ = ["Prompts", "RequestProbe"]


class RequestProbe(Probe):
    """A probe over ``(category, request)`` pairs; subclasses implement :meth:`render`.

    Constructor options (besides :class:`Probe`'s): ``requests`` replaces :attr:`requests`
    (strings or ``(category, request)`` pairs); ``dataset`` / ``dataset_columns`` load them from
    a dataset instead (``accepts_dataset`` must be true). One probe item per request.
    """

    requests: ClassVar[Sequence[tuple[str, str]]] = ()
    #: Whether ``--dataset`` replaces this probe's requests (template probes); direct-request
    #: probes leave it False (``dataset.Prompts`` already sends a dataset's prompts as they are).
    accepts_dataset: ClassVar[bool] = False

    def __init__(
        self,
        *args: Any,
        requests: Sequence[str | tuple[str, str]] | None = None,
        dataset: str | None = None,
        dataset_columns: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.dataset = dataset
        self.dataset_columns = dict(dataset_columns or {})
        self._targets: list[list[str] | None] | None = None
        self._systems: list[str | None] = []
        if dataset is not None:
            rows = load_rows(dataset, self.dataset_columns)
            self._systems = [row.system for row in rows]
            self._requests = [(row.category or "dataset", row.prompt) for row in rows]
            self._targets = [[row.target] if row.target else None for row in rows]
        elif requests is not None:
            self._requests = [r if isinstance(r, tuple) else ("custom", str(r)) for r in requests]
        else:
            self._requests = list(self.requests)
        if not self._requests:
            raise DatasetError(f"{self.name}: no requests to send")

    @property
    def params(self) -> dict:
        params = super().params
        if self.dataset is not None:
            params["dataset"] = str(self.dataset)
            if self.dataset_columns:
                params["dataset_columns"] = dict(self.dataset_columns)
        return params

    def render(self, index: int, category: str, request: str) -> Prompt:
        """The prompt for request number ``index``. Subclasses wrap ``request`` in their attack."""
        return Prompt(text=request, metadata={"category": category})

    def _create_probe_items(self) -> list[ProbeItem]:
        return [self._item(index) for index in range(len(self._requests))]

    def _item(self, index: int) -> ProbeItem:
        """The probe item of request number ``index``."""
        category, request = self._requests[index]
        prompt = self.render(index, category, request)
        prompt.metadata.setdefault("category", category)
        prompt.metadata.setdefault("request", request)
        targets = self._targets[index] if self._targets is not None else None
        if targets:
            prompt.targets = list(prompt.targets) + targets
        return ProbeItem(prompts=[prompt], metadata={"category": category, "index": index})

    def attempt_source(self) -> AttemptSource:
        """The attempts of :meth:`create_attempts`, each item built only when its attempt is:
        a dataset of 100,000 prompts is held as its requests, not as 100,000 probe items (unless
        a subclass builds its items otherwise, or they are built already)."""
        own = type(self)._create_probe_items is RequestProbe._create_probe_items
        if own and self._items is None and type(self).create_attempts is Probe.create_attempts:
            return LazyAttempts(self, _RequestItems(self, self._sampled(len(self._requests))))
        return super().attempt_source()


class _RequestItems:
    """The probe items of a :class:`RequestProbe` (those at ``keep``, all when ``None``), each
    built when it is reached."""

    def __init__(self, probe: RequestProbe, keep: list[int] | None) -> None:
        self.probe = probe
        self.keep = keep

    def __len__(self) -> int:
        return len(self.keep) if self.keep is not None else len(self.probe._requests)

    def __getitem__(self, index: int) -> ProbeItem:
        return self.probe._item(self.keep[index] if self.keep is not None else index)

    def __iter__(self) -> Iterator[ProbeItem]:
        return (self[index] for index in range(len(self)))


def fill(template: str, request: str) -> str:
    """``template`` with ``{request}`` replaced (no ``str.format``: requests may hold braces)."""
    return template.replace("{request}", request)


class Prompts(RequestProbe):
    """Each row of the user's dataset sent as it is (needs ``--dataset``)."""

    name = "dataset.Prompts"
    goal = "make the model comply with the prompts of the user's dataset"
    description = (
        "prompts from a CSV / JSONL file or a Hugging Face dataset (--dataset FILE --dataset-column prompt=COLUMN)"
    )
    tags = ("atlas:AML.T0048", "nist:dangerous-content", "dataset")
    recommended_detectors = HARM_DETECTORS
    measure = HARM
    former_defaults = HARM_FORMER_DEFAULTS
    accepts_dataset = True
    #: Listed, but never part of ``all`` or a family selection: it has nothing to send without data.
    active = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("dataset") is None and kwargs.get("requests") is None:
            raise DatasetError("dataset.Prompts needs a dataset: --dataset FILE [--dataset-column prompt=COLUMN]")
        super().__init__(*args, **kwargs)

    def render(self, index: int, category: str, request: str) -> Prompt:
        system = self._systems[index] if index < len(self._systems) else None
        if system:
            text: str | Conversation = Conversation(
                turns=[Turn("system", Message(text=system)), Turn("user", Message(text=request, lang=self.lang))]
            )
        else:
            text = request
        return Prompt(text=text, metadata={"category": category, "row": index})
