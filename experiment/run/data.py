"""Datasets read from files: GSM8K JSONL and `{id, question, answer}` task files.

Every item is a `TaskItem(id, question, answer)` with the final answer as a string. GSM8K ids are
`gsm8k-<split>-<line index>`, so they are stable and explicit (EVAL-4).

A spec names data files by path; `resolve_data_path` is the one place such a path is turned into
a file: relative paths are taken from the project root, and the resolved file (symlinks followed)
must be a regular file inside one of the project's data directories (DATA_DIRS, plus any listed in
$RX_DATA_DIRS). Files are read with a size cap (MAX_DATA_FILE_BYTES), never to the end of a stream.
"""

from __future__ import annotations

import functools
import json
import os
import random
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from experiment import PROJECT_ROOT
DEFAULT_GSM8K_DIR = PROJECT_ROOT / "data" / "gsm8k"
# The project's data directories: data/ (GSM8K), the embedded task families, test fixtures.
DATA_DIRS = (PROJECT_ROOT / "data", PROJECT_ROOT / "embedded_tinker" / "tasks" / "data", PROJECT_ROOT / "tests" / "fixtures")
DATA_DIRS_ENV = "RX_DATA_DIRS"  # more allowed directories, separated by os.pathsep
MAX_DATA_FILE_BYTES = 512 * 1024 * 1024  # GSM8K train is 4 MiB; a data file past this is refused
GSM8K_SPLITS = ("train", "test")

T = TypeVar("T")


class DataError(ValueError):
    """A data file that cannot be read as expected. One line naming the file and the problem."""


@dataclass(frozen=True)
class TaskItem:
    id: str
    question: str
    answer: str


def data_dirs() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(DATA_DIRS_ENV, "").split(os.pathsep) if p.strip()]
    return [d.resolve() for d in (*DATA_DIRS, *extra)]


