"""The generator interface: a model that answers a :class:`~redline.attempt.Conversation`.

Every generator offers one coroutine, :meth:`Generator.generate`, which returns exactly ``n``
outputs for a conversation (``None`` where the model gave no output). The base class implements
that contract once: a backend implements :meth:`Generator._generate` (one request, which may give
fewer or more outputs than asked for) and says with :attr:`Generator.supports_n` whether one request
can give several; :meth:`Generator.generate` fills the missing outputs with single requests.
A generator may instead override :meth:`Generator.generate` itself (third-party generators written
against the original interface), and must then keep the contract. Generators are created by name
through :func:`redline.generators.get_generator`.

The options a family reads are declared once, as :class:`~redline.generators.options.GeneratorOption`
specs in :attr:`Generator.option_specs`; the constructor reads and checks them.

Two error classes separate what the harness does next:

* :class:`GeneratorError` — this request failed (bad response, timeout after retries): the attempt
  is recorded as errored and the run goes on.
* :class:`GeneratorUnavailable` — the generator cannot work at all (unreachable endpoint, missing
  key, model that cannot load): the run stops with one clear line and can be resumed later.

Both derive from :class:`~redline.errors.RedlineError` (an expected error, printed as one line) and
from :class:`RuntimeError`, which they were before, so existing ``except`` clauses keep working.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

from redline.attempt import Conversation, Message
from redline.errors import RedlineError
from redline.generators.options import GeneratorOption

__all__ = ["Generator", "GeneratorError", "GeneratorUnavailable", "GeneratorWrapper"]


class GeneratorError(RedlineError, RuntimeError):
    """One request failed; the attempt is marked errored and the run continues."""


class GeneratorUnavailable(RedlineError, RuntimeError):
    """The generator cannot serve any request; the run stops (and can be resumed)."""


class Generator:
    """Base class of every generator.

    Subclasses set :attr:`family` (the registry name, e.g. ``"openai"``), declare their options in
    :attr:`option_specs` and implement :meth:`_generate` (or override :meth:`generate`). ``model``
    is the part of the spec after ``family:`` (may be empty).
    """

    family: ClassVar[str] = "base"
    description: ClassVar[str] = ""
    #: True when the generator runs in this process (local weights): the harness then relies on
    #: the generator's own batching rather than on many concurrent requests.
    local: ClassVar[bool] = False
    #: The options this family reads, declared once: the constructor reads and checks them into
    #: :attr:`option_values`, :attr:`accepted_options` is derived from them and a scan
    #: configuration's values are checked against them. A subclass extends its parent's tuple.
    option_specs: ClassVar[tuple[GeneratorOption, ...]] = ()
    #: Whether the family also takes options it does not declare (True by default, for third-party
    #: families, which may read any option; built-in families other than the test ones set False).
    takes_other_options: ClassVar[bool] = True
    #: The options a scan configuration may give this family, or ``None``: any. Derived from
    #: :attr:`option_specs` and :attr:`takes_other_options` for a class that sets either (and
    #: not this one), else inherited. A scan
    #: configuration that gives a family an option outside this set is refused with one line
    #: (:func:`redline.engine.config_file.check_family_options`) instead of being ignored.
    accepted_options: ClassVar[frozenset[str] | None] = None
    #: Whether one :meth:`_generate` request can give several outputs (it is then asked for all
    #: ``n`` at once, e.g. with the ``n`` field of an OpenAI request). When False, ``n`` outputs
    #: are ``n`` single requests, sent concurrently. An instance turns it off for itself when its
    #: endpoint answers a request for several outputs with one (the endpoint ignores ``n``).
    supports_n: bool = False
    #: Whether the generator takes tool definitions (``Conversation.tools``) and answers with
    #: tool calls (``Message.tool_calls``), reading ``tool`` turns back. A generator without it is
    #: refused by the agent probes with one line (or they are "not measured" with that reason).
    supports_tools: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        names = [spec.name for spec in cls.option_specs]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise TypeError(f"{cls.__name__} declares the option(s) {', '.join(repeated)} twice")
        own = vars(cls)
        if "accepted_options" not in own and ("option_specs" in own or "takes_other_options" in own):
            cls.accepted_options = None if cls.takes_other_options else frozenset(names)

    def __init__(self, model: str = "", **options: Any) -> None:
        self.model = model
        self.options = options
        #: Every declared option's value: as given (read with :meth:`GeneratorOption.read`), or its
        #: default. A value that cannot be used raises :class:`GeneratorUnavailable` here.
        self.option_values: dict[str, Any] = self._read_options(options)

    def _read_options(self, options: dict[str, Any]) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for spec in self.option_specs:
            given = options.get(spec.name)
            if given is None:
                values[spec.name] = spec.default
                continue
            try:
                values[spec.name] = spec.read(given)
            except ValueError as exc:
                raise GeneratorUnavailable(f"{self.name}: option {spec.name} {exc}, not {given!r}") from None
        return values

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

    async def generate(self, conversation: Conversation, n: int = 1) -> list[Message | None]:
        """Return exactly ``n`` outputs for ``conversation`` (``None`` where the model gave none;
        an empty list when ``n`` < 1). ``conversation`` is read, never changed: its messages may be
        the attempt's own (:meth:`~redline.attempt.Attempt.prompt_view`).

        Starts the generator, then asks :meth:`_generate` for all ``n`` outputs in one request when
        :attr:`supports_n` (or ``n`` is 1), and for each output still missing with one request of
        its own, all sent concurrently; of a single request's outputs only the first is used, and
        outputs beyond ``n`` are dropped. A request for several outputs that gives at most one
        turns :attr:`supports_n` off for this generator, so the next call sends its single requests
        at once. An error of any request propagates (:class:`GeneratorError`,
        :class:`GeneratorUnavailable`).
        """
        if n < 1:
            return []
        await self.start()
        outputs: list[Message | None] = []
        if n == 1 or self.supports_n:
            outputs = list(await self._generate(conversation, n))
            if n > 1 and len(outputs) <= 1:
                self.supports_n = False  # the endpoint ignores n: ask one by one from now on
        missing = n - len(outputs)
        if missing > 0:
            singles = await asyncio.gather(*(self._generate(conversation, 1) for _ in range(missing)))
            outputs.extend(single[0] if single else None for single in singles)
        return outputs[:n]

    async def _generate(self, conversation: Conversation, n: int) -> Sequence[Message | None]:
        """One request to the backend for ``n`` outputs of ``conversation`` (``n`` is 1 unless
        :attr:`supports_n`). It may return fewer outputs (an endpoint that ignores ``n``, one that
        gave nothing) or more; :meth:`generate` makes up the difference. Raises
        :class:`GeneratorError` when this request fails, :class:`GeneratorUnavailable` when the
        generator cannot work at all. Called only after :meth:`start`."""
        raise NotImplementedError(f"{type(self).__name__} implements neither _generate nor generate")

    async def aclose(self) -> None:
        """Release connections, threads and memory."""

    async def __aenter__(self) -> Generator:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class GeneratorWrapper(Generator):
    """A generator that stands for ``inner`` and changes only how :meth:`generate` answers (the
    response cache, a budget's meter). It has ``inner``'s name, family, settings, option values,
    ``local``, ``supports_n`` and ``supports_tools``; ``preflight``, ``start`` and ``aclose`` are
    passed on, and any other attribute a probe may look at (a tokenizer) is ``inner``'s."""

    def __init__(self, inner: Generator) -> None:
        super().__init__(inner.model, **inner.options)
        self.option_values = getattr(inner, "option_values", {})
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def local(self) -> bool:  # type: ignore[override]
        return self.inner.local

    @property
    def family(self) -> str:  # type: ignore[override]
        return self.inner.family

    @property
    def supports_n(self) -> bool:  # type: ignore[override]
        return self.inner.supports_n

    @property
    def supports_tools(self) -> bool:  # type: ignore[override]
        return bool(getattr(self.inner, "supports_tools", False))

    def settings(self) -> dict:
        return self.inner.settings()

    def preflight(self) -> None:
        self.inner.preflight()

    async def start(self) -> None:
        await self.inner.start()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (during __init__): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)
