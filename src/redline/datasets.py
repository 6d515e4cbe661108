"""Prompts from the user's own data: a CSV / TSV / JSONL / JSON / Parquet file, a Hugging Face
dataset saved with ``save_to_disk`` (or a local folder of data files), or ``hf:NAME[:SPLIT]`` for a
dataset in the local Hugging Face cache.

The column mapping says which column feeds which field (``--dataset-column prompt=goal``):

* ``prompt`` (required; default column ``prompt``) — the text sent to the model, or the request
  a template probe wraps;
* ``target`` (optional) — a string detectors look for (``Attempt.targets``);
* ``category`` (optional) — a label kept in the prompt metadata (per-category breakdowns);
* ``system`` (optional) — a system prompt sent before the prompt.

Every problem is one :class:`DatasetError` line naming the file (and column). ``datasets`` and
``pyarrow`` are imported only when such a source is used.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline import hub
from redline.errors import RedlineError

__all__ = ["FIELDS", "DatasetError", "DatasetRow", "load_rows", "parse_columns"]

#: The fields a column can be mapped to.
FIELDS = ("prompt", "target", "category", "system")


class DatasetError(RedlineError, ValueError):
    """A dataset that cannot be used (missing file, missing column, empty, unreadable)."""


@dataclass(frozen=True)
class DatasetRow:
    """One usable row: the prompt and the optional fields, plus its row number (0-based)."""

    index: int
    prompt: str
    target: str | None = None
    category: str | None = None
    system: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def parse_columns(items: Iterable[str]) -> dict[str, str]:
    """``["prompt=goal", "target=target"]`` → ``{"prompt": "goal", "target": "target"}``.

    Raises :class:`DatasetError` for an item that is not ``FIELD=COLUMN`` or names an unknown field.
    """
    mapping: dict[str, str] = {}
    for item in items:
        name, sep, column = item.partition("=")
        name, column = name.strip(), column.strip()
        if not sep or not name or not column:
            raise DatasetError(f"--dataset-column {item!r}: expected FIELD=COLUMN, e.g. prompt=goal")
        if name not in FIELDS:
            raise DatasetError(f"--dataset-column {item!r}: unknown field {name!r} (fields: {', '.join(FIELDS)})")
        mapping[name] = column
    return mapping


def _read_csv(path: Path, delimiter: str) -> tuple[list[str], list[dict[str, Any]]]:
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def _read_jsonl(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}: line {number} is not valid JSON ({exc.msg})") from None
            if not isinstance(value, dict):
                raise DatasetError(f"{path}: line {number} is not a JSON object")
            rows.append(value)
    return _columns_of(rows), rows


def _read_json(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if isinstance(value, dict):  # {"data": [...]} or {"train": [...]}: the first list of objects
        value = next((v for v in value.values() if isinstance(v, list)), None)
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise DatasetError(f"{path}: expected a JSON list of objects")
    return _columns_of(value), value


def _columns_of(rows: list[dict[str, Any]]) -> list[str]:
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    return columns


def _from_hf(dataset: Any, where: str) -> tuple[list[str], list[dict[str, Any]]]:
    """Rows of a ``datasets.Dataset`` (or the ``train``/only split of a ``DatasetDict``)."""
    if isinstance(dataset, dict):  # a DatasetDict
        splits = list(dataset.keys())
        if not splits:
            raise DatasetError(f"{where}: the dataset has no splits")
        split = "train" if "train" in splits else splits[0]
        if len(splits) > 1 and split != "train":
            raise DatasetError(f"{where}: several splits ({', '.join(splits)}); name one as hf:NAME:SPLIT")
        dataset = dataset[split]
    return list(dataset.column_names), [dict(row) for row in dataset]


def _import_datasets(where: str) -> Any:
    try:
        import datasets  # optional extra, heavy: loaded only for a saved or hub dataset
    except ImportError:
        raise DatasetError(
            f"{where}: reading it needs the 'datasets' package (pip install 'redline[datasets]')"
        ) from None
    datasets.logging.set_verbosity_error()
    return datasets


def _read_source(source: str) -> tuple[list[str], list[dict[str, Any]]]:
    if source.startswith("hf:"):
        name, _, split = source[3:].partition(":")
        if not name:
            raise DatasetError(f"{source}: expected hf:NAME or hf:NAME:SPLIT")

        offline = not hub.hub_reachable()
        if offline:  # only the local cache can answer: say so at once instead of retrying for long
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        datasets = _import_datasets(source)
        if offline:  # already imported before the variables were set: tell the libraries directly
            import huggingface_hub.constants

            # Modules whose attributes vary between library versions: checked with hasattr.
            modules: tuple[Any, ...] = (getattr(datasets, "config", None), huggingface_hub.constants)
            for module in modules:
                if module is not None and hasattr(module, "HF_HUB_OFFLINE"):
                    module.HF_HUB_OFFLINE = True
        try:
            loaded = datasets.load_dataset(name, split=split or None)
        except Exception as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            hint = " (the Hugging Face hub cannot be reached: only datasets in the local cache load)" if offline else ""
            raise DatasetError(f"{source}: cannot load the dataset: {message}{hint}") from None
        return _from_hf(loaded, source)
    path = Path(source).expanduser()
    if not path.exists():
        raise DatasetError(f"{source}: no such dataset file or folder")
    if path.is_dir():
        datasets = _import_datasets(source)
        saved = any((path / f).exists() for f in ("dataset_info.json", "state.json", "dataset_dict.json"))
        try:
            loaded = datasets.load_from_disk(str(path)) if saved else datasets.load_dataset(str(path))
        except Exception as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DatasetError(f"{source}: cannot load the dataset folder: {message}") from None
        return _from_hf(loaded, source)
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            return _read_csv(path, ",")
        if suffix == ".tsv":
            return _read_csv(path, "\t")
        if suffix in (".jsonl", ".ndjson"):
            return _read_jsonl(path)
        if suffix == ".json":
            return _read_json(path)
        if suffix == ".parquet":
            try:
                import pyarrow.parquet as pq  # heavy: loaded only for a Parquet file
            except ImportError:
                raise DatasetError(
                    f"{source}: reading Parquet needs pyarrow (pip install 'redline[datasets]')"
                ) from None
            table = pq.read_table(path)
            return list(table.column_names), table.to_pylist()
    except UnicodeDecodeError:
        raise DatasetError(f"{source}: not UTF-8 text") from None
    except OSError as exc:
        raise DatasetError(f"{source}: cannot read it: {exc.strerror or exc}") from None
    raise DatasetError(
        f"{source}: unknown dataset format {suffix or '(no suffix)'!r} (use .csv, .tsv, .jsonl, .json, .parquet, a saved dataset folder or hf:NAME)"
    )


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):  # e.g. a list of targets: keep the first
        value = value[0] if value else None
        if value is None:
            return None
    text = str(value).strip()
    return text or None


def load_rows(source: str | Path, columns: Mapping[str, str] | None = None) -> list[DatasetRow]:
    """Read ``source`` and map its columns (``{"prompt": "goal", ...}``; ``prompt`` defaults to
    the column ``prompt``). Rows whose prompt is empty are skipped.

    Raises :class:`DatasetError` naming the source for a missing file, an unreadable or empty
    dataset, an unknown field, or a mapped column the dataset does not have (listing those it has).
    """
    source = str(source)
    mapping = dict(columns or {})
    for name in mapping:
        if name not in FIELDS:
            raise DatasetError(f"{source}: unknown field {name!r} in the column mapping (fields: {', '.join(FIELDS)})")
    mapping.setdefault("prompt", "prompt")
    names, raw_rows = _read_source(source)
    for name, column in mapping.items():
        if column not in names:
            hint = (
                " (map it with --dataset-column prompt=COLUMN)"
                if name == "prompt" and "prompt" not in (columns or {})
                else ""
            )
            raise DatasetError(
                f"{source}: no column {column!r} for {name} (columns: {', '.join(map(str, names)) or 'none'}){hint}"
            )
    rows = []
    for index, raw in enumerate(raw_rows):
        prompt = _text(raw.get(mapping["prompt"]))
        if prompt is None:
            continue
        rows.append(
            DatasetRow(
                index=index,
                prompt=prompt,
                target=_text(raw.get(mapping["target"])) if "target" in mapping else None,
                category=_text(raw.get(mapping["category"])) if "category" in mapping else None,
                system=_text(raw.get(mapping["system"])) if "system" in mapping else None,
            )
        )
    if not rows:
        raise DatasetError(f"{source}: no rows with a non-empty {mapping['prompt']!r} column")
    return rows
