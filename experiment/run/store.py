"""The result store: one directory per run, the single source of truth for what a run did.

    <runs_dir>/index.parquet             one row per run (RunIndex), rewritten under a lock file
    <runs_dir>/<run_id>/result.json      the contract's RESULT object, rewritten atomically
    <runs_dir>/<run_id>/events.jsonl     append-only gate and progress events
    <runs_dir>/<run_id>/tables/*.parquet tabular outputs (gate verdicts, predictions, ...)
    <runs_dir>/<run_id>/evidence/        immutable evidence files + manifest.json

Numbers posted to RESULT are never dropped: `update_result` deep-merges `metrics` and keeps
`completed_arms` append-only.

One live process per run: `RunStore.claim` picks the run for a spec (a finished one is returned
as is; an unfinished one is resumed; otherwise a new one is created) and the claiming process holds
an fcntl lock on `<run_id>/run.lock` until it ends. A second invocation against a live run gets
`RunInProgress`; a crashed or killed process loses the lock with its file descriptors, so its run
resumes. Every file is written to a uniquely named temporary file and then renamed into place.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import tempfile
import threading
from functools import wraps
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from experiment.contract.plan import ExecutionPlan
from experiment.contract.rehearsal import rehearsal_summary
from experiment.contract.result import initial_result, interruption_update
from experiment.contract.spec import Spec
from experiment.contract.run_layout import (EVENTS_FILE, EVIDENCE_DIR, MANIFEST_FILE, RESULT_FILE, TABLES_DIR, events_path,
                                             evidence_path, manifest_path, result_path, run_meta_path, table_path)
from experiment.contract.run_layout import GATES_TABLE

# EVID-3
MAX_EVIDENCE_FILE_BYTES = 10 * 1024 * 1024
MAX_EVIDENCE_FILES = 64
MAX_EVIDENCE_TOTAL_BYTES = 40 * 1024 * 1024
# EVID-4: what a finished run retains (plus generated_tasks when training on generated data)
REQUIRED_EVIDENCE_KINDS = ("script", "effective_config", "code_revision", "predictions", "metrics")

logger = logging.getLogger(__name__)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class StoreError(RuntimeError):
    """A write the store refuses (evidence cap, immutability, bad name)."""


class RunInProgress(StoreError):
    """Another live process holds the run's lock. str() is one line for the user."""


class RunsDirError(StoreError):
    """A runs dir this store cannot use (a URL, a directory it may not write). str() is one line."""


class CorruptRecord(StoreError):
    """A run file that is not valid JSON. str() is one line naming the file and how to recover."""


RUN_LOCK_FILE = "run.lock"
# Run locks this process holds: {run dir: [open lock file, holders]}. A process may claim its own run
# again (re-entrant: a second claim in the process gets the run it holds); others may not. A run is claimed
# once (experiment.run.prepare.prepare_run), by the CLI or by a deployment's flow run.
_HELD: dict[Path, list[Any]] = {}
_HELD_GUARD = threading.Lock()
FINISHED_STATUSES = ("succeeded", "failed")


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def new_run_id(spec_stem: str) -> str:
    """`<spec-slug>-<UTC yyyymmddTHHMMSS>-<6 hex>`; the slug is `run` when the stem has no ASCII letter or
    digit (a run id never starts with '-', which a command line would take for an option)."""
    slug = re.sub(r"[^a-z0-9]+", "-", spec_stem.lower()).strip("-") or "run"
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{slug}-{stamp}-{secrets.token_hex(3)}"


def default_runs_dir() -> Path:
    return Path(os.environ.get("RX_RUNS_DIR", "runs"))


_URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def runs_dir_path(runs_dir: str | Path | None) -> Path:
    """The runs dir as a local path (default $RX_RUNS_DIR or ./runs); RunsDirError for a URL such as
    s3://bucket/runs, which would otherwise become a local directory named `s3:` (no shared store yet)."""
    path = Path(runs_dir) if runs_dir is not None else default_runs_dir()
    if _URL_SCHEME.match(str(runs_dir if runs_dir is not None else os.environ.get("RX_RUNS_DIR", ""))):
        raise RunsDirError(f"runs dir {runs_dir if runs_dir is not None else os.environ['RX_RUNS_DIR']!s} is a URL; "
                           "runs are stored in a local directory (no shared store exists yet): pass a path")
    return path


def writable_runs_dir(runs_dir: str | Path | None) -> Path:
    """The runs dir, created if needed, after checking this process can create files in it (RunsDirError if not)."""
    path = runs_dir_path(runs_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".write-check.")
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise RunsDirError(f"runs dir {path} is not writable ({err.strerror or type(err).__name__}): "
                           "pass --runs-dir DIR (or set RX_RUNS_DIR) to a directory this user may write") from None
    return path


def parse_json_record(path: Path, data: bytes, recovery: str) -> Any:
    """A run's JSON file (its bytes `data`); CorruptRecord naming the file, what is wrong and `recovery`
    when it does not parse."""
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        what = f"{err.msg} at byte {err.pos} of {len(data)}" if isinstance(err, json.JSONDecodeError) else type(err).__name__
        raise CorruptRecord(f"{path} is not valid JSON ({what}): cut short or damaged outside the store, which "
                            f"writes it atomically; {recovery}") from None


TORN_EVENTS_FILE = EVENTS_FILE + ".torn"


