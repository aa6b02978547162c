"""Shared editing helpers for the rd3 run-directory mutation tests (test_mut_grading_run_dir_rd3*.py).

Each test starts from test_validation's consistent GS1 run (no problem) and changes one record or file the
way a broken pipeline or a tampering hand would, keeping the manifest and RESULT.evidence in step with a
rewritten evidence file so that only the change under test stands out."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, Callable

from test_validation import BASELINE, ITEM_IDS, TREATMENT, evaluator

from experiment.grading.run_dir import validate_run
from experiment.run.store import RunStore

EVAL_ID, PROVENANCE = evaluator()
PLAN, SPEC, OBSERVATIONS = "execution-plan.json", "spec.json", "scored-observations.jsonl"
# the builder's pattern (test_validation.arm_is_correct): the baseline solves items whose index % 3 != 0
# (16 of 24), the treatment those whose index % 4 != 0 (18 of 24)
BASELINE_MEAN, TREATMENT_MEAN = 16 / 24, 18 / 24


def copy_run(template: RunStore, tmp_path: Path, name: str = "runs") -> Path:
    runs = shutil.copytree(template.run_dir.parent, tmp_path / name)
    return runs / template.run_dir.name


def found(run_dir: Path, *prefixes: str) -> list[tuple[str, str]]:
    """The (check, message) pairs validate_run reports whose check starts with one of `prefixes`."""
    return [(p.check, p.message) for p in validate_run(run_dir) if p.check.startswith(prefixes)]


def read_result(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "result.json").read_text())


def edit_result(run_dir: Path, edit: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    result = read_result(run_dir)
    edit(result)
    (run_dir / "result.json").write_text(json.dumps(result, indent=2))
    return result


def read_manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "evidence" / "manifest.json").read_text())


def edit_manifest_entry(run_dir: Path, name: str, **fields: Any) -> None:
    manifest = read_manifest(run_dir)
    for entry in manifest["files"]:
        if entry["name"] == name:
            entry.update(fields)
    (run_dir / "evidence" / "manifest.json").write_text(json.dumps(manifest, indent=2))


def put_evidence(run_dir: Path, name: str, data: bytes | str, kind: str = "metrics") -> str:
    """Write evidence/`name` and list it with its sha256 in the manifest and RESULT.evidence (a new file is
    added with `kind`); returns the sha256."""
    payload = data.encode() if isinstance(data, str) else data
    digest = hashlib.sha256(payload).hexdigest()
    (run_dir / "evidence" / name).write_bytes(payload)
    manifest = read_manifest(run_dir)
    entries = [entry for entry in manifest["files"] if entry["name"] == name]
    if entries:
        entries[0].update(sha256=digest, bytes=len(payload))
    else:
        manifest["files"].append({"name": name, "kind": kind, "sha256": digest, "bytes": len(payload),
                                  "inline": True})
    (run_dir / "evidence" / "manifest.json").write_text(json.dumps(manifest, indent=2))

    def relist(result: dict[str, Any]) -> None:
        files = [item for item in result["evidence"]["files"] if item["name"] != name]
        files.append({"name": name, "kind": kind, "content": payload.decode(), "sha256": digest})
        result["evidence"]["files"] = files

    edit_result(run_dir, relist)
    return digest


def edit_json_evidence(run_dir: Path, name: str, edit: Callable[[dict[str, Any]], Any]) -> None:
    data = json.loads((run_dir / "evidence" / name).read_text())
    edit(data)
    put_evidence(run_dir, name, json.dumps(data, indent=2, sort_keys=True))


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def read_jsonl(run_dir: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "evidence" / name).read_text().splitlines() if line.strip()]


def append_gate_event(run_dir: Path, gate: str, status: str) -> None:
    """A later gate event: the gate's last recorded status becomes `status`."""
    event = {"ts": "2026-12-04T00:00:00+00:00", "event": "gate", "gate": gate, "status": status,
             "reasons": [f"{gate} {status}"], "measured": {}, "duration_s": 1.0}
    with (run_dir / "events.jsonl").open("a") as handle:
        handle.write(json.dumps(event) + "\n")