def resolve_data_path(path: str | Path) -> Path:
    """The data file a spec names, checked: a regular file inside a project data directory."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = PROJECT_ROOT / candidate
    resolved = candidate.resolve()
    allowed = data_dirs()
    if not any(resolved.is_relative_to(root) for root in allowed):
        shown = ", ".join(str(d.relative_to(PROJECT_ROOT)) if d.is_relative_to(PROJECT_ROOT) else str(d) for d in allowed)
        raise DataError(f"{path}: outside the project's data directories ({shown}; more via ${DATA_DIRS_ENV})")
    try:
        mode = resolved.stat().st_mode
    except OSError:
        raise DataError(f"{path}: no such file") from None
    if not stat.S_ISREG(mode):
        raise DataError(f"{path}: not a regular file")
    return resolved


def read_capped_bytes(path: str | Path, cap: int | None = None) -> bytes:
    """A data file's bytes, refused past `cap` (default MAX_DATA_FILE_BYTES) and when not a regular file."""
    path = Path(path)
    cap = MAX_DATA_FILE_BYTES if cap is None else cap
    try:
        with open(path, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise DataError(f"{path}: not a regular file")
            if info.st_size > cap:
                raise DataError(f"{path}: larger than the {cap}-byte cap for a data file")
            chunks, total = [], 0
            while total <= cap:  # what is read counts, not what stat said (a file may grow)
                chunk = handle.read(min(1 << 20, cap + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            data = b"".join(chunks)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: not a regular file") from None
    if len(data) > cap:
        raise DataError(f"{path}: larger than the {cap}-byte cap for a data file")
    return data


def read_capped_text(path: str | Path, cap: int | None = None) -> str:
    try:
        return read_capped_bytes(path, cap).decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{path}: not UTF-8 text ({err.reason})") from None


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    rows = []
    for number, line in enumerate(read_capped_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(f"{path}:{number}: not valid JSON ({err.msg})") from None
        if not isinstance(row, dict):
            raise DataError(f"{path}:{number}: each line must be a JSON object")
        rows.append(row)
    return rows


def load_gsm8k(split: str, data_dir: str | Path = DEFAULT_GSM8K_DIR) -> list[TaskItem]:
    """GSM8K `train` or `test` from `<data_dir>/<split>.jsonl`; answer = the text after `####`."""
    if split not in GSM8K_SPLITS:
        raise DataError(f"GSM8K split must be one of {', '.join(GSM8K_SPLITS)} (got {split!r})")
    from tinker_cookbook.recipes.math_rl.math_env import extract_gsm8k_final_answer

    path = Path(data_dir) / f"{split}.jsonl"
    items = []
    for index, row in enumerate(_read_jsonl(path)):
        if "question" not in row or "answer" not in row:
            raise DataError(f"{path}: row {index} lacks 'question' or 'answer'")
        items.append(TaskItem(gsm8k_item_id(split, index), row["question"], extract_gsm8k_final_answer(row["answer"])))
    return items


def gsm8k_item_id(split: str, index: int) -> str:
    return f"gsm8k-{split}-{index}"


def gsm8k_questions(split: str, data_dir: str | Path = DEFAULT_GSM8K_DIR) -> list[tuple[str, str]]:
    """(id, question) of every row as `load_gsm8k` gives them, in file order, without parsing answers (the
    grader loads no cookbook)."""
    if split not in GSM8K_SPLITS:
        raise DataError(f"GSM8K split must be one of {', '.join(GSM8K_SPLITS)} (got {split!r})")
    return [(gsm8k_item_id(split, index), str(row.get("question")))
            for index, row in enumerate(_read_jsonl(Path(data_dir) / f"{split}.jsonl"))]


def gsm8k_item_ids(split: str, data_dir: str | Path = DEFAULT_GSM8K_DIR) -> list[str]:
    """The ids `load_gsm8k` gives, in file order."""
    return [item_id for item_id, _ in gsm8k_questions(split, data_dir)]


def load_task_file(path: str | Path) -> list[TaskItem]:
    """A JSONL file of `{"id", "question", "answer"}` rows (answer kept as a string).

    Read once per file version (path, size, mtime) and size cap: a run's gates ask for the same
    20,000-row training file a dozen times; a rewritten file is read again."""
    path = Path(path)
    try:
        version = path.stat()
    except OSError:
        version = None
    if version is None:
        return list(_parse_task_file(path))  # raises the reader's own error for a missing file
    return list(_parse_task_file_version(str(path.resolve()), version.st_size, version.st_mtime_ns, MAX_DATA_FILE_BYTES))


@functools.lru_cache(maxsize=8)
def _parse_task_file_version(path: str, size: int, mtime_ns: int, cap: int) -> tuple[TaskItem, ...]:
    return _parse_task_file(Path(path))


def _parse_task_file(path: Path) -> tuple[TaskItem, ...]:
    items, seen = [], set()
    for index, row in enumerate(_read_jsonl(path)):
        missing = [key for key in ("id", "question", "answer") if key not in row]
        if missing:
            raise DataError(f"{path}: row {index} lacks {', '.join(missing)}")
        item_id = str(row["id"])
        if item_id in seen:
            raise DataError(f"{path}: duplicate id {item_id!r}")
        seen.add(item_id)
        items.append(TaskItem(item_id, str(row["question"]), str(row["answer"])))
    return tuple(items)


def seeded_shuffle(items: list[T], seed: int = 0) -> list[T]:
    """A new list in a deterministic order for `seed` (the input is not modified)."""
    shuffled = list(items)
    random.Random(seed).shuffle(shuffled)
    return shuffled


def first_n_shuffled(items: list[T], n: int, seed: int = 0) -> list[T]:
    """The first n items after a seeded shuffle, e.g. the 640 GSM8K train problems of the selfgen spec."""
    if n > len(items):
        raise DataError(f"asked for {n} items but only {len(items)} exist")
    return seeded_shuffle(items, seed)[:n]

