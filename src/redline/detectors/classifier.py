"""Hugging Face sequence classifiers as text scorers: :func:`load_text_classifier`, shared by the
``toxicity.Classifier`` detector and the LVE ``ToxicityChecker``/``BiasChecker``.

torch and transformers are imported inside functions only (``redline --help`` stays fast),
and a model is loaded on first use, not when a checker is built. A model that cannot be
loaded raises :class:`ClassifierUnavailable` naming it — a checker never passes silently.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Sequence
from typing import Any

from redline.errors import RedlineError
from redline.textsafety import escape_surrogates

__all__ = ["ClassifierUnavailable", "TextScorer", "load_text_classifier", "positive_label"]

#: ``scores(texts) -> [{label: probability}, ...]``, one dict per text; ``.labels`` lists the
#: model's labels in index order. A text may be a ``(first, second)`` pair (e.g. request and
#: response), encoded as a sequence pair for models trained on pairs.
TextScorer = Callable[[Sequence[str | tuple[str, str]]], list[dict[str, float]]]

_NEGATED = ("non", "not", "un", "no")


class ClassifierUnavailable(RedlineError, RuntimeError):
    """A classifier could not be loaded (torch/transformers missing, model not found, offline)."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _load_pretrained(model_id_or_path: str) -> tuple[Any, Any]:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    def load(**kwargs: Any) -> tuple[Any, Any]:
        tokenizer = AutoTokenizer.from_pretrained(model_id_or_path, **kwargs)
        model = AutoModelForSequenceClassification.from_pretrained(model_id_or_path, **kwargs)
        return tokenizer, model

    if os.path.isdir(model_id_or_path):
        return load()
    try:  # the local Hugging Face cache first: no network round trip when it is there
        return load(local_files_only=True)
    except Exception:
        if os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE"):
            raise
        return load()


@functools.lru_cache(maxsize=8)
def load_text_classifier(model_id_or_path: str, batch_size: int = 16, max_length: int = 512) -> TextScorer:
    """Load the sequence classifier ``model_id_or_path`` (a hub id or a local folder) and
    return a function scoring a list of texts (or of ``(first, second)`` text pairs).

    The function returns, for each text, ``{label: probability}`` (softmax over the model's
    labels, named by its ``id2label``); it scores ``batch_size`` texts at a time, truncated to
    ``max_length`` tokens, without gradients. Its ``labels`` attribute lists the labels in
    index order. Loaded models are cached (8 at most).

    Raises :class:`ClassifierUnavailable` (naming the model) if torch/transformers are not
    installed or the model cannot be loaded.
    """
    try:
        import torch
        from transformers.utils import logging as hf_logging
    except ImportError as exc:
        raise ClassifierUnavailable(
            f"classifier {model_id_or_path!r} needs torch and transformers ({exc.name} is not installed)"
        ) from None
    hf_logging.set_verbosity_error()
    try:
        tokenizer, model = _load_pretrained(model_id_or_path)
    except Exception as exc:
        raise ClassifierUnavailable(f"cannot load classifier {model_id_or_path!r}: {_first_line(exc)}") from None
    model.eval()
    labels = [str(model.config.id2label.get(i, f"LABEL_{i}")) for i in range(model.config.num_labels)]
    limit = min(max_length, getattr(tokenizer, "model_max_length", max_length) or max_length)
    accepted = set(inspect.signature(model.forward).parameters)
    settings: dict[str, Any] = {"return_tensors": "pt", "padding": True, "truncation": True, "max_length": limit}

    def scores(texts: Sequence[str | tuple[str, str]]) -> list[dict[str, float]]:
        results: list[dict[str, float]] = []
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            # a lone surrogate (valid JSON from an API) is refused by the Rust tokenizers: scored as its escape
            if all(isinstance(t, tuple) for t in batch):  # sequence pairs
                firsts = [escape_surrogates(str(t[0] or "")) for t in batch]
                encoded = tokenizer(firsts, [escape_surrogates(str(t[1] or "")) for t in batch], **settings)
            else:
                encoded = tokenizer([escape_surrogates(t) if isinstance(t, str) else "" for t in batch], **settings)
            inputs = {k: v for k, v in encoded.items() if k in accepted}
            with torch.inference_mode():
                probabilities = torch.softmax(model(**inputs).logits.float(), dim=-1)
            results.extend({labels[j]: float(row[j]) for j in range(len(labels))} for row in probabilities)
        return results

    scores.labels = labels  # type: ignore[attr-defined]
    scores.model_id = model_id_or_path  # type: ignore[attr-defined]
    return scores


def positive_label(labels: Sequence[str], keyword: str) -> str:
    """The label that means "``keyword``" (e.g. ``toxic``): the one containing the keyword and
    not negated (``non-toxic``, ``unbiased``, ``neutral``), else the second label
    (``LABEL_1``, the usual positive class of a binary classifier)."""
    for label in labels:
        low = label.lower()
        if keyword in low and not low.startswith(_NEGATED) and "neutral" not in low:
            return label
    if len(labels) != 2:
        raise ClassifierUnavailable(f"cannot tell which of the labels {list(labels)} means {keyword!r}; set 'label'")
    return labels[1]
