"""Continuous batching for local causal language models run with transformers.

A :class:`ContinuousBatcher` owns one worker thread that decodes every running sequence (a *row*:
one output of one request) together, one token per step. A row leaves the batch at the step it
ends (an end token, or its ``max_new_tokens``), its request is answered as soon as its last row
has left, and waiting rows take the free places: they are prefilled together and joined to the
running batch, which never waits for its slowest row. Nothing is padded to the longest output.

Prefill is shared where prompts allow it: rows admitted together are prefilled once per distinct
prompt (repetitions and ``n > 1`` cost one prefill), and the token prefix common to them (a chat
template's system prompt, a probe's template) is computed once and kept, so later groups that
start with it skip it too (a small LRU of prefixes).

Memory is bounded: at most ``max_rows`` rows run, and rows join only while the key/value cache
(rows x its widest row's prompt and ``max_new_tokens``) fits in ``cache_bytes``; the rest wait as
token lists. A row longer than the budget alone still runs, by itself.

Sampling draws from a generator seeded per row (from the seed, the prompt and the row's index),
so a row's sample does not depend on which other rows share its batch.

The batcher works on models whose transformers cache is a plain ``DynamicCache`` of full-attention
layers (:meth:`ContinuousBatcher.supports` checks it); others keep the padded-batch path of
:mod:`redline.generators.huggingface`. torch is passed in by the caller, so importing this module
imports neither torch nor transformers.
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import queue
import threading
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BatchRequest", "ContinuousBatcher", "cache_keyword", "default_prefill_tokens", "returned_cache"]

#: Prefixes shorter than this many tokens are prefilled with their rows instead of shared.
MIN_SHARED_PREFIX = 8
#: Prompt tokens prefilled in one forward pass at most on a CPU (more waiting rows join at later steps).
PREFILL_TOKENS = 2048
#: The same bound on a CUDA device, where a wider pass costs about one step and fewer passes mean fewer steps.
CUDA_PREFILL_TOKENS = 16384


def default_prefill_tokens(device: str) -> int:
    """The prefill bound the batcher takes on ``device`` unless told another."""
    return CUDA_PREFILL_TOKENS if str(device).startswith("cuda") else PREFILL_TOKENS


#: The most likely tokens among which a row's nucleus (``top_p``) is looked for first.
NUCLEUS_CANDIDATES = 256


@dataclass(eq=False)
class BatchRequest:
    """``n`` rows generated from one prompt (token ids). ``on_done`` receives every row's
    generated token ids (in row order) once all have ended; ``on_error`` receives the exception
    when the forward pass of its batch fails. Both are called on the batcher's worker thread.
    ``cancelled`` is polled each step: a cancelled request's rows leave the batch."""

    ids: Sequence[int]
    n: int
    on_done: Callable[[list[list[int]]], None]
    on_error: Callable[[BaseException], None]
    cancelled: Callable[[], bool] = lambda: False
    outputs: list[list[int] | None] = field(default_factory=list)
    remaining: int = 0
    failed: bool = False

    def __post_init__(self) -> None:
        self.outputs = [None] * self.n
        self.remaining = self.n


@dataclass(eq=False)
class _Row:
    request: BatchRequest
    index: int
    tokens: list[int] = field(default_factory=list)
    generator: Any = None
    position: int = 0


#: Spare positions a cache layer keeps for the tokens to come (see :func:`_growing_layer`).
GROWTH = 64


def _growing_layer(base: type) -> type:
    """A subclass of transformers' ``DynamicLayer`` (``base``) that writes each step's keys and
    values into spare room of a buffer instead of concatenating (copying the whole layer every
    step). A layer whose tensors were replaced (rows selected, joined or trimmed) starts a new
    buffer from them on its next update."""

    class GrowingLayer(base):
        buffers: tuple[Any, Any] | None = None
        keys: Any
        values: Any
        is_initialized: bool

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            keys, values = self.keys, self.values
            have = keys.shape[-2] if keys.dim() == 4 else 0
            need = have + key_states.shape[-2]
            rows = key_states.shape[0]
            buffers = self.buffers
            if (
                buffers is None
                or have == 0
                or buffers[0].data_ptr() != keys.data_ptr()
                or buffers[0].shape[-2] < need
                or buffers[0].shape[0] < rows  # rows that left keep their room (see _remove_rows)
            ):
                _, heads, _, width = key_states.shape
                fresh = (
                    key_states.new_empty((rows, heads, need + GROWTH, width)),
                    value_states.new_empty((rows, heads, need + GROWTH, value_states.shape[-1])),
                )
                if have:
                    fresh[0][:, :, :have] = keys
                    fresh[1][:, :, :have] = values
                self.buffers = buffers = fresh
            buffers[0][:rows, :, have:need] = key_states
            buffers[1][:rows, :, have:need] = value_states
            self.keys, self.values = buffers[0][:rows, :, :need], buffers[1][:rows, :, :need]
            return self.keys, self.values

    return GrowingLayer


