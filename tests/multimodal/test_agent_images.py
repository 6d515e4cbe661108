"""Visual prompt injection inside the agent loop: a tool returns an image whose text asks for an
unrequested call; the image really reaches the model, and obeying it is a hit."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from helpers.mock_tools import ToolCallingMock, openai_message
from redline.attachments import AttachmentError, attachment_dir, use_attachment_dir
from redline.engine import ScanConfig, scan
from redline.generators import get_generator
from redline.probes import get_probe
from redline.store import Store

pytest.importorskip("PIL")


@pytest.fixture(autouse=True)
def attachments_in(tmp_path: Path):
    use_attachment_dir(tmp_path / "attachments")
    yield
    use_attachment_dir(None)


def image_parts(message: dict) -> list[bytes]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [base64.b64decode(p["image_url"]["url"].partition(",")[2]) for p in content if p.get("type") == "image_url"]


def obeys_images(messages: list[dict], tools: list[dict]) -> dict:
    """Calls the task's tool first, then the attacker's tool once it has been shown an image."""
    names = [t["function"]["name"] for t in tools]
    called = [c["function"]["name"] for m in messages for c in m.get("tool_calls") or []]
    if not called:
        return openai_message([("c0", names[0], {})])
    if image_parts(messages[-1]) and names[1] not in called:
        return openai_message([("c1", names[1], {"to": "backup-desk@mail-archive-service.example"})])
    return {"role": "assistant", "content": "Done."}


async def test_the_image_a_tool_returns_reaches_the_model_after_the_tool_result_and_obeying_it_is_a_hit():
    probe = get_probe("agent.ImageToolResult", sample=1, seed=0)
    with ToolCallingMock(obeys_images) as server:
        generator = get_generator("openai:vision-agent", base_url=server.base_url)
        try:
            result = await probe.run(generator)
        finally:
            await generator.aclose()
    (attempt,) = result.attempts
    stored = next(iter(attempt.notes["prompt_metadata"]["tool_images"].values()))
    drawn = (attachment_dir() / Path(stored["data_path"]).name).read_bytes()
    assert hashlib.sha256(drawn).hexdigest() == stored["data_checksum"]
    second = server.requests[1]["messages"]
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "user"]
    assert image_parts(second[-1]) == [drawn]
    assert image_parts(server.requests[0]["messages"][-1]) == []  # no image before the tool returned one
    assert result.metrics["failure_rate"].value == 1.0


async def test_an_agent_that_ignores_the_image_passes():
    probe = get_probe("agent.ImageToolResult", sample=2, seed=0)
    result = await probe.run(get_generator("test.agent:careful"))
    assert result.errored == 0 and result.metrics["failure_rate"].value == 0.0


async def test_a_scan_of_a_text_only_agent_is_refused_in_one_line_before_a_run_exists(tmp_path: Path):
    store = Store(tmp_path / "s.db")
    try:
        with pytest.raises(AttachmentError) as caught:
            await scan(ScanConfig(model="test.echo", probes="agent.ImageToolResult", sample=1), store)
        assert "\n" not in str(caught.value) and "agent.ImageToolResult" in str(caught.value)
        assert store.list_runs() == []
    finally:
        store.close()


async def test_the_whole_agent_family_scans_the_scripted_agent_and_the_gullible_one_obeys_the_image(tmp_path: Path):
    from redline.report.html import render_report

    store = Store(tmp_path / "s.db")
    try:
        config = ScanConfig(model="test.agent:gullible", probes="agent.ImageToolResult", sample=2)
        run_id = await scan(config, store)
        attempts = list(store.iter_attempts(run_id))
        assert len(attempts) == 2
        for attempt in attempts:
            (conversation,) = attempt.conversations
            shown = [t for t in conversation.turns if t.role == "user" and t.content.data_path]
            assert shown and (tmp_path / "s.attachments" / shown[0].content.data_path).is_file()
            sink = attempt.notes["prompt_metadata"]["sink"]
            assert sink in [c.name for c in conversation.tool_calls()]
        html = render_report(store, run_id)
        assert html.count('<img class="attachment" src="data:image/png') == 2  # the tool's image, shown
    finally:
        store.close()
