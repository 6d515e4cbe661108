"""Prompts from the user's own data: a CSV / TSV / JSONL / JSON / Parquet file, a Hugging Face
dataset saved with ``save_to_disk`` (or a local folder of data files), or ``hf:NAME[:SPLIT]`` for a
dataset in the local Hugging Face cache.

The column mapping says which column feeds which field (``--dataset-column prompt=goal``):

* ``prompt`` (required; default column ``prompt``) — the text sent to the model, or the request
  a template probe wraps;
* ``target`` (optional) — a string detectors look for (``Attempt.targets``);
* ``category`` (optional) — a label kept in the prompt metadata (per-category breakdowns);
* ``system`` (optional) — a system prompt sent before the prompt.

Every problem is one :class:`DatasetError` line naming the file (and line or column). ``datasets``
and ``pyarrow`` are imported only when such a source is used.

A dataset may come from anyone, so a file is read within bounds (:mod:`redline.untrusted`): at most
:data:`MAX_DATASET_BYTES` (for Parquet: of data once decompressed and decoded), one value (a CSV
field) or one JSONL line at most :data:`MAX_VALUE_BYTES`, UTF-8 text without NUL bytes, JSON
nested at most 64 levels. A larger dataset is better sampled or split before a scan.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline import hub
from redline.errors import RedlineError
from redline.untrusted import (
    MIB,
    NotJSONObjectError,
    UntrustedInputError,
    csv_field_limit,
    csv_lines,
    describe_size,
    json_object_lines,
    load_json,
    read_text,
)

__all__ = [
    "FIELDS",
    "MAX_DATASET_BYTES",
    "MAX_JSON_BYTES",
    "MAX_ROWS",
    "MAX_VALUE_BYTES",
    "DatasetError",
    "DatasetRow",
    "hub_cache_dir",
    "hub_dataset_files",
    "load_rows",
    "parse_columns",
    "read_table",
]

#: The fields a column can be mapped to.
FIELDS = ("prompt", "target", "category", "system")


class DatasetError(RedlineError, ValueError):
    """A dataset that cannot be used (missing file, missing column, empty, unreadable)."""


MAX_DATASET_BYTES = 256 * MIB
"""The largest dataset file read (Parquet: its data once decompressed and decoded). A quarter of a
million prompts of a kilobyte each, more than a scan sends."""

MAX_JSON_BYTES = 64 * MIB
"""The largest ``.json`` dataset: one document, parsed whole (JSONL is read a line at a time)."""

MAX_VALUE_BYTES = 16 * MIB
"""The largest single value: a CSV field or a JSONL line (the ``csv`` module's own default is
128 KiB; a long many-shot prompt is a few hundred)."""

MAX_ROWS = 1_000_000
"""The most rows a dataset may have."""


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


def _too_many_rows(path: Path) -> DatasetError:
    return DatasetError(f"{path}: too many rows (more than {MAX_ROWS:,}; sample or split the dataset)")


def _kept(row: Mapping[str, Any], wanted: Iterable[str]) -> dict[str, Any]:
    """The cells of ``row`` a column mapping reads, a list cut to its first item (all that is
    used of it): what is kept of each row, whatever else the file holds."""
    kept = {}
    for name in wanted:
        if name in row:
            value = row[name]
            kept[name] = value[:1] if isinstance(value, list) else value
    return kept


def _read_csv(path: Path, delimiter: str, wanted: Iterable[str]) -> tuple[list[str], list[dict[str, Any]]]:
    lines = csv_lines(path, max_line=MAX_VALUE_BYTES, max_file=MAX_DATASET_BYTES)
    reader = csv.reader(lines, delimiter=delimiter)
    rows: list[dict[str, Any]] = []
    try:
        with csv_field_limit(MAX_VALUE_BYTES):
            names = next(reader, [])
            index = {name: i for i, name in enumerate(names)}  # a repeated header: its last column
            positions = {name: index[name] for name in dict.fromkeys(wanted) if name in index}
            for cells in reader:
                if not cells:  # a blank line
                    continue
                if len(rows) >= MAX_ROWS:
                    raise _too_many_rows(path)
                rows.append({name: cells[i] if i < len(cells) else None for name, i in positions.items()})
    except csv.Error as exc:
        problem = str(exc)
        if "field limit" in problem:
            problem = f"a field is too large (more than {describe_size(MAX_VALUE_BYTES)})"
        raise DatasetError(f"{path}: line {reader.line_num}: {problem}") from None
    return names, rows


def _read_jsonl(path: Path, wanted: Iterable[str]) -> tuple[list[str], list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = []
    names: dict[str, None] = {}
    try:
        for _, value in json_object_lines(path, max_line=MAX_VALUE_BYTES, max_file=MAX_DATASET_BYTES):
            if len(rows) >= MAX_ROWS:
                raise _too_many_rows(path)
            names.update(dict.fromkeys(value))
            rows.append(_kept(value, wanted))
    except NotJSONObjectError as exc:  # worded "line 2 is ..."; other refusals are worded by _read_source
        raise DatasetError(f"{path}: line {exc.line} is {exc.problem}") from None
    return list(names), rows


def _read_json(path: Path, wanted: Iterable[str]) -> tuple[list[str], list[dict[str, Any]]]:
    try:
        value = load_json(read_text(path, MAX_JSON_BYTES, nul_ok=True))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if isinstance(value, dict):  # {"data": [...]} or {"train": [...]}: the first list of objects
        value = next((v for v in value.values() if isinstance(v, list)), None)
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise DatasetError(f"{path}: expected a JSON list of objects")
    if len(value) > MAX_ROWS:
        raise _too_many_rows(path)
    names: dict[str, None] = {}
    for row in value:
        names.update(dict.fromkeys(row))
    return list(names), [_kept(row, wanted) for row in value]


#: Rows of a Parquet file decoded at a time: the decoded size is counted batch by batch.
_PARQUET_BATCH_ROWS = 1024

#: Bytes one value of each Parquet physical type takes at least once decoded (a text value: its
#: offset or dictionary index; a fixed-length one: its declared length, read from the schema).
_PARQUET_VALUE_BYTES = {"BOOLEAN": 1, "INT32": 4, "FLOAT": 4, "INT64": 8, "DOUBLE": 8, "INT96": 12, "BYTE_ARRAY": 4}


def _decoded_size(array: Any) -> int:
    """Bytes the values of the Arrow ``array`` stand for once decoded: a dictionary-encoded text
    counted once for each time it is used, the items of lists and the fields of structs included."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_dictionary(kind):
        values = array.dictionary
        if _is_text_type(values.type):
            used = pc.sum(pc.take(pc.binary_length(values), array.indices)).as_py() or 0
            return int(used) + array.indices.nbytes
        return array.indices.nbytes + len(array) * values.nbytes  # (not made by a Parquet reader)
    if _is_text_type(kind):
        return int(pc.sum(pc.binary_length(array)).as_py() or 0) + 4 * len(array)
    if pa.types.is_map(kind):
        return 4 * len(array) + _decoded_size(array.keys) + _decoded_size(array.items)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return 4 * len(array) + _decoded_size(array.flatten())
    if pa.types.is_struct(kind):
        return len(array) + sum(_decoded_size(field) for field in array.flatten())
    return int(array.nbytes)


