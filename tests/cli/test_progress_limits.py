"""The progress line of a scan of a remote model: the requests answered per second lately, and
``provider limiting`` while the provider refuses requests for the rate."""

from __future__ import annotations

import asyncio
import types

from rich.console import Console

from fakes import ScriptedGenerator
from helpers.streams import SignallingStream
from redline.cli import scan_run
from redline.cli.progress import Heartbeat, RateColumn, limiter_note
from redline.engine import ScanConfig
from redline.generators.transport.ratelimit import LimiterStatus


def test_the_note_gives_the_rate_and_says_when_the_provider_is_limiting():
    assert limiter_note(None) == ""
    assert limiter_note(LimiterStatus(rate=None, answered=0.0, limited=False, refused=0)) == ""  # nothing yet
    assert limiter_note(LimiterStatus(rate=None, answered=12.34, limited=False, refused=0)) == "12.3 req/s"
    limited = LimiterStatus(rate=95.0, answered=96.4, limited=True, refused=3)
    assert limiter_note(limited) == "96.4 req/s, provider limiting"


def test_the_heartbeat_line_ends_with_the_note_when_it_says_something():
    now = [1000.0]
    beat = Heartbeat(lambda line: None, 10, clock=lambda: now[0])
    beat.start(0, 400)
    beat.advance(20)
    now[0] += 10
    assert beat.line() == "progress: 20/400 attempts (5%), 2.0 att/s, ETA 3:10"
    said = [""]
    beat.note = lambda: said[0]
    assert beat.line() == "progress: 20/400 attempts (5%), 2.0 att/s, ETA 3:10"
    said[0] = "96.4 req/s, provider limiting"
    assert beat.line() == "progress: 20/400 attempts (5%), 2.0 att/s, ETA 3:10, 96.4 req/s, provider limiting"


def test_the_progress_bar_s_rate_column_ends_with_the_note():
    fields = {"started": 1.0, "initial": 0, "note": lambda: "96.4 req/s, provider limiting"}
    task = types.SimpleNamespace(fields=fields, total=100, completed=20)
    assert str(RateColumn().render(task)).endswith("  96.4 req/s, provider limiting")
    fields["note"] = lambda: ""
    assert "req/s" not in str(RateColumn().render(task))


class LimitedGenerator(ScriptedGenerator):
    """A model whose rate limiter says the provider is limiting; it answers only once a progress
    line has said so."""

    def __init__(self, stream: SignallingStream) -> None:
        super().__init__("I can't help with that.", name="test.limited")
        self.stream = stream
        self.limiter = types.SimpleNamespace(status=lambda: LimiterStatus(40.0, 41.0, True, 7))
        self.unsaid = 0

    async def generate(self, conversation, n=1):
        if not await asyncio.to_thread(self.stream.wait_for, "41.0 req/s, provider limiting"):
            self.unsaid += 1
        return await super().generate(conversation, n)


def test_a_scan_s_progress_line_says_when_the_provider_is_limiting(tmp_path, monkeypatch):
    stream = SignallingStream()
    monkeypatch.setattr(scan_run, "err_console", Console(file=stream, highlight=False, emoji=False, soft_wrap=True))
    model = LimitedGenerator(stream)
    config = ScanConfig(model="test.limited", probes="harmful.Requests", sample=2, concurrency=1, cache=False)
    scan_run.run_scan(
        config, tmp_path / "l.db", resume=None, retry_errors=False, quiet=False, heartbeat=0.01, generator=model
    )
    assert model.unsaid == 0
    lines = [line for line in stream.getvalue().splitlines() if "provider limiting" in line]
    assert lines and all(line.startswith("progress: ") for line in lines)
