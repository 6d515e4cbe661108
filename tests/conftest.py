"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.lve_repos import FIXTURE_LVES, LVE_SAMPLES


@pytest.fixture(
    params=[FIXTURE_LVES] + ([LVE_SAMPLES] if LVE_SAMPLES is not None else []),
    ids=["fixture"] + (["lve-samples"] if LVE_SAMPLES is not None else []),
)
def lve_samples(request) -> Path:
    """An LVE repository: our own ``tests/data/lves`` always, and the public LVE samples
    (``REDLINE_LVE_SAMPLES`` or ``shared/lve-samples`` next to the checkout) when present."""
    return request.param


def build_tiny_classifier(folder: Path, labels: list[str], favour: int) -> Path:
    """Save a 2-layer BERT sequence classifier with a word-level tokenizer in ``folder``.

    All weights of the classification head are zero except its bias, which favours label
    ``favour`` — so the model's verdict is known in advance while the real loading path
    (AutoTokenizer / AutoModelForSequenceClassification from a local folder) is exercised.
    """
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast

    vocab = {
        tok: i for i, tok in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "you", "are", "an", "idiot", "nice", "day"])
    }
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]"
    )
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={l: i for i, l in enumerate(labels)},
    )
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.zero_()
        model.classifier.bias[favour] = 6.0
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder
