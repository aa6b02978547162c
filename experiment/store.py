"""The result store: one directory per run, the single source of truth for what a run did.

    <runs_dir>/index.parquet             one row per run (RunIndex), rewritten under a lock file
    <runs_dir>/<run_id>/result.json      the contract's RESULT object, rewritten atomically
    <runs_dir>/<run_id>/events.jsonl     append-only gate and progress events
    <runs_dir>/<run_id>/tables/*.parquet tabular outputs (gate verdicts, predictions, ...)
    <runs_dir>/<run_id>/evidence/        immutable evidence files + manifest.json

Numbers posted to RESULT are never dropped: `update_result` deep-merges `metrics` and keeps
`completed_arms` append-only.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import os
import re
import secrets
import tempfile
import threading
from functools import wraps
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from experiment.plan import ExecutionPlan
from experiment.result import initial_result
from experiment.spec import Spec

# contract section 12
MAX_EVIDENCE_FILE_BYTES = 10 * 1024 * 1024
MAX_EVIDENCE_FILES = 64
MAX_EVIDENCE_TOTAL_BYTES = 40 * 1024 * 1024

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class StoreError(RuntimeError):
    """A write the store refuses (evidence cap, immutability, bad name)."""


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def new_run_id(spec_stem: str) -> str:
    """`<spec-slug>-<UTC yyyymmddTHHMMSS>-<6 hex>`."""
    slug = re.sub(r"[^a-z0-9]+", "-", spec_stem.lower()).strip("-")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{slug}-{stamp}-{secrets.token_hex(3)}"


def default_runs_dir() -> Path:
    return Path(os.environ.get("RX_RUNS_DIR", "runs"))


def _write_atomic(path: Path, text: str) -> None:
    """Write to a temp file in the same directory, then os.replace: readers never see half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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

    COLUMNS = ["run_id", "spec_title", "spec_sha256", "status", "verdict", "effect", "started", "finished"]

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
        if not self.path.exists():
            return pd.DataFrame(columns=self.COLUMNS)
        return pd.read_parquet(self.path)

    def upsert(self, row: dict[str, Any]) -> None:
        with self._locked():
            frame = self.read()
            frame = frame[frame["run_id"] != row["run_id"]]
            new = pd.DataFrame([{column: row.get(column) for column in self.COLUMNS}])
            frame = new if frame.empty else pd.concat([frame, new], ignore_index=True)
            for column in ("verdict", "finished", "status", "spec_title", "spec_sha256", "started", "run_id"):
                frame[column] = frame[column].astype("string")
            frame["effect"] = frame["effect"].astype("float64")
            tmp = self.path.with_suffix(".parquet.tmp")
            frame.to_parquet(tmp, index=False)
            os.replace(tmp, self.path)


def _serialized(method):
    """Store writes are read-modify-write; arms training in threads share one store."""

    @wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return locked


