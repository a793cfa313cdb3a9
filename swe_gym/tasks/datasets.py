"""Raw rows from where datasets live: the Hugging Face hub cache, `save_to_disk` folders, JSON/JSONL/Parquet files.

Every reader returns ``(row, where)`` pairs; ``where`` names the source and the row
(``file.jsonl:3``, ``file.parquet[2]``, ``princeton-nlp/SWE-bench_Lite[test][7]``) so
that a bad row can be reported exactly. Turning rows into tasks is the families' job
(`swe_gym.tasks.families.convert`).

Hugging Face datasets are read with the optional ``datasets`` library
(``pip install 'swe_gym[datasets]'``), imported only when needed. It honours
``HF_HOME``, ``HF_DATASETS_CACHE`` and offline mode (``HF_DATASETS_OFFLINE=1`` or
``HF_HUB_OFFLINE=1``): a dataset loaded once with network is read from the cache
afterwards. A folder made by ``Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``,
or a dataset repository downloaded as files (``huggingface-cli download --repo-type
dataset NAME --local-dir DIR``), is read from disk.

>>> is_hub_name("princeton-nlp/SWE-bench_Verified"), is_hub_name("tasks.jsonl")
(True, False)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from swe_gym.errors import TaskError
from swe_gym.jsonl import BadLine, json_document, json_lines

Row = tuple[Any, str]
"""A raw row and where it came from (source and row number)."""

FILE_SUFFIXES = (".json", ".jsonl", ".parquet")
INSTALL_HINT = "pip install 'swe_gym[datasets]'"
_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def is_hub_name(text: str) -> bool:
    """Whether ``text`` reads as a Hugging Face dataset id (``owner/name``) rather than a file name."""
    return bool(_HUB_NAME.match(text)) and not text.endswith(FILE_SUFFIXES)


def read_rows(source: str | Path, *, split: str = "test") -> list[Row]:
    """Rows of a local file or folder, or of a Hugging Face dataset given by name.

    A string that names no existing file and reads as ``owner/name`` is a Hugging Face
    dataset; ``split`` picks its split (``datasets`` split syntax such as ``"test[:10]"``
    works there). Files have no splits; a ``save_to_disk`` folder of several splits uses
    ``split``.
    """
    path = Path(source)
    if path.exists():
        if path.is_dir():
            return _read_folder(path, split)
        if path.suffix == ".parquet":
            return _read_parquet(path)
        return _read_json(path)
    if isinstance(source, str) and "@" in source and not source.endswith(FILE_SUFFIXES):
        raise TaskError(
            f"{source!r} reads as a Harbor dataset name (name@version), which only Harbor's online registry "
            f"resolves: download it with the harbor CLI (`harbor datasets download {source} -o DIR`) and pass DIR"
        )
    if isinstance(source, str) and is_hub_name(source):
        return read_hub(source, split=split)
    raise TaskError(
        f"task file {path} does not exist (a task source is 'bundled', a .json/.jsonl/.parquet file, "
        "a datasets folder, a Harbor task directory or a folder of them, or a Hugging Face dataset name such as "
        "princeton-nlp/SWE-bench_Verified)"
    )


def read_hub(name: str, *, split: str = "test") -> list[Row]:
    """Rows of split ``split`` of Hugging Face dataset ``name``: from the hub, or offline from the local cache."""
    datasets = _import_datasets(f"reading the Hugging Face dataset {name}")
    try:
        data = datasets.load_dataset(name, split=split)
    except OSError as exc:  # ConnectionError, DatasetNotFoundError, FileNotFoundError
        raise TaskError(
            f"cannot load Hugging Face dataset {name!r} (split {split!r}): {exc}. It is not in the local "
            "cache and the hub cannot be reached (or offline mode is on). On a machine with network either "
            f"fill the cache: python -c \"import datasets; datasets.load_dataset('{name}')\" (then copy "
            f"$HF_HOME here), or save a copy: datasets.load_dataset('{name}').save_to_disk(DIR), or "
            f"huggingface-cli download --repo-type dataset {name} --local-dir DIR, or export the rows to "
            "JSONL; then pass DIR (or the file) instead of the name"
        ) from exc
    except Exception as exc:  # an unknown split, a broken cache, ...
        raise TaskError(f"cannot load Hugging Face dataset {name!r} (split {split!r}): {exc}") from exc
    return _numbered(data, f"{name}[{split}]")


def _read_folder(path: Path, split: str) -> list[Row]:
    """A ``save_to_disk`` folder, or a dataset repository's files (``data/test-*.parquet``, ...)."""
    datasets = _import_datasets(f"reading the dataset folder {path}")
    saved = any((path / marker).is_file() for marker in ("dataset_dict.json", "state.json"))
    try:
        data = datasets.load_from_disk(str(path)) if saved else datasets.load_dataset(str(path), split=split)
    except Exception as exc:
        raise TaskError(f"{path}: not a readable dataset folder ({exc})") from exc
    if isinstance(data, datasets.DatasetDict):
        if split not in data:
            raise TaskError(f"{path}: no split {split!r} (splits: {', '.join(sorted(data))})")
        data = data[split]
        return _numbered(data, f"{path}[{split}]")
    return _numbered(data, str(path))


def _read_parquet(path: Path) -> list[Row]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise TaskError(f"reading {path} needs pyarrow: {INSTALL_HINT} (or pip install pyarrow)") from None
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:
        raise TaskError(f"{path}: not a readable Parquet file ({exc})") from None
    return _numbered(rows, str(path))


def _read_json(path: Path) -> list[Row]:
    if path.suffix == ".jsonl":
        rows = []
        for number, value in json_lines(path):
            if isinstance(value, BadLine):
                raise TaskError(f"{path}:{number}: {value.reason}")
            rows.append((value, f"{path}:{number}"))
        return rows
    data = json_document(path)
    if isinstance(data, BadLine):
        raise TaskError(f"{path}: {data.reason}")
    data = data.get("tasks", data) if isinstance(data, dict) else data
    return _numbered(data if isinstance(data, list) else [data], str(path))


def _numbered(rows: Iterable[Any], where: str) -> list[Row]:
    return [(row, f"{where}[{i}]") for i, row in enumerate(rows)]


def _import_datasets(purpose: str) -> Any:
    try:
        import datasets
    except ImportError:
        raise TaskError(f"{purpose} needs the `datasets` library: {INSTALL_HINT}") from None
    return datasets


__all__ = ["FILE_SUFFIXES", "Row", "is_hub_name", "read_hub", "read_rows"]