def _is_text_type(kind: Any) -> bool:
    import pyarrow as pa

    checks = (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary, pa.types.is_large_binary)
    return any(check(kind) for check in checks)


def _read_parquet(path: Path, wanted: Iterable[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """The column names of a Parquet file and its rows (only the ``wanted`` columns it has).

    Bounded before anything large is built: the file's declared rows, uncompressed size and the
    least its read columns' values take once decoded; then, a batch of rows at a time, the size of
    what they decode to, counted on the text columns read as dictionaries (nested ones included),
    so that a small file whose one long value is repeated a million times is refused before the
    repetitions are made."""
    try:
        import pyarrow as pa  # heavy: loaded only for a Parquet file
        import pyarrow.parquet as pq
    except ImportError:
        raise DatasetError(f"{path}: reading Parquet needs pyarrow (pip install 'redline[datasets]')") from None
    too_large = DatasetError(f"{path}: too large (more than {describe_size(MAX_DATASET_BYTES)} of data once decoded)")
    try:
        file = pq.ParquetFile(path)
        meta = file.metadata
        declared = sum(
            meta.row_group(g).column(c).total_uncompressed_size
            for g in range(meta.num_row_groups)
            for c in range(meta.num_columns)
        )
        if declared > MAX_DATASET_BYTES:
            raise too_large
        if meta.num_rows > MAX_ROWS:
            raise _too_many_rows(path)
        names = list(file.schema_arrow.names)
        columns = [name for name in dict.fromkeys(wanted) if name in names]
        if not columns:
            return names, [{} for _ in range(meta.num_rows)]
        leaves = [
            (index, leaf)
            for index, leaf in ((i, meta.schema.column(i)) for i in range(meta.num_columns))
            if any(leaf.path == name or leaf.path.startswith(name + ".") for name in columns)
        ]
        least = 0  # the least the read columns' values take once decoded, as the file declares them
        for index, leaf in leaves:
            width = leaf.length if leaf.physical_type == "FIXED_LEN_BYTE_ARRAY" else None
            width = max(1, width or _PARQUET_VALUE_BYTES.get(leaf.physical_type, 1))
            least += width * sum(meta.row_group(g).column(index).num_values for g in range(meta.num_row_groups))
        if least > MAX_DATASET_BYTES:
            raise too_large
        texts = [leaf.path for _, leaf in leaves if leaf.physical_type == "BYTE_ARRAY"]
        reader = pq.ParquetFile(path, read_dictionary=texts) if texts else file
        rows: list[dict[str, Any]] = []
        size = 0
        for batch in reader.iter_batches(batch_size=_PARQUET_BATCH_ROWS, columns=columns, use_threads=False):
            size += sum(_decoded_size(column) for column in batch.columns)
            if size > MAX_DATASET_BYTES:
                raise too_large
            rows.extend(_kept(row, columns) for row in batch.to_pylist())
    except DatasetError:
        raise
    except (pa.ArrowException, OSError, ValueError, TypeError, IndexError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatasetError(f"{path}: not a readable Parquet file ({first})") from None
    return names, rows


def _from_hf(dataset: Any, where: str, wanted: Iterable[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """Rows of a ``datasets.Dataset`` (or the ``train``/only split of a ``DatasetDict``), only the
    ``wanted`` columns."""
    if isinstance(dataset, dict):  # a DatasetDict
        splits = list(dataset.keys())
        if not splits:
            raise DatasetError(f"{where}: the dataset has no splits")
        split = "train" if "train" in splits else splits[0]
        if len(splits) > 1 and split != "train":
            raise DatasetError(f"{where}: several splits ({', '.join(splits)}); name one as hf:NAME:SPLIT")
        dataset = dataset[split]
    if len(dataset) > MAX_ROWS:
        raise _too_many_rows(Path(where))
    names = list(dataset.column_names)
    kept = [name for name in dict.fromkeys(wanted) if name in names]
    return names, [_kept(row, kept) for row in dataset.select_columns(kept)]


def _import_datasets(where: str) -> Any:
    try:
        import datasets  # optional extra, heavy: loaded only for a saved or hub dataset
    except ImportError:
        raise DatasetError(
            f"{where}: reading it needs the 'datasets' package (pip install 'redline[datasets]')"
        ) from None
    datasets.logging.set_verbosity_error()
    return datasets


#: The most entries of a dataset folder looked at for one that is not a regular file.
_FOLDER_ENTRIES = 100_000


def _irregular(path: Path) -> Path | None:
    """``path``, or the first entry of the folder ``path``, that is neither a regular file nor a
    folder (links followed to what they name): a FIFO would block the reader that opens it and a
    device would never end. ``None`` when there is none (a folder past :data:`_FOLDER_ENTRIES`
    entries is not looked at further)."""
    if not path.is_dir():
        return None if path.is_file() else path
    seen = 0
    for folder, subfolders, files in os.walk(path):
        for name in files:
            entry = Path(folder) / name
            if entry.exists() and not entry.is_file() and not entry.is_dir():  # (a broken link: left to the reader)
                return entry
        seen += len(files) + len(subfolders)
        if seen > _FOLDER_ENTRIES:
            break
    return None


def _read_source(source: str, wanted: Iterable[str] = ()) -> tuple[list[str], list[dict[str, Any]]]:
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
        return _from_hf(loaded, source, wanted)
    path = Path(source).expanduser()
    if not path.exists():
        raise DatasetError(f"{source}: no such dataset file or folder")
    irregular = _irregular(path)
    if irregular is not None:
        where = source if irregular == path else f"{source}: {irregular.relative_to(path)}"
        raise DatasetError(f"{where}: not a regular file (a FIFO, device or socket is not read as a dataset)")
    if path.is_dir():
        datasets = _import_datasets(source)
        saved = any((path / f).exists() for f in ("dataset_info.json", "state.json", "dataset_dict.json"))
        try:
            loaded = datasets.load_from_disk(str(path)) if saved else datasets.load_dataset(str(path))
        except Exception as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DatasetError(f"{source}: cannot load the dataset folder: {message}") from None
        return _from_hf(loaded, source, wanted)
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            return _read_csv(path, ",", wanted)
        if suffix == ".tsv":
            return _read_csv(path, "\t", wanted)
        if suffix in (".jsonl", ".ndjson"):
            return _read_jsonl(path, wanted)
        if suffix == ".json":
            return _read_json(path, wanted)
        if suffix == ".parquet":
            return _read_parquet(path, wanted)
    except UntrustedInputError as exc:  # too large, not UTF-8, a NUL byte, nested too deeply
        raise DatasetError(f"{path}: {exc}") from None
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    raise DatasetError(
        f"{source}: unknown dataset format {suffix or '(no suffix)'!r} (use .csv, .tsv, .jsonl, .json, .parquet, a saved dataset folder or hf:NAME)"
    )


_LISTED = 30  # column names a message lists at most


def read_table(source: str | Path, wanted: Iterable[str] = ()) -> tuple[list[str], list[dict[str, Any]]]:
    """The column names of ``source`` (any form :func:`load_rows` reads) and its rows, each with
    only the ``wanted`` columns it has, read within the same bounds. For readers that know a
    file's own column names (the benchmark probes); raises :class:`DatasetError` naming it."""
    return _read_source(str(source), tuple(wanted))


def hub_cache_dir() -> Path:
    """The local Hugging Face hub cache, where ``huggingface-cli download`` and
    ``datasets.load_dataset`` keep a repository's files: ``$HF_HUB_CACHE``, else
    ``$HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``."""
    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return Path(os.environ[variable]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    base = (
        Path(os.environ["XDG_CACHE_HOME"]).expanduser() if os.environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    )
    return base / "huggingface" / "hub"


def hub_dataset_files(repo: str, patterns: Iterable[str]) -> tuple[str, list[Path]] | None:
    """The files of dataset repository ``repo`` (``owner/name``) in the local hub cache that
    match ``patterns`` (globs relative to the repository root, e.g. ``data/*.parquet``), in
    pattern then name order, with the revision they come from; ``None`` when the cache holds
    none. Reads the cache's own layout (``datasets--OWNER--NAME/refs/main`` names the snapshot
    under ``snapshots/``; without it, the newest snapshot), so nothing is downloaded and no
    optional package is needed."""
    root = hub_cache_dir() / ("datasets--" + repo.replace("/", "--"))
    snapshots = root / "snapshots"
    try:
        revision = (root / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        revision = ""
    # a commit hash (or a tag name): never a path that could leave the cache
    snapshot = snapshots / revision if re.fullmatch(r"[0-9A-Za-z_-][0-9A-Za-z._-]*", revision) else None
    try:
        if snapshot is None or not snapshot.is_dir():
            found = sorted((d for d in snapshots.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime)
            if not found:
                return None
            snapshot = found[-1]
        files: list[Path] = []
        for pattern in patterns:
            files.extend(f for f in sorted(snapshot.glob(pattern)) if f.is_file() and f not in files)
    except OSError:
        return None
    return (f"{repo}@{snapshot.name}", files) if files else None


def _cell(value: Any, first_of_list: bool = False) -> Any:
    """A cell as read, or with ``first_of_list`` a list's first item (e.g. the first of several
    targets; None for an empty list)."""
    if first_of_list and isinstance(value, (list, tuple)):
        return value[0] if value else None
    return value


def _not_text(value: Any) -> str | None:
    """What a cell holds when it cannot be taken as text ("a list", "an object"); None when it can."""
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return None


def _text(value: Any) -> str | None:
    """The stripped text of a cell that holds text or a number (None for an empty one)."""
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
    names, raw_rows = _read_source(source, tuple(mapping.values()))
    for name, column in mapping.items():
        if column not in names:
            hint = (
                " (map it with --dataset-column prompt=COLUMN)"
                if name == "prompt" and "prompt" not in (columns or {})
                else ""
            )
            shown = ", ".join(map(str, names[:_LISTED])) + (
                f", ... ({len(names)} in all)" if len(names) > _LISTED else ""
            )
            raise DatasetError(f"{source}: no column {column!r} for {name} (columns: {shown or 'none'}){hint}")
    rows = []
    for index, raw in enumerate(raw_rows):
        cells: dict[str, str | None] = {}
        for name, column in mapping.items():
            value = _cell(raw.get(column), first_of_list=name in ("target", "category"))
            kind = _not_text(value)
            if kind is not None:
                raise DatasetError(f"{source}: row {index + 1}: the {column!r} column ({name}) holds {kind}, not text")
            cells[name] = _text(value)
        prompt = cells["prompt"]
        if prompt is None:
            continue
        rows.append(
            DatasetRow(
                index=index,
                prompt=prompt,
                target=cells.get("target"),
                category=cells.get("category"),
                system=cells.get("system"),
            )
        )
    if not rows:
        raise DatasetError(f"{source}: no rows with a non-empty {mapping['prompt']!r} column")
    return rows
