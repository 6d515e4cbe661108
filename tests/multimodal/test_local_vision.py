"""Local ``hf:`` image-text-to-text models: a tiny LLaVA-style model the test builds and saves (no
download) takes an image through its processor; a text model refuses one in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.attachments import attach, unsupported, use_attachment_dir
from redline.attempt import Conversation, Message, Turn
from redline.generators import get_generator
from redline.images import render_text
from redline.probes import get_probe

pytest.importorskip("PIL")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

pytestmark = pytest.mark.slow

WORDS = ["<unk>", "<pad>", "<s>", "</s>", "<image>", "USER:", "ASSISTANT:", "What", "does", "it", "say", "?"] + [
    f"w{i}" for i in range(40)
]
TEMPLATE = (
    "{% for m in messages %}{{ m['role'].upper() }}: {% for p in m['content'] %}"
    "{% if p['type'] == 'image' %}<image> {% else %}{{ p['text'] }} {% endif %}{% endfor %}\n{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer LLaVA (CLIP vision tower, Llama text model) with a word-level tokenizer and a
    16-pixel image processor, saved to a folder."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    folder = tmp_path_factory.mktemp("tiny-vlm")
    vocab = {w: i for i, w in enumerate(WORDS)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        additional_special_tokens=["<image>"],
    )
    images = CLIPImageProcessor(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16})
    processor = LlavaProcessor(
        image_processor=images,
        tokenizer=tokenizer,
        patch_size=8,
        vision_feature_select_strategy="default",
        chat_template=TEMPLATE,
        num_additional_image_tokens=1,
    )
    vision = CLIPVisionConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=16, patch_size=8
    )
    text = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=1,
        bos_token_id=2,
        eos_token_id=3,
    )
    config = LlavaConfig(vision_config=vision, text_config=text, image_token_index=vocab["<image>"])
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


@pytest.fixture(autouse=True)
def attachments_in(tmp_path: Path):
    use_attachment_dir(tmp_path / "attachments")
    yield
    use_attachment_dir(None)


async def test_a_local_vision_model_takes_the_image_through_its_processor(tiny_vlm: Path) -> None:
    generator = get_generator(f"hf:{tiny_vlm}", max_tokens=3, temperature=0)
    assert generator.attachment_types == ("image/*",)
    await generator.start()
    seen: list[dict] = []
    real = generator._model.generate

    def spy(**kwargs):
        seen.append(kwargs)
        return real(**kwargs)

    generator._model.generate = spy
    try:
        message = attach("What does it say ?", render_text("hello"), "image/png")
        outputs = await generator.generate(Conversation([Turn("user", message)]), 2)
    finally:
        await generator.aclose()
    assert len(outputs) == 2 and all(o is not None and o.text is not None for o in outputs)
    (call,) = seen
    assert tuple(call["pixel_values"].shape) == (1, 3, 16, 16)
    assert int((call["input_ids"] == WORDS.index("<image>")).sum()) == 4  # the image's patches, in the prompt


def test_a_text_model_folder_takes_no_images_and_an_image_probe_is_refused_before_the_scan(tmp_path: Path) -> None:
    folder = tmp_path / "text-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    generator = get_generator(f"hf:{folder}")
    assert generator.attachment_types == ()
    refused = unsupported(generator, [get_probe("multimodal.VisualInjection")])
    assert refused is not None and "\n" not in refused and "image/png" in refused


async def test_a_vision_model_answers_a_text_only_prompt_too(tiny_vlm: Path) -> None:
    generator = get_generator(f"hf:{tiny_vlm}", max_tokens=2, temperature=0)
    try:
        (output,) = await generator.generate(Conversation([Turn("user", Message("What does it say ?"))]), 1)
    finally:
        await generator.aclose()
    assert output is not None and output.text is not None
