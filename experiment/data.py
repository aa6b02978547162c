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
from collections.abc import Iterator
from typing import Any, TypeVar

from experiment import PROJECT_ROOT
DEFAULT_GSM8K_DIR = PROJECT_ROOT / "data" / "gsm8k"
# The project's data directories: data/ (GSM8K), the embedded task families, test fixtures.
DATA_DIRS = (PROJECT_ROOT / "data", PROJECT_ROOT / "embedded_tinker" / "tasks" / "data", PROJECT_ROOT / "tests" / "fixtures")
DATA_DIRS_ENV = "RX_DATA_DIRS"  # more allowed directories, separated by os.pathsep
MAX_DATA_FILE_BYTES = 512 * 1024 * 1024  # GSM8K train is 4 MiB; a data file past this is refused
GSM8K_SPLITS = ("train", "test")
MAX_DATA_LINE_BYTES = 1024 * 1024  # one row of a JSONL data file (a GSM8K row is under 2 KiB)
MAX_DATA_DEPTH = 16  # a row's nesting (a chat row: row -> messages -> message -> content is 3)

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
    return list(jsonl_rows(path))


def jsonl_rows(path: str | Path, cap: int | None = None) -> Iterator[dict]:
    """The JSON objects of a JSONL file, one line at a time (memory: one line, at most MAX_DATA_LINE_BYTES),
    refused with one line naming the file (and line) when it is past `cap`, binary, not UTF-8, not JSON,
    not an object or nested deeper than MAX_DATA_DEPTH."""
    path = Path(path)
    cap = MAX_DATA_FILE_BYTES if cap is None else cap
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: not a regular file") from None
    with handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise DataError(f"{path}: not a regular file")
        if info.st_size > cap:
            raise DataError(f"{path}: larger than the {cap}-byte cap for a data file")
        total = 0
        for number, raw in enumerate(iter(lambda: handle.readline(MAX_DATA_LINE_BYTES + 1), b""), start=1):
            total += len(raw)  # what is read counts, not what stat said (a file may grow)
            if total > cap:
                raise DataError(f"{path}: larger than the {cap}-byte cap for a data file")
            if len(raw) > MAX_DATA_LINE_BYTES and not raw.endswith(b"\n"):
                raise DataError(f"{path}:{number}: a line longer than {MAX_DATA_LINE_BYTES} bytes (one row a line)")
            if b"\0" in raw:
                raise DataError(f"{path}:{number}: binary data (a NUL byte), not JSONL text")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataError(f"{path}:{number}: not UTF-8 text ({err.reason})") from None
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}:{number}: not valid JSON ({err.msg})") from None
            except RecursionError:
                raise DataError(f"{path}:{number}: nested deeper than {MAX_DATA_DEPTH} levels") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{number}: each line must be a JSON object")
            if _depth(row) > MAX_DATA_DEPTH:
                raise DataError(f"{path}:{number}: nested deeper than {MAX_DATA_DEPTH} levels")
            yield row


def _depth(value: object, limit: int = MAX_DATA_DEPTH) -> int:
    """How many levels of objects and lists a JSON value nests (a flat row: 1), counted up to limit + 1."""
    depth, level = 0, [value]
    while depth <= limit:
        containers = [each for each in level if isinstance(each, (dict, list))]
        if not containers:
            break
        depth += 1
        level = [child for each in containers for child in (each.values() if isinstance(each, dict) else each)]
    return depth


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
        item = task_item(path, index, row)
        if item.id in seen:
            raise DataError(f"{path}: duplicate id {item.id!r}")
        seen.add(item.id)
        items.append(item)
    return tuple(items)


def task_item(path: Path, index: int, row: dict) -> TaskItem:
    """One `{id, question, answer}` row: id a string or integer, question a string, answer a string or number."""
    missing = [key for key in ("id", "question", "answer") if key not in row]
    if missing:
        raise DataError(f"{path}: row {index} lacks {', '.join(missing)}")
    kinds = {"id": (str, int), "question": (str,), "answer": (str, int, float)}
    for key, allowed in kinds.items():
        if isinstance(row[key], bool) or not isinstance(row[key], allowed):
            raise DataError(f"{path}: row {index} {key} must be {' or '.join(_KIND_NAMES[k] for k in allowed)} "
                            f"(got {type(row[key]).__name__})")
    return TaskItem(str(row["id"]), row["question"], str(row["answer"]))