def read_events_file(path: Path) -> list[dict[str, Any]]:
    """The events of an events.jsonl file. A last line with no newline that does not parse is what a kill -9
    during an append leaves (a torn write): it is no event and is skipped. Any other line that does not parse
    is damage from outside the store: CorruptRecord, one line naming the file and the line."""
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    tail = lines.pop()  # what follows the last newline: b"" unless the last append was torn
    events = []
    for number, line in enumerate(lines, 1):
        if line.strip():
            events.append(_event_line(path, number, line))
    if tail.strip():
        try:
            events.append(_event_line(path, len(lines) + 1, tail))  # complete, only its newline missing
        except CorruptRecord:
            pass
    return events


def _event_line(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        event = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        event = None
    if not isinstance(event, dict):
        raise CorruptRecord(f"{path} line {number} is not a JSON event: damaged outside the store, which only "
                            "appends whole lines")
    return event


def mend_torn_events(run_dir: Path) -> bool:
    """End events.jsonl on a whole line before anything is appended to it again: a torn last line (no newline:
    a kill -9 during an append) is moved to events.jsonl.torn, kept there, and cut from the log (a complete last
    line only gets its newline). Call only while holding the run. True when the file was changed."""
    path = events_path(run_dir)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return False
    if not data or data.endswith(b"\n"):
        return False
    tail = data[data.rfind(b"\n") + 1:]
    try:
        complete = isinstance(json.loads(tail), dict)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        complete = False
    if complete:
        with open(path, "ab") as handle:
            handle.write(b"\n")
        return True
    with open(Path(run_dir) / TORN_EVENTS_FILE, "ab") as kept:
        kept.write(tail + b"\n")
    os.truncate(path, len(data) - len(tail))
    logger.warning("%s ended in a torn line (%d bytes, no newline: a write cut short); it is kept in %s and the "
                   "run goes on from the last whole event", path, len(tail), TORN_EVENTS_FILE)
    return True


def result_recovery(run_dir: Path) -> str:
    """How to recover a run whose result.json is damaged."""
    return (f"{events_path(run_dir)} holds every update, so `python -m flows.runs recover {run_dir.name} "
            f"--runs-dir {run_dir.parent}` rebuilds it (the damaged file is kept as result.json.damaged)")


def _write_atomic(path: Path, text: str | bytes) -> None:
    """Write to a temp file in the same directory, then os.replace: readers never see half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8") if isinstance(text, str) else text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_parquet_atomic(frame: pd.DataFrame, path: Path) -> None:
    """A parquet file under a unique temporary name, renamed into place (two writers never share a temp)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


def in_progress_message(run_id: str, holder: str) -> str:
    """The one line a second invocation against a live run gets (`holder`: what run.lock says)."""
    return (f"run {run_id} is in progress ({holder}); a second invocation never takes over a live run: "
            f"wait for it to finish (re-running then returns its result), or stop it and re-run to resume")


def run_lock_held(run_dir: Path) -> bool:
    """Whether a live process holds the run's lock (`run.lock`, flock: a process loses it when it ends, however
    it ends). Opening the existing file writes nothing, so this works on a full or read-only disk."""
    path = Path(run_dir) / RUN_LOCK_FILE
    try:
        handle = open(path, "rb")
    except OSError:  # no lock file: no process ever held it, or the run directory is unreadable
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


STALE = "stale"  # a record that says "running" while no process holds the run: it stopped without saying so


def shown_status(run_dir: Path, status: Any) -> Any:
    """A run's status as people are shown it: STALE for a record still "running" whose process is gone (killed,
    or a full disk refused even the failure marker); running the same command again resumes it."""
    return STALE if status == "running" and not run_lock_held(run_dir) else status


STALE_MEANING = ("its record says running, but no process holds the run: it stopped without recording why "
                 "(killed, or a full disk refused the failure marker); running the same command again resumes it")


def storage_failure(error: BaseException) -> bool:
    """A write the machine refused (disk full, quota, read-only filesystem): not a bug in the run, and
    the run resumes once there is room again."""
    return isinstance(error, OSError) and error.errno in STORAGE_ERRNOS


RUN_KINDS = {  # what became of a run, as flows.runs shows and filters it
    "decided": "reached a verdict",
    "gate_failed": "a gate failed; the record says which and the next diagnostic",
    "capacity_blocked": "the service refused capacity past the contract's limits; resumable: run the same command again",
    "interrupted": "stopped by a signal or a crash before its verdict; resumable: run the same command again",
    "running": "in progress",
    "unreadable": "its result.json cannot be read: python -m flows.runs recover RUN_ID",
}
RESUMABLE_KINDS = ("capacity_blocked", "interrupted")
FINISHED_KINDS = ("decided", "gate_failed")  # a re-run returns these as they are (RunStore.claim)


def run_kind(result: dict[str, Any]) -> str:
    """One of RUN_KINDS for a RESULT: a failed run is told apart by its capacity_block or interruption record (a
    null one is none: update_result removes a field set to None, and the grader reads null as absent)."""
    status = result.get("status")
    if status == "running":
        return "running"
    if result.get("capacity_block") is not None:
        return "capacity_blocked"
    if result.get("interruption") is not None:
        return "interrupted"
    if status == "succeeded":
        return "decided"
    if status == "failed":
        return "gate_failed"
    return "unreadable"


def run_finished(result: dict[str, Any]) -> bool:
    """A run that ended with a verdict or at a failed gate (a capacity block or an interruption is unfinished work):
    one of the FINISHED_KINDS, so a re-run and flows.runs never disagree on a record."""
    return run_kind(result) in FINISHED_KINDS


def _merge_keep_numbers(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Deep merge: new values win, but keys only present in `old` stay."""
    merged = dict(old)
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge_keep_numbers(merged[key], value)
        else:
            merged[key] = value
    return merged


class RunIndex:
    """runs/index.parquet: one row per run, safe when several runs update it at once."""

    COLUMNS = ["run_id", "spec_title", "spec_sha256", "status", "verdict", "effect", "started", "finished",
               "spec", "scale", "kind"]

    def __init__(self, runs_dir: Path):
        self.path = Path(runs_dir) / "index.parquet"
        self.lock_path = Path(runs_dir) / "index.lock"

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def read(self) -> pd.DataFrame:
        """The index; an unreadable index file (truncated, garbage) is rebuilt from the run directories,
        which it is derived from, with a warning that says so."""
        try:
            return self._read_file()
        except _UnreadableIndex as err:
            try:
                with self._locked():
                    try:
                        return self._read_file()  # another process rebuilt it meanwhile
                    except _UnreadableIndex:
                        return self._rebuild(str(err), save=True)
            except OSError:  # a read-only runs dir: rebuilt for this reader only
                return self._rebuild(str(err), save=False)

    def _read_file(self, ignoring: str | None = None) -> pd.DataFrame:
        """The index file; _UnreadableIndex when it cannot be read, or is missing while run directories (other
        than `ignoring`, the run being added) exist."""
        if not self.path.exists():
            if self._run_dirs_exist(ignoring):  # deleted (by hand, a cleanup): the runs are still there
                raise _UnreadableIndex("missing")
            return pd.DataFrame(columns=self.COLUMNS)
        try:
            frame = pd.read_parquet(self.path)
        except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
            raise _UnreadableIndex(f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}") from None
        missing = [column for column in self.COLUMNS if column not in frame.columns]
        if missing:
            raise _UnreadableIndex(f"no column {missing[0]}")
        return frame

    def _run_dirs_exist(self, ignoring: str | None = None) -> bool:
        """Whether the runs dir holds a run directory (one with a run.json) the index would list."""
        try:
            return any(entry.name != ignoring and entry.is_dir() and run_meta_path(entry).is_file()
                       for entry in self.path.parent.iterdir())
        except OSError:
            return False

    def _rebuild(self, why: str, save: bool) -> pd.DataFrame:
        rows = [row for row in (_index_row_from(run_dir) for run_dir in sorted(self.path.parent.iterdir())
                                if run_dir.is_dir()) if row is not None]
        frame = _typed(pd.DataFrame(rows, columns=self.COLUMNS))
        saved = False
        if save:
            with suppress(OSError):
                _write_parquet_atomic(frame, self.path)
                saved = True
        logger.warning("%s was %s; %s it from %d run directories (it is derived from them)",
                       self.path, "missing" if why == "missing" else f"unreadable ({why})",
                       "rebuilt" if saved else "read", len(rows))
        return frame

    def upsert(self, row: dict[str, Any]) -> None:
        with self._locked():
            try:
                frame = self._read_file(ignoring=row["run_id"])
            except _UnreadableIndex as err:
                frame = self._rebuild(str(err), save=False)
            frame = frame[frame["run_id"] != row["run_id"]]
            new = pd.DataFrame([{column: row.get(column) for column in self.COLUMNS}])
            frame = _typed(new if frame.empty else pd.concat([frame, new], ignore_index=True))
            _write_parquet_atomic(frame, self.path)


class _UnreadableIndex(Exception):
    """index.parquet cannot be read as the index (str: why)."""


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    for column in ("verdict", "finished", "status", "spec_title", "spec_sha256", "started", "run_id", "spec", "scale",
                   "kind"):
        frame[column] = frame[column].astype("string")
    frame["effect"] = frame["effect"].astype("float64")
    return frame


def _index_row_from(run_dir: Path) -> dict[str, Any] | None:
    """A run directory's index row from its run.json and result.json (None when it is not a run)."""
    try:
        meta = json.loads(run_meta_path(run_dir).read_text())
    except (OSError, ValueError):
        return None
    try:
        result = json.loads(result_path(run_dir).read_text())
    except (OSError, ValueError):
        result = {"status": "unreadable"}
    status = result.get("status")
    finished = None
    if status in FINISHED_STATUSES:
        stamp = result_path(run_dir).stat().st_mtime
        finished = dt.datetime.fromtimestamp(stamp, dt.timezone.utc).isoformat(timespec="seconds")
    effect = result.get("effect")
    return {"run_id": meta.get("run_id", run_dir.name), "spec_title": meta.get("spec_title"),
            "spec_sha256": meta.get("spec_sha256"), "started": meta.get("started"), "status": status,
            "verdict": result.get("verdict"), "finished": finished,
            "effect": float(effect) if isinstance(effect, (int, float)) and not isinstance(effect, bool) else None,
            "spec": meta.get("spec"), "scale": meta.get("scale"), "kind": run_kind(result)}


class RunDirectoryGone(StoreError):
    """The run's directory was deleted while the run was in progress (str(): one line)."""


# Run dir (resolved) -> what to do, at once, when a write finds that directory deleted (when_directory_gone)
_GONE_HANDLERS: dict[Path, Any] = {}


def when_directory_gone(run_dir: Path, handler: Any) -> None:
    """Call `handler(RunDirectoryGone)` from the store, before anything else happens, when a store write of
    `run_dir` finds the directory deleted (None: no longer). The CLI ends the run there with one line: left to
    the flow, each layer the error crossed printed a traceback (four of them), and the index kept a "running" row."""
    key = Path(run_dir).resolve()
    if handler is None:
        _GONE_HANDLERS.pop(key, None)
    else:
        _GONE_HANDLERS[key] = handler


def _gone_told(method):
    """A read of the run's files that finds its directory deleted raises RunDirectoryGone (after its handler)."""

    @wraps(method)
    def read(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except FileNotFoundError:
            if self.run_dir.is_dir():
                raise
            raise self._directory_gone() from None

    return read


def _serialized(method):
    """Store writes are read-modify-write; arms training in threads share one store. A write that finds the run's
    directory deleted raises RunDirectoryGone (after its handler, when_directory_gone)."""

    told = _gone_told(method)

    @wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return told(self, *args, **kwargs)

    return locked


# The (status, verdict, effect) this process last put in the index for each run (by resolved run dir):
# a RESULT write that leaves them as they are does not rewrite index.parquet (read and written whole,
# under the runs dir's lock). One live process per run, so no other process changes its row meanwhile.
_INDEXED_ROW: dict[Path, tuple[Any, ...]] = {}


class RunStore:
    """One run's directory. Create with `RunStore.create`, reopen with `RunStore.open`."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.run_id = self.run_dir.name
        self.index = RunIndex(self.run_dir.parent)
        self._lock = threading.RLock()
        self._run_lock: Any = None  # the open run.lock while this process holds the run
        self._meta: dict[str, Any] | None = None  # run.json, written once when the run is created
        # (the bytes of result.json this store last wrote, the RESULT they encode): read_result reuses the
        # parsed RESULT while the file holds exactly those bytes (result.json carries the evidence inline,
        # up to 40 MiB, and every write reads it first); any other writer's bytes are parsed as they are
        self._written: tuple[bytes, dict[str, Any]] | None = None

    # ---- one live process per run ----

    def acquire(self) -> None:
        """Hold this run's lock for the life of this process (or until release()); RunInProgress if
        another process holds it. Re-entrant within this process."""
        if self._run_lock is not None:
            return
        key = self.run_dir.resolve()
        with _HELD_GUARD:
            if key in _HELD:
                _HELD[key][1] += 1
                self._run_lock = _HELD[key][0]
                return
            handle = self._lock_file()
            _HELD[key] = [handle, 1]
            self._run_lock = handle
        mend_torn_events(self.run_dir)  # the run is this process's now: its appends start on a whole line

    def _lock_file(self) -> Any:
        handle = open(self.run_dir / RUN_LOCK_FILE, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise RunInProgress(in_progress_message(self.run_id, holder)) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} since {utc_now()}\n")
        handle.flush()
        return handle

    def release(self) -> None:
        if self._run_lock is None:
            return
        key = self.run_dir.resolve()
        with _HELD_GUARD:
            entry = _HELD.get(key)
            if entry is not None:
                entry[1] -= 1
                if entry[1] == 0:
                    del _HELD[key]
                    fcntl.flock(entry[0], fcntl.LOCK_UN)
                    entry[0].close()
        self._run_lock = None

    def is_live(self) -> bool:
        """Whether some process holds this run's lock right now (this one included)."""
        if self._run_lock is not None or self.run_dir.resolve() in _HELD:
            return True
        return run_lock_held(self.run_dir)

    @classmethod
    def latest(cls, runs_dir: str | Path | None, spec_sha256: str) -> RunStore | None:
        """The newest run of the same spec content, finished or not."""
        runs_dir = runs_dir_path(runs_dir)
        index = RunIndex(runs_dir).read()
        if index.empty:
            return None
        candidates = index[index["spec_sha256"] == spec_sha256].sort_values("started", ascending=False)
        for run_id in candidates["run_id"]:
            if result_path(runs_dir / run_id).is_file():
                return cls(runs_dir / run_id)
        return None

    @classmethod
    def claim(cls, runs_dir: str | Path | None, spec: Spec, plan: ExecutionPlan, fresh: bool = False,
              exposure: str | None = None) -> tuple[RunStore, str]:
        """(store, how): `finished` (the newest run of this spec ended; returned untouched, unlocked),
        `resumed` (an unfinished run, now locked by this process) or `new` (created and locked).

        Decided under a per-spec lock file so two invocations cannot both create or both resume;
        `fresh=True` always creates a new replicate. A run begun under another service exposure profile
        (its `run_config` event) is never answered or resumed for `exposure`: a new run is created.
        RunInProgress when a live process holds the run."""
        runs_dir = writable_runs_dir(runs_dir)
        locks = runs_dir / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        with open(locks / f"{plan.spec_sha256}.lock", "a+") as spec_lock:
            fcntl.flock(spec_lock, fcntl.LOCK_EX)
            try:
                held = None if fresh else cls._held_here(runs_dir, plan.spec_sha256)
                if held is not None:  # this process claimed it (the CLI, before its flow): that run, not the newest
                    held.acquire()
                    return held, "resumed"
                latest = None if fresh else cls.latest(runs_dir, plan.spec_sha256)
                if latest is not None and exposure is not None and latest.recorded_exposure() not in (None, exposure):
                    latest = None
                if latest is not None:
                    if run_finished(latest.read_result()):
                        return latest, "finished"
                    latest.acquire()
                    return latest, "resumed"
                return cls.create(runs_dir, spec, plan), "new"
            finally:
                fcntl.flock(spec_lock, fcntl.LOCK_UN)

    @classmethod
    def _held_here(cls, runs_dir: Path, spec_sha256: str) -> RunStore | None:
        """The run of this spec in `runs_dir` that this process holds, if any. Two `--fresh` runs of one spec
        side by side each claim their own new run; each one's flow must go on with that run, not with the
        newest of the spec (which may be the other process's, and refused as in progress)."""
        where = runs_dir.resolve()
        with _HELD_GUARD:
            held = [key for key in _HELD if key.parent == where]
        for run_dir in held:
            store = cls(run_dir)
            with suppress(OSError, ValueError):
                if store.run_meta().get("spec_sha256") == spec_sha256:
                    return store
        return None

    @classmethod
    def finished_run(cls, runs_dir: str | Path | None, spec_sha256: str, exposure: str | None = None) -> RunStore | None:
        """The newest run of this spec when it finished (under `exposure`), read without taking any lock or
        writing anything: a finished run is answered before any precondition of a new run is checked."""
        latest = cls.latest(runs_dir, spec_sha256)
        if latest is None or (exposure is not None and latest.recorded_exposure() not in (None, exposure)):
            return None
        return latest if run_finished(latest.read_result()) else None

    @classmethod
    def in_progress_refusal(cls, runs_dir: str | Path | None, spec_sha256: str, exposure: str | None = None) -> str | None:
        """The line `claim` would refuse with (RunInProgress) when the newest run of this spec is unfinished and a
        live process holds it, else None; read without taking any lock or writing anything, so that a run refused
        anyway starts no server first. (`claim` decides under its lock; this only spares the wait.)"""
        latest = cls.latest(runs_dir, spec_sha256)
        if latest is None or (exposure is not None and latest.recorded_exposure() not in (None, exposure)):
            return None
        if run_finished(latest.read_result()) or not run_lock_held(latest.run_dir):
            return None
        try:
            holder = (latest.run_dir / RUN_LOCK_FILE).read_text().strip()
        except OSError:
            holder = ""
        return in_progress_message(latest.run_id, holder or "another process")

    def settle_unfinished(self, plan: ExecutionPlan, reason: str) -> bool:
        """Mark a run still `running` as stopped (`reason`: a signal, a crash) so that no record is left
        running; a re-run resumes it. False when the run already ended or the record cannot be written."""
        try:
            result = self.read_result()
            if result.get("status") != "running":
                return False
            self.update_result(**interruption_update(plan, reason, utc_now()))
            self.append_event("interrupted", reason=reason)
        except Exception:  # noqa: BLE001 - e.g. a full disk: the caller reports the original problem
            return False
        return True

    def recorded_exposure(self) -> str | None:
        """The service exposure profile this run was started under (its first `run_config` event)."""
        for event in self.read_events():
            if event.get("event") == "run_config":
                return event.get("exposure")
        return None

    # ---- creation ----

    @classmethod
    def create(cls, runs_dir: str | Path | None, spec: Spec, plan: ExecutionPlan) -> RunStore:
        """A new run directory holding the initial RESULT (status running) and an index row."""
        runs_dir = runs_dir_path(runs_dir)
        stem = spec.source.stem + ("-rehearsal" if spec.source.rehearsal else "")
        run_dir = runs_dir / new_run_id(stem)
        for sub in (TABLES_DIR, EVIDENCE_DIR):
            (run_dir / sub).mkdir(parents=True, exist_ok=False)
        store = cls(run_dir)
        store.acquire()  # before the index lists the run, so no other process can see it unlocked
        try:
            rehearsal = spec.source.rehearsal
            run_meta = {"run_id": store.run_id, "spec_title": plan.spec_title, "spec_sha256": plan.spec_sha256,
                        "started": utc_now(), "spec": Path(str(plan.spec_path)).name, "spec_path": str(plan.spec_path),
                        "scale": rehearsal.get("scale", "standard") if rehearsal else "as-written"}
            _write_atomic(run_meta_path(run_dir), json.dumps(run_meta, indent=2))
            _write_atomic(manifest_path(run_dir), json.dumps({"version": 1, "files": []}, indent=2))
            events_path(run_dir).touch()
            initial = initial_result(plan)
            store._write_result(initial)
            store.append_event("run_created", spec_path=plan.spec_path, spec_sha256=plan.spec_sha256,
                               **({"rehearsal": True} if spec.source.rehearsal else {}), result=initial)
        except BaseException:  # nothing ran yet: leave no half-made run behind ("running", perhaps indexed)
            store._discard_new_run()
            raise
        return store

    def _discard_new_run(self) -> None:
        """Remove a run that `create` could not finish making: its index row, its directory, its lock."""
        self.forget_index_row()
        self.release()
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def _directory_gone(self) -> RunDirectoryGone:
        """RunDirectoryGone for this run, after its handler (when_directory_gone) was told."""
        gone = RunDirectoryGone(f"run {self.run_id}: its directory {self.run_dir} was deleted while the run was in "
                                "progress")
        handler = _GONE_HANDLERS.get(self.run_dir.resolve())
        if handler is not None:
            handler(gone)
        return gone

    def forget_index_row(self) -> None:
        """Remove this run's row from the index (a run whose directory is gone, or was never finished making)."""
        with suppress(Exception):
            with self.index._locked():
                frame = self.index._read_file(ignoring=self.run_id)
                if self.run_id in set(frame["run_id"]):
                    _write_parquet_atomic(_typed(frame[frame["run_id"] != self.run_id]), self.index.path)
        _INDEXED_ROW.pop(self.run_dir.resolve(), None)

    def passed_gates(self) -> dict[str, dict[str, Any]]:
        """gate -> the state it handed downstream, for every gate that passed (or did not apply)."""
        passed: dict[str, dict[str, Any]] = {}
        for event in self.read_events():
            if event.get("event") == "gate":
                if event.get("status") in ("passed", "not_applicable"):
                    passed[event["gate"]] = event.get("state") or {}
                else:
                    passed.pop(event["gate"], None)
        return passed

    @classmethod
    def open(cls, run_dir: str | Path) -> RunStore:
        run_dir = Path(run_dir)
        if not result_path(run_dir).is_file():
            raise StoreError(f"{run_dir} is not a run directory (no result.json)")
        return cls(run_dir)

    @_gone_told
    def run_meta(self) -> dict[str, Any]:
        """run id, spec title and hash, start time (run.json)."""
        if self._meta is None:
            self._meta = json.loads(run_meta_path(self.run_dir).read_text())
        return dict(self._meta)

    # ---- RESULT ----

    @_gone_told
    def read_result(self) -> dict[str, Any]:
        """RESULT as result.json holds it; CorruptRecord (one line: the file, how to recover) if it does not parse."""
        path = result_path(self.run_dir)
        data = path.read_bytes()
        if self._written is not None and self._written[0] == data:
            return _json_copy(self._written[1])
        return parse_json_record(path, data, result_recovery(self.run_dir))

    @_serialized
    def update_result(self, **fields: Any) -> dict[str, Any]:
        """Merge fields into RESULT and rewrite it atomically; returns the new RESULT.

        `metrics` is deep-merged (earlier numbers stay) and mirrored per arm into
        `evidence.per_arm_metrics`, `completed_arms` only grows, and `evidence` is owned by
        `add_evidence`. A field set to None is removed (e.g. a
        `verdict` that must not appear). A rehearsal's `summary` leads with the rehearsal mark whoever wrote it
        (experiment.contract.rehearsal.rehearsal_summary, applied here, the one place)."""
        if "evidence" in fields:
            raise StoreError("RESULT.evidence is written by add_evidence, not update_result")
        result = _apply_update(self.read_result(), fields)
        self._write_result(result)
        # The order of updates is evidence too (e.g. a deviation posted while running, before use).
        self.append_event("result_updated", fields=sorted(fields), status=result.get("status"),
                          deviations=result.get("deviations", []), values=fields)  # values: recovered_result()
        return result

    @_serialized
    def edit_result(self, key: str, edit: Any) -> Any:
        """Read-modify-write of one RESULT field under the store's lock: `edit(current copy) -> new`.

        Threads that each add to the same field (the arms' restore records in
        initialization_provenance) see each other's last write, so no update is lost."""
        value = edit(copy.deepcopy(self.read_result().get(key)))
        self.update_result(**{key: value})
        return value

    def _write_result(self, result: dict[str, Any]) -> None:
        data = (json.dumps(result, indent=2, allow_nan=False) + "\n").encode("utf-8")
        self._written = None  # until the new bytes are in place
        _write_atomic(result_path(self.run_dir), data)
        with suppress(_NotPlainJson):
            self._written = (data, _json_copy(result))
        row = (result.get("status"), result.get("verdict"), result.get("effect"), run_kind(result))
        key = self.run_dir.resolve()
        if _INDEXED_ROW.get(key) == row:
            return
        finished = utc_now() if row[0] in FINISHED_STATUSES else None
        self.index.upsert({**self.run_meta(), "status": row[0], "verdict": row[1], "effect": row[2],
                           "finished": finished, "kind": row[3]})
        _INDEXED_ROW[key] = row

    # ---- events and tables ----

    @_serialized
    def append_event(self, event: str, **data: Any) -> None:
        line = json.dumps({"ts": utc_now(), "event": event, **data}, default=str)
        with open(events_path(self.run_dir), "a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def record_gate(self, verdict: Any) -> None:
        """A gate's verdict as an event and a row of tables/gates (nested values as JSON text)."""
        self.append_event("gate", **verdict.to_dict())
        row = verdict.to_dict()
        for key in ("reasons", "measured", "state"):
            row[key] = json.dumps(row.get(key), default=str, sort_keys=True)
        self.append_rows(GATES_TABLE, [row])

    @_gone_told
    def read_events(self) -> list[dict[str, Any]]:
        return read_events_file(events_path(self.run_dir))

    @_serialized
    def write_table(self, name: str, rows: list[dict[str, Any]]) -> Path:
        """tables/<name>.parquet holding exactly `rows` (replaces an earlier version)."""
        path = table_path(self.run_dir, _checked_name(name))
        _write_parquet_atomic(pd.DataFrame(rows), path)
        return path

    @_serialized
    def append_rows(self, name: str, rows: list[dict[str, Any]]) -> Path:
        return self.write_table(name, self.read_table(name) + rows)

    @_gone_told
    def read_table(self, name: str) -> list[dict[str, Any]]:
        path = table_path(self.run_dir, _checked_name(name))
        return pd.read_parquet(path).to_dict("records") if path.exists() else []

    # ---- evidence ----

    @_serialized
    def add_evidence(self, name: str, kind: str, data: bytes | str, source: str | None = None) -> dict[str, Any]:
        """Store an immutable evidence file and list it, content inline, in the manifest and RESULT.evidence.

        RESULT.evidence.files[] entries carry the file itself (EVID-1): `content` is the
        text as is when the bytes are UTF-8, else base64 with `encoding: "base64"`; `sha256` is always
        of the original bytes. A file that does not fit the caps (10 MiB a file, 64 files, 40 MiB a
        run, counted on the original bytes of the files carried inline) is still kept on disk and in
        the manifest, but RESULT lists it under `evidence.partial` (named, with the reason) and marks
        `evidence.status: "partial"`: never reported as verified. Same name + same bytes is a no-op;
        same name + different bytes is a StoreError (names are immutable)."""
        name = _checked_name(name)
        payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        digest = hashlib.sha256(payload).hexdigest()
        manifest = self.read_manifest()
        for entry in manifest["files"]:
            if entry["name"] == name:
                if entry["sha256"] == digest:
                    return entry
                raise StoreError(f"evidence {name!r} already exists with other content; evidence names are immutable")
        unfit = evidence_cap_problem(name, len(payload), [e for e in manifest["files"] if e.get("inline", True)])
        path = evidence_path(self.run_dir, name)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, path)
        entry = {"name": name, "kind": kind, "sha256": digest, "bytes": len(payload), "inline": unfit is None}
        if source:
            entry["source"] = source
        manifest["files"].append(entry)
        _write_atomic(manifest_path(self.run_dir), json.dumps(manifest, indent=2))
        result = self.read_result()
        evidence = result.setdefault("evidence", {"version": 1, "files": [], "checkpoints": [], "per_arm_metrics": {}})
        if unfit is None:
            evidence.setdefault("files", []).append(evidence_file_entry(name, kind, payload))
        else:
            evidence.setdefault("partial", []).append(
                {"name": name, "kind": kind, "sha256": digest, "bytes": len(payload), "reason": unfit})
            evidence["status"] = "partial"
        evidence.setdefault("status", "complete")
        self._write_result(result)
        self.append_event("evidence_added", name=name, kind=kind, sha256=digest, bytes=len(payload),
                          inline=unfit is None, **({"partial_reason": unfit} if unfit else {}))
        return entry

    @_serialized
    def add_checkpoint(self, arm: str, step: int, uri: str, seed: int | None = None) -> None:
        """List a checkpoint reference (a service URI, never weights) in RESULT.evidence.checkpoints:
        `arm` is the spec's arm name (never a replica label) and `seed` the seed it trained at, when known."""
        result = self.read_result()
        evidence = result.setdefault("evidence", {"version": 1, "files": [], "checkpoints": [], "per_arm_metrics": {}})
        entry = {"arm": arm, "step": step, "uri": uri, **({"seed": seed} if seed is not None else {})}
        if entry not in evidence.setdefault("checkpoints", []):
            evidence["checkpoints"].append(entry)
            self._write_result(result)
        self.append_event("checkpoint", **entry)

    @_gone_told
    def read_manifest(self) -> dict[str, Any]:
        return json.loads(manifest_path(self.run_dir).read_text())


def _apply_update(result: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
    """RESULT after one update_result(**fields): metrics deep-merged (mirrored per arm), completed_arms only
    grows, None removes a field, anything else replaces it; a rehearsal's summary led by its mark (the record
    says it is a rehearsal from the moment it holds `rehearsal`, whichever update wrote the summary)."""
    for key, value in fields.items():
        if key == "metrics":
            result["metrics"] = _merge_keep_numbers(result.get("metrics", {}), value)
            _mirror_per_arm_metrics(result)
        elif key == "completed_arms":
            done = list(result.get("completed_arms", []))
            result["completed_arms"] = done + [arm for arm in value if arm not in done]
        elif value is None:
            result.pop(key, None)
        else:
            result[key] = value
    if isinstance(result.get("rehearsal"), dict) and isinstance(result.get("summary"), str):
        result["summary"] = rehearsal_summary(result["summary"], result["rehearsal"])
    return result


def recovered_result(run_dir: Path) -> dict[str, Any]:
    """RESULT rebuilt from the run's events.jsonl (the initial RESULT in `run_created`, every update's values,
    each evidence file added and checkpoint listed) and its evidence/ files, for a result.json that was
    damaged. CorruptRecord when the events do not hold the values (a run made before they did)."""
    events = read_events_file(events_path(run_dir))
    if not events or "result" not in events[0]:
        raise CorruptRecord(f"{events_path(run_dir)} does not hold the RESULT values of this run (made before "
                            "they were recorded); restore result.json from a copy")
    result: dict[str, Any] = json.loads(json.dumps(events[0]["result"]))
    inline: list[dict[str, Any]] = []
    for event in events[1:]:
        kind = event.get("event")
        if kind == "result_updated":
            result = _apply_update(result, json.loads(json.dumps(event["values"])))
        elif kind == "evidence_added":
            evidence = result.setdefault("evidence", {"version": 1, "files": [], "checkpoints": [], "per_arm_metrics": {}})
            payload = evidence_path(run_dir, event["name"]).read_bytes()
            if event.get("inline", True):
                evidence.setdefault("files", []).append(evidence_file_entry(event["name"], event["kind"], payload))
                inline.append(event)
            else:
                evidence.setdefault("partial", []).append(
                    {"name": event["name"], "kind": event["kind"], "sha256": event["sha256"], "bytes": event["bytes"],
                     "reason": event.get("partial_reason")})
                evidence["status"] = "partial"
            evidence.setdefault("status", "complete")
        elif kind == "checkpoint":
            entry = {key: event[key] for key in ("arm", "step", "uri", "seed") if key in event}
            checkpoints = result.setdefault("evidence", {}).setdefault("checkpoints", [])
            if entry not in checkpoints:
                checkpoints.append(entry)
    return result


def intact_result(run_dir: Path) -> dict[str, Any] | None:
    """RESULT when the run's result.json is readable as a RESULT (a JSON object), else None: a damaged or missing
    file, which `recover_result` rebuilds. An intact file is never rebuilt (nothing would be gained, and the copy
    kept as damaged would be a second RESULT of the run)."""
    try:
        result = json.loads(result_path(run_dir).read_bytes())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return None
    return result if isinstance(result, dict) else None


def recover_result(run_dir: Path) -> dict[str, Any]:
    """Rebuild a damaged result.json from the run's events (recovered_result); the damaged file is kept as
    result.json.damaged and the index row follows the rebuilt RESULT. Returns the rebuilt RESULT."""
    run_dir = Path(run_dir)
    result = recovered_result(run_dir)
    path = result_path(run_dir)
    if path.is_file():
        os.replace(path, run_dir / (RESULT_FILE + ".damaged"))
    RunStore(run_dir)._write_result(result)
    return result


class _NotPlainJson(Exception):
    """A RESULT that JSON changes in a way `_json_copy` does not mirror (a key that is not a string)."""


def _json_copy(value: Any) -> Any:
    """A fresh copy of a JSON-encodable value as `json.loads(json.dumps(value))` gives it back (tuples as
    lists, subclasses of str, int and float as the plain type), without going through the text.
    Strings are shared, being immutable."""
    if isinstance(value, dict):
        if any(type(key) is not str for key in value):
            raise _NotPlainJson
        return {key: _json_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_copy(item) for item in value]
    if value is None or type(value) in (str, int, float, bool):
        return value
    for plain in (int, float, str):  # e.g. an IntEnum, a numpy float64
        if isinstance(value, plain):
            return plain(value)
    raise _NotPlainJson


def _checked_name(name: str) -> str:
    if not _SAFE_NAME.match(name) or name == MANIFEST_FILE:
        raise StoreError(f"bad file name {name!r}: use letters, digits, '.', '_' or '-' (not manifest.json)")
    return name


def evidence_file_entry(name: str, kind: str, payload: bytes) -> dict[str, Any]:
    """One RESULT.evidence.files[] entry with the file inline (EVID-1, EVID-2).

    Text (UTF-8) is carried as is; anything else as base64 with `encoding: "base64"`. `sha256` is
    of the original bytes either way, so a reader can check the content it decodes."""
    entry: dict[str, Any] = {"name": name, "kind": kind}
    try:
        entry["content"] = payload.decode("utf-8")
    except UnicodeDecodeError:
        entry["content"] = base64.b64encode(payload).decode("ascii")
        entry["encoding"] = "base64"
    entry["sha256"] = hashlib.sha256(payload).hexdigest()
    return entry


def evidence_file_bytes(entry: dict[str, Any]) -> bytes:
    """The original bytes of an inline evidence entry (the inverse of `evidence_file_entry`)."""
    content = entry["content"]
    if entry.get("encoding") == "base64":
        return base64.b64decode(content, validate=True)
    if entry.get("encoding") not in (None, "utf-8"):
        raise ValueError(f"evidence {entry.get('name')!r}: unknown encoding {entry.get('encoding')!r}")
    return content.encode("utf-8")


def evidence_cap_problem(name: str, size: int, inline_entries: list[dict[str, Any]]) -> str | None:
    """Why a file of `size` bytes cannot be carried inline next to `inline_entries`, or None if it fits."""
    if size > MAX_EVIDENCE_FILE_BYTES:
        return f"{name} is {size} bytes; the cap is {MAX_EVIDENCE_FILE_BYTES} bytes per file"
    if len(inline_entries) + 1 > MAX_EVIDENCE_FILES:
        return f"{name} would be file {len(inline_entries) + 1}; the cap is {MAX_EVIDENCE_FILES} files per run"
    total = sum(int(entry.get("bytes", 0)) for entry in inline_entries) + size
    if total > MAX_EVIDENCE_TOTAL_BYTES:
        return f"{name} would bring the run to {total} bytes; the cap is {MAX_EVIDENCE_TOTAL_BYTES} bytes per run"
    return None


def _mirror_per_arm_metrics(result: dict[str, Any]) -> None:
    """RESULT.evidence.per_arm_metrics = RESULT.metrics.arms (EVID-5), kept in step."""
    arms = (result.get("metrics") or {}).get("arms") or {}
    evidence = result.setdefault("evidence", {"version": 1, "files": [], "checkpoints": [], "per_arm_metrics": {}})
    evidence["per_arm_metrics"] = json.loads(json.dumps(arms))
