"""Multimodal probes and the image converter in a scan: a text-only model is refused before the
run starts, a vision model gets the images (stored beside the store, exported with checksum and
path), and resume and cache see the same bytes."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attachments import AttachmentError, use_attachment_dir
from redline.engine import ScanConfig, scan
from redline.report.exports import export_jsonl
from redline.store import Store

pytest.importorskip("PIL")


@pytest.fixture(autouse=True)
def default_attachments():
    yield
    use_attachment_dir(None)


def images_sent(server: MockOpenAI) -> list[bytes]:
    found = []
    for body in server.requests:
        for part in body["messages"][-1]["content"]:
            if part["type"] == "image_url":
                found.append(base64.b64decode(part["image_url"]["url"].partition(",")[2]))
    return found


async def test_a_text_only_model_is_refused_in_one_line_before_a_run_is_created(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    config = ScanConfig(model="test.echo", probes="multimodal.VisualInjection,harmful.Requests", sample=2)
    with pytest.raises(AttachmentError) as caught:
        await scan(config, store)
    message = str(caught.value)
    assert "\n" not in message and "multimodal.VisualInjection" in message and "image/png" in message
    assert "harmful.Requests" not in message
    assert store.list_runs() == []
    store.close()


async def test_with_skip_unavailable_the_image_probes_are_not_measured_and_the_rest_runs(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    config = ScanConfig(
        model="test.echo", probes="multimodal.VisualInjection,harmful.Requests", sample=2, skip_unavailable=True
    )
    run_id = await scan(config, store)
    probes = {a["probe_classname"] for a in store.iter_attempt_dicts(run_id)}
    assert probes == {"harmful.Requests"}
    store.close()


async def test_a_vision_model_gets_every_image_and_the_export_names_the_stored_bytes(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    with MockOpenAI(responder=lambda messages, body: "I see a page.") as server:
        config = ScanConfig(
            model="openai:vision",
            probes="multimodal.VisualInjection",
            sample=3,
            generator_options={"base_url": server.base_url},
        )
        run_id = await scan(config, store)
    sent = images_sent(server)
    assert len(sent) == 3
    lines = [json.loads(line) for line in export_jsonl(store, run_id)]
    attempts = [line for line in lines if line.get("entry_type") == "attempt"]
    assert len(attempts) == 3
    folder = (tmp_path / "s.attachments").resolve()
    for attempt in attempts:
        message = attempt["prompt"]["turns"][-1]["content"]
        path = folder / message["data_path"]  # named relative to the store's attachment folder
        assert message["data_path"] == path.name and message["data_type"][0] == "image/png"
        data = path.read_bytes()
        assert hashlib.sha256(data).hexdigest() == message["data_checksum"] and data in sent
    store.close()


async def test_a_second_scan_of_the_same_images_is_answered_from_the_cache(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    with MockOpenAI(responder=lambda messages, body: "ok") as server:
        config = ScanConfig(
            model="openai:vision",
            probes="multimodal.ImageTextConflict",
            sample=2,
            generator_options={"base_url": server.base_url},
        )
        await scan(config, store)
        assert len(server.requests) == 2
        await scan(config, store)
        assert len(server.requests) == 2  # the same bytes give the same keys
    store.close()


async def test_the_image_converter_composes_with_base64_and_sends_the_drawn_prompt(tmp_path: Path) -> None:
    from redline.attacks.converters.image import CARRIER
    from redline.images import render_text

    store = Store(tmp_path / "s.db")
    with MockOpenAI(responder=lambda messages, body: "I can't help with that.") as server:
        config = ScanConfig(
            model="openai:vision",
            probes="harmful.Requests",
            sample=1,
            converters="base64,image",
            generator_options={"base_url": server.base_url},
        )
        run_id = await scan(config, store)
    (attempt,) = list(store.iter_attempt_dicts(run_id))
    encoded = json.loads(json.dumps(attempt["notes"]["original_prompt"]))["turns"][-1]["content"]["text"]
    (body,) = server.requests
    text_part = body["messages"][-1]["content"][0]
    assert text_part == {"type": "text", "text": CARRIER}
    from redline.attacks.converters import parse_converters

    base64_text = parse_converters("base64").transform(encoded)
    assert images_sent(server) == [render_text(base64_text)]
    store.close()


async def test_a_text_only_model_is_refused_for_the_image_converter_too(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    config = ScanConfig(model="test.echo", probes="harmful.Requests", sample=1, converters="image")
    with pytest.raises(AttachmentError, match="harmful.Requests\\+image"):
        await scan(config, store)
    store.close()


async def test_the_html_report_and_the_view_show_a_thumbnail_of_each_image_sent(tmp_path: Path) -> None:
    import io
    import re

    from PIL import Image

    from helpers.view_runs import client_for
    from redline.report.html import render_report

    store = Store(tmp_path / "s.db")
    with MockOpenAI(responder=lambda messages, body: "A receipt.") as server:
        config = ScanConfig(
            model="openai:vision",
            probes="multimodal.ImageTextConflict",
            sample=2,
            generator_options={"base_url": server.base_url},
        )
        run_id = await scan(config, store)
    attempts = list(store.iter_attempts(run_id))
    html = render_report(store, run_id)
    thumbnails = re.findall(r'<img class="attachment" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(thumbnails) == 2
    for encoded in thumbnails:
        with Image.open(io.BytesIO(base64.b64decode(encoded))) as image:
            assert image.format == "PNG" and max(image.size) <= 240
    attempt = attempts[0]
    url = f"/runs/{run_id}/attempt?probe={attempt.probe_classname}&seq={attempt.seq}"
    response = client_for(tmp_path / "s.db").get(url)
    assert response.status_code == 200 and response.text.count('<img class="attachment" src="data:image/png') == 1

    # a stored file whose bytes changed is not shown
    (tmp_path / "s.attachments" / attempt.prompt.turns[-1].content.data_path).write_bytes(b"\x89PNG changed")
    assert len(re.findall(r'<img class="attachment"', render_report(store, run_id))) == 1
    store.close()
