"""Stored attachment paths are relative to the store's attachment folder: a store moved with its
folder still shows its images, and a stored path that leads outside the folder is refused."""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

import pytest

from helpers.mock_openai import MockOpenAI
from redline.attachments import AttachmentError, attach, stored_file, stored_image, use_attachment_dir
from redline.attempt import Message
from redline.engine import ScanConfig, scan
from redline.images import render_text, thumbnail_uri
from redline.store import Store

pytest.importorskip("PIL")


@pytest.fixture(autouse=True)
def default_attachments():
    yield
    use_attachment_dir(None)


async def test_a_store_moved_with_its_attachment_folder_still_shows_its_thumbnails(tmp_path: Path) -> None:
    from redline.report.html import render_report

    (tmp_path / "before").mkdir()
    store = Store(tmp_path / "before" / "s.db")
    with MockOpenAI(responder=lambda messages, body: "A receipt.") as server:
        config = ScanConfig(
            model="openai:vision",
            probes="multimodal.ImageTextConflict",
            sample=2,
            generator_options={"base_url": server.base_url},
        )
        run_id = await scan(config, store)
    store.close()
    use_attachment_dir(None)
    shutil.move(tmp_path / "before", tmp_path / "after")
    moved = Store(tmp_path / "after" / "s.db")
    try:
        html = render_report(moved, run_id)
    finally:
        moved.close()
    assert len(re.findall(r'<img class="attachment" src="data:image/png;base64,', html)) == 2


def outside_copy(tmp_path: Path) -> tuple[Path, Message]:
    """An image named by its own sha256 outside the attachment folder, and a message naming it."""
    folder = tmp_path / "s.attachments"
    use_attachment_dir(folder)
    message = attach("p", render_text("inside"), "image/png")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(folder / message.data_path, elsewhere / message.data_path)
    return folder, message


@pytest.mark.parametrize("how", ["absolute", "dot-dot"])
def test_a_stored_path_outside_the_attachment_folder_is_refused_in_one_line(tmp_path: Path, how: str, caplog) -> None:
    folder, message = outside_copy(tmp_path)
    hostile = (
        str(tmp_path / "elsewhere" / message.data_path) if how == "absolute" else f"../elsewhere/{message.data_path}"
    )
    with pytest.raises(AttachmentError) as caught:
        stored_file(hostile, folder)
    assert "\n" not in str(caught.value) and "outside the attachment folder" in str(caught.value)
    forged = Message.from_dict({**message.as_dict(), "data_path": hostile})
    with caplog.at_level(logging.WARNING, logger="redline.attachments"):
        assert stored_image(forged, folder) is None
    assert any("outside the attachment folder" in r.getMessage() for r in caplog.records)
    assert thumbnail_uri(message, stored_image(message, folder)) is not None  # the one inside is shown


def test_a_link_inside_the_folder_that_leads_out_is_refused(tmp_path: Path) -> None:
    folder, message = outside_copy(tmp_path)
    link = folder / f"{'0' * 64}.png"
    link.symlink_to(tmp_path / "elsewhere" / message.data_path)
    with pytest.raises(AttachmentError):
        stored_file(link.name, folder)