_KIND_NAMES = {str: "a string", int: "an integer", float: "a number"}


def count_task_file(path: str | Path) -> int:
    """The items of a task file, every row checked as `load_task_file` checks it (ids unique), read one line at
    a time: intake checks a file this way without holding its items (memory: its ids). Counted once per file
    version (intake checks the spec as written and its rehearsal)."""
    path = Path(path)
    try:
        version = path.stat()
    except OSError:
        return _count_task_file(path)  # raises the reader's own error for a missing file
    return _count_task_file_version(str(path.resolve()), version.st_size, version.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _count_task_file_version(path: str, size: int, mtime_ns: int) -> int:
    return _count_task_file(Path(path))


def _count_task_file(path: Path) -> int:
    seen: set[str] = set()
    for index, row in enumerate(jsonl_rows(path)):
        item_id = task_item(path, index, row).id
        if item_id in seen:
            raise DataError(f"{path}: duplicate id {item_id!r}")
        seen.add(item_id)
    return len(seen)


def count_jsonl_rows(path: str | Path) -> int:
    """The rows of a JSONL data file of any schema (a chat file), each checked as `jsonl_rows` checks it, and
    their `id`s unique where rows carry one."""
    path = Path(path)
    seen: set[str] = set()
    count = 0
    for count, row in enumerate(jsonl_rows(path), start=1):
        if "id" in row:
            item_id = json.dumps(row["id"], sort_keys=True)
            if item_id in seen:
                raise DataError(f"{path}: duplicate id {row['id']!r}")
            seen.add(item_id)
    return count


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



def unreadable_data(spec: Any, rehearse: bool) -> str | None:
    """One line when a run outside a rehearsal could not read its data here, else None: checked before the run is
    claimed (a dataset the run cannot read crashed it at its first read, after the claim). Files a spec names
    were read at intake; what is left is the data a spec names by source: GSM8K (data/gsm8k/<split>.jsonl) for
    training_type rl, a Hugging Face dataset (dataset.hf_path, read through `datasets`) for sft. A rehearsal reads
    its local stand-ins instead."""
    if rehearse:
        return None
    raw = spec.to_dict()
    dataset = raw.get("dataset") if isinstance(raw.get("dataset"), dict) else {}
    evaluation = raw.get("eval") if isinstance(raw.get("eval"), dict) else {}
    needed = []
    if raw.get("training_type") == "rl":
        needed += [("dataset", "train")] if not dataset.get("path") else []
        needed += [("eval", "test")] if not evaluation.get("path") else []
        for section, split in needed:
            if not (DEFAULT_GSM8K_DIR / f"{split}.jsonl").is_file():
                return (f"{section}: GSM8K {split} is read from {DEFAULT_GSM8K_DIR / f'{split}.jsonl'}, which is not "
                        "here: put the split there, or name a task file (path); a rehearsal runs on its stand-in")
        return None
    if dataset.get("path") and evaluation.get("path") or not dataset.get("hf_path"):
        return None
    try:
        from datasets import load_dataset_builder  # heavy: only a run outside a rehearsal reads the Hub

        load_dataset_builder(str(dataset["hf_path"]))
    except Exception as err:  # noqa: BLE001 - whatever `datasets` raises, the run could not read it either
        first = (str(err).splitlines() or [type(err).__name__])[0][:200]
        return (f"dataset.hf_path: {dataset['hf_path']} cannot be read here ({type(err).__name__}: {first}); a run "
                "outside a rehearsal reads its data as the spec names it: make it readable (its cache, or "
                "HF_HUB_OFFLINE unset), or name local files (dataset.path, eval.path); --rehearse runs on the "
                "local stand-in")
    return None