def _in_buffers(layer: Any, layer_class: type) -> bool:
    """Whether ``layer`` is a growing layer whose keys and values are the start of its buffers (not
    tensors that replaced them since: rows joined or selected, and no step has written since)."""
    buffers = getattr(layer, "buffers", None) if isinstance(layer, layer_class) else None
    return (
        buffers is not None
        and buffers[0].data_ptr() == layer.keys.data_ptr()
        and buffers[1].data_ptr() == layer.values.data_ptr()
    )


def _token_bytes(model: Any) -> int:
    """Bytes one token takes in the key/value cache of ``model`` (every layer's keys and values)."""
    config = model.config.get_text_config(decoder=True) if hasattr(model.config, "get_text_config") else model.config
    heads = int(getattr(config, "num_attention_heads", 1) or 1)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(config, "head_dim", None) or int(getattr(config, "hidden_size", heads)) // heads)
    layers = int(getattr(config, "num_hidden_layers", 1) or 1)
    size = next(model.parameters()).element_size() if any(True for _ in model.parameters()) else 4
    return max(1, 2 * layers * kv_heads * head_dim * size)


def cache_keyword(model: Any) -> str:
    """The keyword under which ``model``'s forward pass takes a key/value cache: ``cache`` where
    transformers has renamed it, else ``past_key_values`` (the older name, deprecated there)."""
    try:
        parameters = inspect.signature(model.forward).parameters
    except (AttributeError, TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in parameters else "past_key_values"


def returned_cache(out: Any) -> Any:
    """The key/value cache a forward pass returned, under either of transformers' names for it."""
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


def _common_prefix(prompts: Sequence[Sequence[int]]) -> int:
    first = prompts[0]
    length = min(len(p) for p in prompts)
    for other in prompts[1:]:
        i = 0
        while i < length and other[i] == first[i]:
            i += 1
        length = i
    return length


class ContinuousBatcher:
    """Decode rows of many requests in one continuously refilled batch (see the module docstring).

    ``torch`` is the torch module, ``model`` a loaded causal LM in eval mode on ``device``.
    ``eos_ids`` end a row; ``temperature`` 0 is greedy, else sampling with ``top_p``.
    ``cache_class`` is transformers' ``DynamicCache``.
    Call :meth:`start` once, :meth:`submit` from any thread, :meth:`stop` to end the worker.
    """

    def __init__(
        self,
        torch: Any,
        model: Any,
        *,
        device: str,
        max_rows: int,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        seed: int,
        eos_ids: Sequence[int],
        cache_class: Any,
        cache_bytes: int = 1536 * 2**20,
        prefix_cache_size: int = 4,
        prefill_tokens: int | None = None,
    ) -> None:
        self.torch, self.model, self.device, self.cache_class = torch, model, device, cache_class
        self._cache_keyword = cache_keyword(model)
        layers = getattr(cache_class(config=model.config), "layers", None) or []
        self._layer_class: Any = _growing_layer(type(layers[0])) if layers else None
        self.cache_bytes = cache_bytes
        self.token_bytes = _token_bytes(model)
        self.max_rows = max(1, max_rows)
        self.max_new_tokens = max_new_tokens
        self.temperature, self.top_p, self.seed = temperature, top_p, seed
        self.eos_ids = frozenset(int(i) for i in eos_ids)
        self.prefix_cache_size = prefix_cache_size
        self.prefill_tokens = max(1, default_prefill_tokens(device) if prefill_tokens is None else prefill_tokens)
        self._incoming: queue.SimpleQueue[BatchRequest] = queue.SimpleQueue()
        self._waiting: collections.deque[_Row] = collections.deque()
        self._rows: list[_Row] = []
        self._joining: list[_Row] = []
        self._cache: Any = None
        self._mask: Any = None
        self._last: Any = None
        self._prefixes: collections.OrderedDict[tuple[int, ...], list[tuple[Any, Any]]] = collections.OrderedDict()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        #: Counters: forward passes, and prefill tokens computed and shared.
        self.stats = collections.Counter[str]()

    # -- support -----------------------------------------------------------------------------------
    @staticmethod
    def supports(torch: Any, model: Any, device: str) -> bool:
        """Whether ``model``'s cache is a plain dynamic cache of full-attention layers (what the
        batcher edits row by row); checked with a two-token forward pass."""
        try:
            with torch.inference_mode():
                out = model(input_ids=torch.tensor([[1, 2]], device=device), use_cache=True, logits_to_keep=1)
        except (TypeError, ValueError, RuntimeError):
            return False
        layers = list(getattr(returned_cache(out), "layers", None) or [])
        return bool(layers) and all(
            type(layer).__name__ == "DynamicLayer" and getattr(layer, "keys", None) is not None for layer in layers
        )

    # -- life cycle --------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker thread (again, after :meth:`stop`); a no-op while it runs."""
        if self._thread is not None and self._thread.is_alive():
            if not self._stopping.is_set():
                return
            self._thread.join()  # a stopped worker is ending its last step: one worker at a time
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(self._stopping,), name="redline continuous batcher", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        """Tell the worker to end after its current forward pass and wait at most ``timeout``
        seconds for it (it is a daemon thread: an exiting process does not wait for its step).
        Requests still running or waiting fail with "stopped"."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def submit(self, request: BatchRequest) -> None:
        """Queue a request (thread-safe); its rows join the batch as places free up."""
        self._incoming.put(request)

    @property
    def running(self) -> int:
        """Rows in the batch now."""
        return len(self._rows)

    # -- the worker ----------------------------------------------------------------------------------
    def _run(self, stopping: threading.Event) -> None:
        try:
            # inference mode is per thread: without it every step would keep its graph
            with self.torch.inference_mode(), self._attention_kernels():
                self._loop(stopping)
        finally:
            self._take_incoming(block=False)
            left = {id(r.request): r.request for r in [*self._rows, *self._joining, *self._waiting]}
            self._reset()
            self._waiting.clear()
            self._fail(left.values(), RuntimeError("stopped"))

    def _attention_kernels(self) -> contextlib.AbstractContextManager[Any]:
        """While the worker runs on a CUDA device: attention by the flash, memory-efficient and math
        kernels, not cuDNN's, which handles the batch's growing key/value buffers badly (measured in
        ``bench/README.md``); elsewhere nothing changes. The setting is the process's while it holds."""
        attention: Any = getattr(self.torch.nn, "attention", None)
        if not str(self.device).startswith("cuda") or not hasattr(attention, "sdpa_kernel"):
            return contextlib.nullcontext()
        kernels = attention.SDPBackend
        return attention.sdpa_kernel([kernels.FLASH_ATTENTION, kernels.EFFICIENT_ATTENTION, kernels.MATH])

    def _loop(self, stopping: threading.Event) -> None:
        while not stopping.is_set():
            self._take_incoming(block=not self._rows and not self._waiting)
            try:
                self._drop_cancelled()
                if self._waiting and self._should_admit():
                    self._admit()
                if self._rows:
                    self._decode()
            except Exception as exc:  # a failed forward pass fails the rows it carried, not the worker
                self._fail({id(r.request): r.request for r in [*self._rows, *self._joining]}.values(), exc)
                self._reset()

    def _take_incoming(self, block: bool) -> None:
        try:
            request = self._incoming.get(timeout=0.1) if block else self._incoming.get_nowait()
        except queue.Empty:
            return
        while True:
            self._waiting.extend(_Row(request, i) for i in range(request.n))
            try:
                request = self._incoming.get_nowait()
            except queue.Empty:
                return

    def _drop_cancelled(self) -> None:
        if any(r.request.cancelled() for r in self._waiting):
            self._waiting = collections.deque(r for r in self._waiting if not r.request.cancelled())
        keep = [i for i, r in enumerate(self._rows) if not r.request.cancelled() and not r.request.failed]
        if len(keep) < len(self._rows):
            self._select(keep)

    def _should_admit(self) -> bool:
        free = self.max_rows - len(self._rows)
        # Joining costs a prefill and a copy of the batch's cache: wait for a few free places
        # unless the batch is empty or everything that waits fits.
        return free > 0 and (not self._rows or free >= min(len(self._waiting), max(1, self.max_rows // 4)))

    def _fail(self, requests: Any, exc: BaseException) -> None:
        for request in requests:
            if not request.failed:
                request.failed = True
                request.on_error(exc)

    def _removable(self, keep: list[int]) -> bool:
        """Whether the rows not in ``keep`` can leave in place: every layer grows in place, and
        the padding columns the kept rows no longer need are fewer than :data:`GROWTH` (more are
        trimmed by a copy, which also bounds what attention reads)."""
        if self._layer_class is None or self._cache is None:
            return False
        if not all(_in_buffers(layer, self._layer_class) for layer in self._cache.layers):
            return False
        used = self._mask[keep].any(dim=0).nonzero()
        return (int(used[0]) if len(used) else 0) < GROWTH

    def _remove_rows(self, keep: list[int]) -> None:
        """Keep only the rows ``keep`` by moving the last kept rows into the places of those that
        end, in every layer's buffer: a few rows copied, not the whole cache. The batch's rows
        change order; each row keeps its own sampling generator, so what it draws does not."""
        torch = self.torch
        kept = set(keep)
        order = list(range(len(self._rows)))
        holes = [i for i in order if i not in kept]
        # the last kept rows fill the holes below the new size; the holes above it are dropped
        size = len(keep)
        movers = [i for i in keep if i >= size]
        targets = [i for i in holes if i < size]
        for target, source in zip(targets, movers):
            order[target] = source
        order = order[:size]
        self._rows = [self._rows[i] for i in order]
        index = torch.tensor(order, device=self.device)
        self._mask, self._last = self._mask[index], self._last[index]
        to = torch.tensor(targets, device=self.device)  # as many as movers: the holes below the new size
        fro = torch.tensor(movers, device=self.device)
        for layer in self._cache.layers:
            width = layer.keys.shape[-2]
            if movers:
                for buffer in layer.buffers:
                    buffer[to, :, :width] = buffer[fro, :, :width]
            layer.keys, layer.values = layer.buffers[0][:size, :, :width], layer.buffers[1][:size, :, :width]

    def _reset(self) -> None:
        self._rows, self._joining, self._cache, self._mask, self._last = [], [], None, None, None

    # -- admission: prefill and join -------------------------------------------------------------------
    def _admit(self) -> None:
        torch = self.torch
        free = self.max_rows - len(self._rows)
        group = self._joining = []
        seen: set[tuple[int, ...]] = set()
        longest = 0  # of the group's distinct prompts: a pass is as wide as its longest prompt
        width = self._mask.shape[1] if self._rows else 0
        for row in self._admission_order():
            if len(group) >= free:
                break
            ids = tuple(row.request.ids)
            if ids not in seen and group and (len(seen) + 1) * max(longest, len(ids)) > self.prefill_tokens:
                break  # a prefill forward pass is one step nobody can interrupt: bound it, padding included
            # the cache is as wide as its longest row: rows x width stays within cache_bytes
            wide = max(width, len(ids)) + self.max_new_tokens + GROWTH
            if (group or self._rows) and (
                len(self._rows) + len(group) + 1
            ) * wide * self.token_bytes > self.cache_bytes:
                break
            if ids not in seen:
                seen.add(ids)
                longest = max(longest, len(ids))
            width = max(width, len(ids))
            group.append(row)
        if not group:  # the running rows hold the memory: wait until some end
            return
        taken = {id(row) for row in group}
        self._waiting = collections.deque(row for row in self._waiting if id(row) not in taken)
        unique: dict[tuple[int, ...], int] = {}
        for row in group:
            unique.setdefault(tuple(row.request.ids), len(unique))
        prompts = list(unique)
        cache, mask, logits = self._prefill(prompts)
        select = torch.tensor([unique[tuple(r.request.ids)] for r in group], device=self.device)
        if len(prompts) < len(group):
            cache.batch_select_indices(select)
            mask, logits = mask[select], logits[select]
        for row in group:
            row.position = len(row.request.ids) - 1  # the last prompt token's; the first new one is next
            row.generator = self._row_generator(row)
        first = self._sample(logits, group)
        self._join(group, cache, mask)
        self._joining = []
        self._advance(group, first, start=len(self._rows) - len(group))

    def _admission_order(self) -> list[_Row]:
        """The waiting rows in the order a prefill pass takes them: the one that has waited
        longest first (none waits for ever), then the others by how close their prompt's length
        is to its, the earlier first among equals. A pass is as wide as its longest prompt, so
        rows of like lengths waste less of it on padding."""
        waiting = list(self._waiting)
        anchor = len(waiting[0].request.ids)
        rest = sorted(range(1, len(waiting)), key=lambda i: (abs(len(waiting[i].request.ids) - anchor), i))
        return [waiting[0], *(waiting[i] for i in rest)]

    def _row_generator(self, row: _Row) -> Any:
        if self.temperature <= 0:
            return None
        ids = row.request.ids
        key = zlib.crc32(b"".join(int(t).to_bytes(4, "little", signed=True) for t in ids))
        generator = self.torch.Generator()  # on the CPU: one copy of every row's draws per step
        generator.manual_seed((self.seed * 1_000_003 + key * 131 + row.index) % (2**63))
        return generator

    def _prefill(self, prompts: list[tuple[int, ...]]) -> tuple[Any, Any, Any]:
        """(cache, attention mask, last-position logits) of the distinct ``prompts``."""
        torch = self.torch
        shared = min(_common_prefix(prompts), min(len(p) for p in prompts) - 1)
        if shared >= MIN_SHARED_PREFIX:
            cache = self._expand(self._prefix(prompts[0][:shared]), len(prompts))
        else:
            cache, shared = self._new_cache(), 0
        suffixes = [p[shared:] for p in prompts]
        width = max(len(s) for s in suffixes)
        ids = torch.zeros((len(prompts), width), dtype=torch.long, device=self.device)
        own = torch.zeros((len(prompts), width), dtype=torch.long, device=self.device)
        for i, suffix in enumerate(suffixes):
            ids[i, width - len(suffix) :] = torch.tensor(suffix, dtype=torch.long, device=self.device)
            own[i, width - len(suffix) :] = 1
        mask = torch.cat([torch.ones((len(prompts), shared), dtype=torch.long, device=self.device), own], dim=1)
        positions = (shared + own.cumsum(-1) - 1).masked_fill(own == 0, 1)
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{self._cache_keyword: cache},
        )
        self.stats["forward"] += 1
        self.stats["prefill_tokens"] += sum(len(s) for s in suffixes)
        self.stats["shared_tokens"] += shared * (len(prompts) - 1)
        return returned_cache(out), mask, out.logits[:, -1, :]

    def _prefix(self, prefix: tuple[int, ...]) -> list[tuple[Any, Any]]:
        """Per layer (keys, values) of one row holding ``prefix``: kept, extended from the longest
        kept prefix it starts with, or computed."""
        if prefix in self._prefixes:
            self._prefixes.move_to_end(prefix)
            self.stats["prefix_hits"] += 1
            return self._prefixes[prefix]
        torch = self.torch
        base: tuple[int, ...] = ()
        for kept in self._prefixes:
            if len(base) < len(kept) < len(prefix) and prefix[: len(kept)] == kept:
                base = kept
        cache = self._expand(self._prefixes[base], 1) if base else None
        rest = prefix[len(base) :]
        positions = torch.arange(len(base), len(prefix), device=self.device).unsqueeze(0)
        out = self.model(
            input_ids=torch.tensor([rest], dtype=torch.long, device=self.device),
            position_ids=positions,
            use_cache=True,
            logits_to_keep=1,
            **{self._cache_keyword: cache},
        )
        self.stats["forward"] += 1
        self.stats["prefill_tokens"] += len(rest)
        layers = [(layer.keys, layer.values) for layer in returned_cache(out).layers]
        self._prefixes[prefix] = layers
        while len(self._prefixes) > self.prefix_cache_size:
            self._prefixes.popitem(last=False)
        return layers

    def _new_cache(self) -> Any:
        """An empty dynamic cache whose layers grow in place (:func:`_growing_layer`)."""
        cache = self.cache_class(config=self.model.config)
        if self._layer_class is not None:
            for layer in cache.layers:
                layer.__class__ = self._layer_class
        return cache

    def _expand(self, layers: list[tuple[Any, Any]], rows: int) -> Any:
        """A fresh dynamic cache holding ``layers`` repeated for ``rows`` rows."""
        cache = self._new_cache()
        for index, (keys, values) in enumerate(layers):
            cache.update(keys.expand(rows, -1, -1, -1), values.expand(rows, -1, -1, -1), index)
        return cache

    def _join(self, group: list[_Row], cache: Any, mask: Any) -> None:
        """Append the prefilled ``group`` to the running batch, left-padding the shorter side."""
        torch = self.torch
        if self._cache is None:
            self._cache, self._mask, self._rows = cache, mask, list(group)
            self._last = torch.zeros((len(group), 1), dtype=torch.long, device=self.device)
            return
        old, new = self._mask.shape[1], mask.shape[1]
        width = max(old, new)

        def pad(tensor: Any, have: int) -> Any:
            if have == width:
                return tensor
            shape = list(tensor.shape)
            shape[-2 if tensor.dim() == 4 else -1] = width - have
            zeros = torch.zeros(shape, dtype=tensor.dtype, device=tensor.device)
            return torch.cat([zeros, tensor], dim=-2 if tensor.dim() == 4 else -1)

        for mine, theirs in zip(self._cache.layers, cache.layers):
            mine.keys = torch.cat([pad(mine.keys, old), pad(theirs.keys, new)], dim=0)
            mine.values = torch.cat([pad(mine.values, old), pad(theirs.values, new)], dim=0)
        self._mask = torch.cat([pad(self._mask, old), pad(mask, new)], dim=0)
        self._last = torch.cat([self._last, torch.zeros((len(group), 1), dtype=torch.long, device=self.device)], dim=0)
        self._rows.extend(group)

    # -- decoding ----------------------------------------------------------------------------------------
    def _decode(self) -> None:
        torch = self.torch
        rows = self._rows
        self._mask = torch.cat([self._mask, torch.ones((len(rows), 1), dtype=torch.long, device=self.device)], dim=1)
        positions = torch.tensor([[r.position] for r in rows], dtype=torch.long, device=self.device)
        out = self.model(
            input_ids=self._last,
            attention_mask=self._mask,
            position_ids=positions,
            use_cache=True,
            **{self._cache_keyword: self._cache},
        )
        self.stats["forward"] += 1
        self._cache = returned_cache(out)
        self._advance(rows, self._sample(out.logits[:, -1, :], rows), start=0)

    def _sample(self, logits: Any, rows: list[_Row]) -> list[int]:
        """One token per row: greedy at temperature 0, else nucleus sampling (the smallest set of
        most likely tokens whose probability reaches ``top_p``), one uniform draw per row from the
        row's own generator (inverse transform). The nucleus is looked for among the
        :data:`NUCLEUS_CANDIDATES` most likely tokens (instead of sorting the whole vocabulary of
        every row at every step), for all such rows at once; a row whose nucleus is larger (a flat
        distribution) is sorted in full."""
        torch = self.torch
        if self.temperature <= 0:
            return [int(t) for t in logits.argmax(-1).tolist()]
        scaled = logits.float() / self.temperature
        total = torch.logsumexp(scaled, dim=-1, keepdim=True)
        top, order = scaled.topk(min(NUCLEUS_CANDIDATES, scaled.shape[-1]), dim=-1)
        probs = (top - total).exp()  # the candidates' probabilities over the whole vocabulary
        before = probs.cumsum(-1) - probs
        covered = (before[:, -1] + probs[:, -1] >= self.top_p).tolist()
        weights = probs.masked_fill(before >= self.top_p, 0.0).cumsum(-1)
        draws = torch.cat([torch.rand(1, generator=row.generator) for row in rows]).to(scaled.device)
        tokens = [0] * len(rows)
        in_candidates = [c and self.top_p < 1.0 for c in covered]  # a nucleus among the candidates
        nucleus = [i for i, inside in enumerate(in_candidates) if inside]
        if nucleus:
            index = torch.tensor(nucleus, device=scaled.device)
            cdf = weights[index]
            places = torch.searchsorted(cdf, draws[index].unsqueeze(1) * cdf[:, -1:]).clamp_(max=cdf.shape[1] - 1)
            for i, token in zip(nucleus, order[index].gather(1, places).squeeze(1).tolist()):
                tokens[i] = int(token)
        for i in (i for i, inside in enumerate(in_candidates) if not inside):
            if self.top_p >= 1.0:  # no nucleus: the whole distribution, in vocabulary order
                cdf = (scaled[i] - total[i]).exp().cumsum(-1)
                candidates = torch.arange(len(cdf), device=cdf.device)
            else:  # the nucleus reaches past the candidates: the whole row, sorted
                full, candidates = (scaled[i] - total[i]).exp().sort(descending=True)
                cdf = full.masked_fill(full.cumsum(-1) - full >= self.top_p, 0.0).cumsum(-1)
            place = min(int(torch.searchsorted(cdf, draws[i : i + 1] * cdf[-1])), len(candidates) - 1)
            tokens[i] = int(candidates[place])
        return tokens

    def _advance(self, rows: list[_Row], tokens: list[int], start: int) -> None:
        """Record each row's new token; rows that end leave the batch and answer their request."""
        ended: set[int] = set()
        self._last[start : start + len(tokens), 0] = self.torch.tensor(tokens, device=self.device)
        for offset, (row, token) in enumerate(zip(rows, tokens)):
            row.position += 1
            if token in self.eos_ids:
                ended.add(start + offset)
                continue
            row.tokens.append(token)
            if len(row.tokens) >= self.max_new_tokens:
                ended.add(start + offset)
        if not ended:
            return
        answered: list[BatchRequest] = []
        for index in sorted(ended):
            row = self._rows[index]
            request = row.request
            request.outputs[row.index] = row.tokens
            request.remaining -= 1
            if request.remaining == 0 and not request.failed and not request.cancelled():
                answered.append(request)
        try:
            self._select([i for i in range(len(self._rows)) if i not in ended])
        finally:  # their outputs are whole even if reshaping the batch fails the rows left in it
            for request in answered:
                request.on_done([tokens or [] for tokens in request.outputs])

    def _select(self, keep: list[int]) -> None:
        """Keep only the rows ``keep``; trim the padding columns no remaining row needs. Each
        layer's kept rows are copied once, into a new buffer with spare room (a growing layer
        then writes the next steps there without copying again). Where few padding columns would
        go, the rows that end are removed in place instead (:meth:`_remove_rows`)."""
        if not keep:
            self._reset()
            return
        torch = self.torch
        if self._removable(keep):
            self._remove_rows(keep)
            return
        index = torch.tensor(keep, device=self.device)
        self._rows = [self._rows[i] for i in keep]
        self._mask, self._last = self._mask[index], self._last[index]
        used = self._mask.any(dim=0).nonzero()
        skip = int(used[0]) if len(used) else 0
        self._mask = self._mask[:, skip:]
        width = self._mask.shape[1]
        for layer in self._cache.layers:
            if self._layer_class is None or not isinstance(layer, self._layer_class):
                layer.batch_select_indices(index)
                layer.keys, layer.values = layer.keys[:, :, skip:, :], layer.values[:, :, skip:, :]
                continue
            buffers = []
            for tensor in (layer.keys, layer.values):
                _, heads, _, size = tensor.shape
                buffer = tensor.new_empty((len(keep), heads, width + GROWTH, size))
                for place, row in enumerate(keep):
                    buffer[place, :, :width] = tensor[row, :, skip:]
                buffers.append(buffer)
            layer.buffers = (buffers[0], buffers[1])
            layer.keys, layer.values = buffers[0][:, :, :width], buffers[1][:, :, :width]
