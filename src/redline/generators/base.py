"""The generator interface: a model that answers a :class:`~redline.attempt.Conversation`.

Every backend implements one coroutine, :meth:`Generator.generate`, which returns exactly ``n``
outputs for a conversation (``None`` where the model gave no output). Generators are created by
name through :func:`redline.generators.get_generator`.

Two error classes separate what the harness does next:

* :class:`GeneratorError` — this request failed (bad response, timeout after retries): the attempt
  is recorded as errored and the run goes on.
* :class:`GeneratorUnavailable` — the generator cannot work at all (unreachable endpoint, missing
  key, model that cannot load): the run stops with one clear line and can be resumed later.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from redline.attempt import Conversation, Message

__all__ = ["Generator", "GeneratorError", "GeneratorUnavailable"]


class GeneratorError(RuntimeError):
    """One request failed; the attempt is marked errored and the run continues."""


class GeneratorUnavailable(RuntimeError):
    """The generator cannot serve any request; the run stops (and can be resumed)."""


class Generator(ABC):
    """Base class of every generator.

    Subclasses set :attr:`family` (the registry name, e.g. ``"openai"``) and implement
    :meth:`generate`. ``model`` is the part of the spec after ``family:`` (may be empty).
    """

    family: ClassVar[str] = "base"
    description: ClassVar[str] = ""
    #: True when the generator runs in this process (local weights): the harness then relies on
    #: the generator's own batching rather than on many concurrent requests.
    local: ClassVar[bool] = False
    #: The options this family reads, or ``None`` (the default, for third-party families): any.
    #: A scan configuration that gives a built-in family an option outside this set is refused
    #: with one line (:func:`redline.engine.config_file.check_family_options`) instead of being ignored.
    accepted_options: ClassVar[frozenset[str] | None] = None

    def __init__(self, model: str = "", **options: Any) -> None:
        self.model = model
        self.options = options

    @property
    def name(self) -> str:
        """The spec that recreates this generator, e.g. ``openai:gpt-4o-mini``."""
        return f"{self.family}:{self.model}" if self.model else self.family

    def settings(self) -> dict:
        """Settings worth recording with a run. Never includes secrets."""
        return {k: v for k, v in self.options.items() if "key" not in k.lower() and v is not None}

    def preflight(self) -> None:
        """Cheap checks that need no model and no network (a file exists, an optional package is
        installed, a device name makes sense), made before a run is created so that a generator
        that cannot work leaves no empty run behind. Raises :class:`GeneratorUnavailable`."""

    async def start(self) -> None:
        """Prepare the generator (load weights, check the endpoint). Idempotent."""

    @abstractmethod
    async def generate(self, conversation: Conversation, n: int = 1) -> list[Message | None]:
        """Return exactly ``n`` outputs for ``conversation``."""

    async def aclose(self) -> None:
        """Release connections, threads and memory."""

    async def __aenter__(self) -> Generator:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
