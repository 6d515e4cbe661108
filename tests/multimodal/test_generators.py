"""Chat generators send a message's attachment as a content part (image_url, input_audio), checked
against a local mock server, and refuse one they cannot send with one line, before any request."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attachments import AttachmentError, attach, use_attachment_dir
from redline.attempt import AttemptError, Conversation, Message, Turn
from redline.generators.ollama import OllamaGenerator
from redline.generators.openai import OpenAIGenerator
from redline.images import render_text

pytest.importorskip("PIL")


@pytest.fixture(autouse=True)
def attachments(tmp_path: Path):
    use_attachment_dir(tmp_path / "attachments")
    yield tmp_path / "attachments"
    use_attachment_dir(None)


def conversation(message: Message) -> Conversation:
    return Conversation(turns=[Turn("user", message)])


def parts_of(body: dict) -> list[dict]:
    content = body["messages"][-1]["content"]
    assert isinstance(content, list), content
    return content


def decoded_image(part: dict) -> tuple[str, bytes]:
    assert part["type"] == "image_url"
    url = part["image_url"]["url"]
    header, _, payload = url.partition(",")
    assert header.startswith("data:") and header.endswith(";base64")
    return header[5:].split(";")[0], base64.b64decode(payload)


@pytest.mark.parametrize("family", [OpenAIGenerator, OllamaGenerator])
async def test_a_chat_request_carries_the_image_as_a_data_url_that_decodes_to_our_png(family) -> None:
    png = render_text("What does this say?")
    with MockOpenAI(responder=lambda messages, body: "a sign") as server:
        generator = family("vision-model", base_url=server.base_url)
        try:
            (output,) = await generator.generate(conversation(attach("Describe the image.", png, "image/png")), 1)
        finally:
            await generator.aclose()
    assert output is not None and output.text == "a sign"
    text, image = parts_of(server.requests[0])
    assert text == {"type": "text", "text": "Describe the image."}
    mime, data = decoded_image(image)
    assert mime == "image/png" and data == png


async def test_an_image_read_from_a_file_is_sent_with_the_bytes_of_the_file(tmp_path: Path) -> None:
    png = render_text("file")
    path = tmp_path / "shot.png"
    path.write_bytes(png)
    with MockOpenAI(responder=lambda messages, body: "ok") as server:
        generator = OpenAIGenerator("m", base_url=server.base_url)
        try:
            await generator.generate(conversation(Message(text="What is it?", data_path=str(path))), 1)
        finally:
            await generator.aclose()
    assert decoded_image(parts_of(server.requests[0])[1]) == ("image/png", png)


async def test_wav_audio_is_sent_as_an_input_audio_part() -> None:
    wav = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(28)
    with MockOpenAI(responder=lambda messages, body: "heard") as server:
        generator = OpenAIGenerator("audio-model", base_url=server.base_url)
        try:
            await generator.generate(conversation(attach("Transcribe this.", wav, "audio/wav")), 1)
        finally:
            await generator.aclose()
    part = parts_of(server.requests[0])[1]
    assert part["type"] == "input_audio" and part["input_audio"]["format"] == "wav"
    assert base64.b64decode(part["input_audio"]["data"]) == wav


async def test_audio_to_a_model_that_takes_only_images_fails_in_one_line_before_any_request() -> None:
    with MockOpenAI() as server:
        generator = OllamaGenerator("llava", base_url=server.base_url)
        try:
            with pytest.raises(AttachmentError) as caught:
                await generator.generate(conversation(attach("Listen.", b"RIFF....WAVE", "audio/wav")), 1)
        finally:
            await generator.aclose()
    message = str(caught.value)
    assert "\n" not in message and "audio/wav" in message and "ollama:llava" in message
    assert server.requests == []


async def test_an_attachment_above_the_size_limit_is_refused_in_one_line_naming_it(monkeypatch) -> None:
    png = render_text("big")
    monkeypatch.setattr(OpenAIGenerator, "max_attachment_bytes", len(png) - 1)
    message = attach("Describe.", png, "image/png")
    with MockOpenAI() as server:
        generator = OpenAIGenerator("m", base_url=server.base_url)
        try:
            with pytest.raises(AttachmentError) as caught:
                await generator.generate(conversation(message), 1)
        finally:
            await generator.aclose()
    assert "\n" not in str(caught.value) and str(message.data_path) in str(caught.value)
    assert "limit" in str(caught.value) and server.requests == []


async def test_an_unreadable_image_file_is_refused_in_one_line_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "gone.png"
    with MockOpenAI() as server:
        generator = OpenAIGenerator("m", base_url=server.base_url)
        try:
            with pytest.raises((AttachmentError, AttemptError)) as caught:
                await generator.generate(conversation(Message(text="Describe.", data_path=str(missing))), 1)
        finally:
            await generator.aclose()
    assert "\n" not in str(caught.value) and str(missing) in str(caught.value) and server.requests == []


async def test_a_file_that_is_not_the_image_its_name_says_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "fake.png"
    fake.write_bytes(b"this is text, not a PNG")
    with MockOpenAI() as server:
        generator = OpenAIGenerator("m", base_url=server.base_url)
        try:
            with pytest.raises(AttachmentError, match="not a readable image/png image"):
                await generator.generate(conversation(Message(text="Describe.", data_path=str(fake))), 1)
        finally:
            await generator.aclose()
    assert server.requests == []


def test_the_completions_api_takes_no_attachments() -> None:
    assert OpenAIGenerator("m", api="completions", base_url="http://127.0.0.1:9/v1").attachment_types == ()
    assert OpenAIGenerator("m", base_url="http://127.0.0.1:9/v1").attachment_types


async def test_a_stored_attachment_is_content_addressed_and_written_once(attachments: Path) -> None:
    png = render_text("same")
    first, second = attach("a", png, "image/png"), attach("b", png, "image/png")
    assert first.data_path == second.data_path
    assert first.data_path == f"{first.data_checksum}.png"  # relative to the attachment folder
    assert (attachments / first.data_path).read_bytes() == png
    assert sorted(p.name for p in attachments.iterdir()) == [first.data_path]


async def test_a_file_above_the_limit_is_refused_without_being_read(tmp_path: Path, monkeypatch) -> None:
    big = tmp_path / "big.png"
    big.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(4096))
    monkeypatch.setattr(OpenAIGenerator, "max_attachment_bytes", 1024)
    message = Message(text="Describe.", data_path=str(big))
    with MockOpenAI() as server:
        generator = OpenAIGenerator("m", base_url=server.base_url)
        try:
            with pytest.raises(AttachmentError, match="4104 bytes, above the 1024-byte limit"):
                await generator.generate(conversation(message), 1)
        finally:
            await generator.aclose()
    assert message.data_checksum is None  # the file was never loaded
