"""``rest:`` endpoints and images: a body template with ``{image_base64}`` / ``{image_mime}`` sends
the attachment's bytes (JSON-escaped like every value); any other template refuses an image in one
line, before the scan."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attachments import AttachmentError, attach, use_attachment_dir
from redline.attempt import Conversation, Message, Turn
from redline.engine import ScanConfig, scan
from redline.generators import get_generator
from redline.images import render_text
from redline.store import Store

pytest.importorskip("PIL")

ANSWER = "choices.0.message.content"


@pytest.fixture(autouse=True)
def attachments_in(tmp_path: Path):
    use_attachment_dir(tmp_path / "attachments")
    yield
    use_attachment_dir(None)


def with_image(text: str, png: bytes, mime: str = "image/png") -> Conversation:
    return Conversation([Turn("user", attach(text, png, mime))])


@pytest.mark.parametrize(
    "body",
    [
        '{"prompt": "{prompt}", "image": {"data": "{image_base64}", "type": "{image_mime}"}}',
        {"prompt": "{prompt}", "image": {"data": "{image_base64}", "type": "{image_mime}"}},
    ],
    ids=["json-text", "mapping"],
)
async def test_the_body_template_carries_the_image_bytes_and_type(body) -> None:
    png = render_text("read me")
    with MockOpenAI() as server:
        gen = get_generator("rest:vision", url=server.base_url + "/gen", body=body, response_path=ANSWER)
        try:
            (output,) = await gen.generate(with_image('what does "this" say?', png), 1)
        finally:
            await gen.aclose()
    (sent,) = server.requests
    assert sent["prompt"] == 'what does "this" say?' and output is not None
    assert base64.b64decode(sent["image"]["data"]) == png and sent["image"]["type"] == "image/png"
    assert gen.attachment_types == ("image/*",)


async def test_a_hostile_mime_type_is_escaped_and_cannot_add_fields_to_the_body() -> None:
    hostile = 'image/png", "admin": "true'
    with MockOpenAI() as server:
        gen = get_generator(
            "rest:vision",
            url=server.base_url + "/gen",
            body='{"prompt": "{prompt}", "data": "{image_base64}", "type": "{image_mime}"}',
            response_path=ANSWER,
        )
        try:
            await gen.generate(with_image("p", render_text("x"), hostile), 1)
        finally:
            await gen.aclose()
    (sent,) = server.requests
    assert set(sent) == {"prompt", "data", "type"} and sent["type"] == hostile


async def test_a_template_without_the_image_refuses_an_image_in_one_line_and_sends_nothing() -> None:
    with MockOpenAI() as server:
        gen = get_generator(
            "rest:text", url=server.base_url + "/gen", body={"prompt": "{prompt}"}, response_path=ANSWER
        )
        try:
            with pytest.raises(AttachmentError) as caught:
                await gen.generate(with_image("p", render_text("x")), 1)
        finally:
            await gen.aclose()
    assert "\n" not in str(caught.value) and "image/png" in str(caught.value)
    assert server.requests == [] and gen.attachment_types == ()


async def test_a_scan_of_image_probes_on_a_text_template_is_refused_before_a_run_exists(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    config = ScanConfig(
        model="rest:text",
        probes="multimodal.VisualInjection",
        sample=1,
        generator_options={"url": "http://127.0.0.1:9/gen", "body": {"prompt": "{prompt}"}, "response_path": ANSWER},
    )
    try:
        with pytest.raises(AttachmentError) as caught:
            await scan(config, store)
        assert "\n" not in str(caught.value) and "multimodal.VisualInjection" in str(caught.value)
        assert store.list_runs() == []
    finally:
        store.close()


async def test_a_text_prompt_fills_the_image_placeholders_with_empty_strings() -> None:
    with MockOpenAI() as server:
        gen = get_generator(
            "rest:vision",
            url=server.base_url + "/gen",
            body='{"prompt": "{prompt}", "data": "{image_base64}", "type": "{image_mime}"}',
            response_path=ANSWER,
        )
        try:
            await gen.generate(Conversation([Turn("user", Message("plain"))]), 1)
        finally:
            await gen.aclose()
    assert json.loads(json.dumps(server.requests[0])) == {"prompt": "plain", "data": "", "type": ""}