class RunStore:
    """One run's directory. Create with `RunStore.create`, reopen with `RunStore.open`."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.run_id = self.run_dir.name
        self.index = RunIndex(self.run_dir.parent)
        self._lock = threading.RLock()

    # ---- creation ----

    @classmethod
    def create(cls, runs_dir: str | Path | None, spec: Spec, plan: ExecutionPlan) -> RunStore:
        """A new run directory holding the initial RESULT (status running) and an index row."""
        runs_dir = Path(runs_dir) if runs_dir is not None else default_runs_dir()
        run_dir = runs_dir / new_run_id(spec.source.stem)
        for sub in ("tables", "evidence"):
            (run_dir / sub).mkdir(parents=True, exist_ok=False)
        store = cls(run_dir)
        run_meta = {"run_id": store.run_id, "spec_title": plan.spec_title, "spec_sha256": plan.spec_sha256, "started": utc_now()}
        _write_atomic(run_dir / "run.json", json.dumps(run_meta, indent=2))
        _write_atomic(run_dir / "evidence" / "manifest.json", json.dumps({"version": 1, "files": []}, indent=2))
        (run_dir / "events.jsonl").touch()
        store._write_result(initial_result(plan))
        store.append_event("run_created", spec_path=plan.spec_path, spec_sha256=plan.spec_sha256)
        return store

    @classmethod
    def resumable(cls, runs_dir: str | Path | None, spec_sha256: str) -> RunStore | None:
        """The newest unfinished run of the same spec content, if any.

        Unfinished: still `running` (the process was killed or crashed) or stopped by a capacity
        block. A run that ended with a verdict or at a failed gate is an answer, not work to resume.
        """
        runs_dir = Path(runs_dir) if runs_dir is not None else default_runs_dir()
        index = RunIndex(runs_dir).read()
        if index.empty:
            return None
        candidates = index[index["spec_sha256"] == spec_sha256].sort_values("started", ascending=False)
        for run_id in candidates["run_id"]:
            run_dir = runs_dir / run_id
            if not (run_dir / "result.json").is_file():
                continue
            result = json.loads((run_dir / "result.json").read_text())
            if result.get("status") == "running" or "capacity_block" in result:
                return cls(run_dir)
            return None  # the newest run of this spec finished: start fresh
        return None

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
        if not (run_dir / "result.json").is_file():
            raise StoreError(f"{run_dir} is not a run directory (no result.json)")
        return cls(run_dir)

    def run_meta(self) -> dict[str, Any]:
        """run id, spec title and hash, start time (run.json)."""
        return json.loads((self.run_dir / "run.json").read_text())

    # ---- RESULT ----

    def read_result(self) -> dict[str, Any]:
        return json.loads((self.run_dir / "result.json").read_text())

    @_serialized
    def update_result(self, **fields: Any) -> dict[str, Any]:
        """Merge fields into RESULT and rewrite it atomically; returns the new RESULT.

        `metrics` is deep-merged (earlier numbers stay), `completed_arms` only grows, and
        `evidence` is owned by `add_evidence`. A field set to None is removed (e.g. a
        `verdict` that must not appear)."""
        result = self.read_result()
        for key, value in fields.items():
            if key == "evidence":
                raise StoreError("RESULT.evidence is written by add_evidence, not update_result")
            if key == "metrics":
                result["metrics"] = _merge_keep_numbers(result.get("metrics", {}), value)
            elif key == "completed_arms":
                done = list(result.get("completed_arms", []))
                result["completed_arms"] = done + [arm for arm in value if arm not in done]
            elif value is None:
                result.pop(key, None)
            else:
                result[key] = value
        self._write_result(result)
        # The order of updates is evidence too (e.g. a deviation posted while running, before use).
        self.append_event("result_updated", fields=sorted(fields), status=result.get("status"),
                          deviations=result.get("deviations", []))
        return result

    def _write_result(self, result: dict[str, Any]) -> None:
        _write_atomic(self.run_dir / "result.json", json.dumps(result, indent=2, allow_nan=False) + "\n")
        finished = utc_now() if result.get("status") in ("succeeded", "failed") else None
        self.index.upsert(
            {
                **self.run_meta(),
                "status": result.get("status"),
                "verdict": result.get("verdict"),
                "effect": result.get("effect"),
                "finished": finished,
            }
        )

    # ---- events and tables ----

    @_serialized
    def append_event(self, event: str, **data: Any) -> None:
        line = json.dumps({"ts": utc_now(), "event": event, **data}, default=str)
        with open(self.run_dir / "events.jsonl", "a", encoding="utf-8") as handle:
            handle.write(line + "\n")

    def record_gate(self, verdict: Any) -> None:
        """A gate's verdict as an event and a row of tables/gates (nested values as JSON text)."""
        self.append_event("gate", **verdict.to_dict())
        row = verdict.to_dict()
        for key in ("reasons", "measured", "state"):
            row[key] = json.dumps(row.get(key), default=str, sort_keys=True)
        self.append_rows("gates", [row])

    def read_events(self) -> list[dict[str, Any]]:
        lines = (self.run_dir / "events.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    @_serialized
    def write_table(self, name: str, rows: list[dict[str, Any]]) -> Path:
        """tables/<name>.parquet holding exactly `rows` (replaces an earlier version)."""
        path = self.run_dir / "tables" / f"{_checked_name(name)}.parquet"
        tmp = path.with_suffix(".parquet.tmp")
        pd.DataFrame(rows).to_parquet(tmp, index=False)
        os.replace(tmp, path)
        return path

    @_serialized
    def append_rows(self, name: str, rows: list[dict[str, Any]]) -> Path:
        return self.write_table(name, self.read_table(name) + rows)

    def read_table(self, name: str) -> list[dict[str, Any]]:
        path = self.run_dir / "tables" / f"{_checked_name(name)}.parquet"
        return pd.read_parquet(path).to_dict("records") if path.exists() else []

    # ---- evidence ----

    @_serialized
    def add_evidence(self, name: str, kind: str, data: bytes | str, source: str | None = None) -> dict[str, Any]:
        """Store an immutable evidence file and list it in the manifest and RESULT.evidence.

        Same name + same bytes is a no-op; same name + different bytes is a StoreError, as is any
        write past the caps (10 MiB per file, 64 files, 40 MiB per run)."""
        name = _checked_name(name)
        payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        digest = hashlib.sha256(payload).hexdigest()
        manifest = self.read_manifest()
        for entry in manifest["files"]:
            if entry["name"] == name:
                if entry["sha256"] == digest:
                    return entry
                raise StoreError(f"evidence {name!r} already exists with other content; evidence names are immutable")
        if len(payload) > MAX_EVIDENCE_FILE_BYTES:
            raise StoreError(f"evidence {name!r} is {len(payload)} bytes; the cap is {MAX_EVIDENCE_FILE_BYTES} per file")
        if len(manifest["files"]) + 1 > MAX_EVIDENCE_FILES:
            raise StoreError(f"evidence {name!r} would be file {len(manifest['files']) + 1}; the cap is {MAX_EVIDENCE_FILES}")
        total = sum(entry["bytes"] for entry in manifest["files"]) + len(payload)
        if total > MAX_EVIDENCE_TOTAL_BYTES:
            raise StoreError(f"evidence {name!r} would bring the run to {total} bytes; the cap is {MAX_EVIDENCE_TOTAL_BYTES}")
        path = self.run_dir / "evidence" / name
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{name}.")
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        os.replace(tmp, path)
        entry = {"name": name, "kind": kind, "sha256": digest, "bytes": len(payload)}
        if source:
            entry["source"] = source
        manifest["files"].append(entry)
        _write_atomic(self.run_dir / "evidence" / "manifest.json", json.dumps(manifest, indent=2))
        result = self.read_result()
        evidence = result.setdefault("evidence", {"version": 1, "files": [], "checkpoints": [], "per_arm_metrics": {}})
        evidence.setdefault("files", []).append({"name": name, "kind": kind, "sha256": digest})
        self._write_result(result)
        self.append_event("evidence_added", name=name, kind=kind, sha256=digest, bytes=len(payload))
        return entry

    @_serialized
    def add_checkpoint(self, arm: str, step: int, uri: str) -> None:
        """List a checkpoint reference (a service URI, never weights) in RESULT.evidence.checkpoints."""
        result = self.read_result()
        evidence = result.setdefault("evidence", {"version": 1, "files": [], "checkpoints": [], "per_arm_metrics": {}})
        entry = {"arm": arm, "step": step, "uri": uri}
        if entry not in evidence.setdefault("checkpoints", []):
            evidence["checkpoints"].append(entry)
            self._write_result(result)
        self.append_event("checkpoint", **entry)

    def read_manifest(self) -> dict[str, Any]:
        return json.loads((self.run_dir / "evidence" / "manifest.json").read_text())


def _checked_name(name: str) -> str:
    if not _SAFE_NAME.match(name) or name == "manifest.json":
        raise StoreError(f"bad file name {name!r}: use letters, digits, '.', '_' or '-' (not manifest.json)")
    return name
