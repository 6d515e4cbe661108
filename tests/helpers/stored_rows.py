"""A store's attempts as raw JSON rows, and what of a row two equal scans must share."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

__all__ = ["comparable", "rows"]


def rows(db: Path) -> dict[str, dict]:
    """Every stored attempt of the file, ``"probe:seq"`` → its JSON (through a connection of its own)."""
    with sqlite3.connect(db) as con:
        return {f"{p}:{s}": json.loads(d) for p, s, d in con.execute("SELECT probe, seq, data FROM attempts")}


def comparable(data: dict) -> tuple:
    """What two scans of the same attempt must agree on: outputs, scores, judgments, status."""
    return (
        [o["text"] for o in data["outputs"]],
        data["detector_results"],
        data["notes"].get("evaluation"),
        data["status"],
    )
