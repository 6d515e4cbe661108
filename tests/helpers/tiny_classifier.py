"""A tiny sequence classifier built locally for tests (nothing is downloaded), whose verdict on a
text is known in advance: it is decided by the text's first word.

``build_first_word_classifier(folder, labels, positive, hot)`` saves a 2-layer DistilBERT and a
lower-casing word-level tokenizer (no special tokens added) loadable with
``AutoModelForSequenceClassification`` / ``AutoTokenizer``, i.e. by ``hf:FOLDER``. Every
transformer weight is zero, so the first token's hidden state is its own embedding; a text whose
first word is in ``hot`` gets probability :data:`P_HOT` of label ``positive`` (with two labels;
with more, the positive label still has the largest probability), any other text ``1 - P_HOT``
(a word outside :data:`WORDS` and ``hot`` is unknown, so not hot).
A sequence pair (request, response) is read as their concatenation: its first word is the
request's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

__all__ = ["P_HOT", "WORDS", "build_first_word_classifier"]

#: Probability of the positive label for a text starting with a hot word (two labels).
P_HOT = 0.9
WORDS = ("sure", "here", "step", "sorry", "i", "cannot", "help", "how", "do", "make", "tell", "me", "a", "lock")


def build_first_word_classifier(
    folder: Path, labels: Sequence[str], positive: int, hot: Sequence[str] = ("sure", "here")
) -> Path:
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import DistilBertConfig, DistilBertForSequenceClassification, PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(dict.fromkeys(["[PAD]", "[UNK]", *WORDS, *hot]))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]")
    dim = 16
    config = DistilBertConfig(
        vocab_size=len(vocab),
        dim=dim,
        n_layers=2,
        n_heads=2,
        hidden_dim=32,
        max_position_embeddings=128,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
        pad_token_id=0,
    )
    model = DistilBertForSequenceClassification(config)
    sign = torch.tensor([1.0 if i % 2 == 0 else -1.0 for i in range(dim)])  # layer norm keeps it
    # pre_classifier is the identity and a ReLU follows: a hot word leaves the +1 half, any other
    # word the other half; the classifier maps them to logits +-log(P/(1-P))/2.
    scale = math.log(P_HOT / (1 - P_HOT)) / dim
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.startswith("distilbert.transformer") and "layer_norm" not in name:
                param.zero_()
        model.distilbert.embeddings.position_embeddings.weight.zero_()
        for token, index in vocab.items():
            model.distilbert.embeddings.word_embeddings.weight[index] = sign if token in hot else -sign
        model.pre_classifier.weight.copy_(torch.eye(dim))
        model.pre_classifier.bias.zero_()
        model.classifier.bias.zero_()
        for index in range(len(labels)):
            model.classifier.weight[index] = (scale if index == positive else -scale) * sign
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder
