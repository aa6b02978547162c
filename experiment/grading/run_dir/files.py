"""Reading a run directory: result.json, events.jsonl, evidence/ and its manifest, the plan and spec the run
executed; the findings' types and small readers the checks share."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from experiment.contract.plan import draft_plan
from experiment.contract.spec import SpecError, apply_revision, load_spec
from experiment.contract import run_layout
from experiment.contract.run_layout import GATES_TABLE, events_path, evidence_path, result_path, table_path
from experiment.grading.common import HEX64, as_dict
from experiment.grading.evidence import each_key_once
from experiment.grading.registry import run_dir_checks


MAX_OBSERVATIONS = 100_000
# Which gate produces which RESULT section (a missing section is a problem only once that gate passed).
SECTION_GATES = {
    "correctness_preflight": "correctness_preflight",
    "initialization_provenance": "restoration_preflight",
    "feasibility": "feasibility_pilot",
    "generation_audit": "generation_audit",
    "evaluation": "evaluation",
    "loss_eval": "evaluation",
    "decision": "decision",
    "adaptation_manifests": "arm_training",
}


class RunDirError(ValueError):
    """The path is not a run directory that can be validated (one line, no traceback)."""


@dataclass(frozen=True)
class Problem:
    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"


@dataclass
class ValidationReport:
    problems: list[Problem] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)  # the check groups that ran

    @property
    def ok(self) -> bool:
        return not self.problems


def validation_summary(problems: list[Problem]) -> dict[str, Any]:
    """A JSON-ready summary for embedding in RESULT (e.g. under `evidence` or `validation`)."""
    return {
        "version": 1,
        "status": "failed" if problems else "passed",
        "problem_count": len(problems),
        "failed_checks": sorted({problem.check for problem in problems}),
        "problems": [str(problem) for problem in problems],
    }


# ---------------------------------------------------------------------------------------------
# reading the run directory


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=each_key_once)
    except (OSError, UnicodeDecodeError, ValueError) as err:  # not JSON, or a key written twice (two readings)
        raise RunDirError(f"{path}: cannot read {what} ({type(err).__name__}: {err})") from None


def read_event_lines(run_dir: Path) -> tuple[list[dict[str, Any]], list[int], list[int]]:
    """events.jsonl of a run directory: its events (the lines that are JSON objects, in order), the numbers of
    the lines that are not JSON, and of those that are JSON but no object; nothing without the file."""
    events: list[dict[str, Any]] = []
    not_json: list[int] = []
    not_objects: list[int] = []
    path = events_path(run_dir)
    if not path.is_file():
        return events, not_json, not_objects
    for number, line in enumerate(_lines(path), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            not_json.append(number)
            continue
        if isinstance(event, dict):
            events.append(event)
        else:
            not_objects.append(number)
    return events, not_json, not_objects


def _lines(path: Path) -> Iterator[str]:
    """The file's lines as `read_text(encoding="utf-8", errors="replace").splitlines()` gives them, read one
    line at a time (streamed: the file's text is never held whole)."""
    with open(path, encoding="utf-8", errors="replace") as handle:
        for physical in handle:
            yield from physical.splitlines()


@dataclass
class RunFiles:
    run_dir: Path
    result: dict[str, Any]
    events: list[dict[str, Any]]
    bad_event_lines: list[int]
    manifest: dict[str, Any] | None
    plan: dict[str, Any] | None
    spec: dict[str, Any] | None
    setup_problems: list[Problem]

    @classmethod
    @run_dir_checks(
        ("run", "EVID-8", "the path is not a run directory that can be read (no result.json, bad JSON)"),
        ("evidence.manifest", "EVID-8", "evidence/manifest.json is missing or not JSON"),
    )
    def load(cls, run_dir: Path) -> RunFiles:
        if not run_dir.is_dir():
            raise RunDirError(f"{run_dir}: no such directory")
        if not result_path(run_dir).is_file():
            raise RunDirError(f"{run_dir} is not a run directory (no result.json)")
        result = _read_json(result_path(run_dir), "RESULT")
        if not isinstance(result, dict):
            raise RunDirError(f"{result_path(run_dir)}: RESULT must be a JSON object")
        events, not_json, not_objects = read_event_lines(run_dir)
        bad_lines = sorted(not_json + not_objects)
        manifest_path = run_layout.manifest_path(run_dir)
        manifest = None
        setup: list[Problem] = []
        if manifest_path.is_file():
            try:
                manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as err:
                setup.append(Problem("evidence.manifest", f"evidence/manifest.json is not valid JSON ({err})"))
            if manifest is not None and not isinstance(manifest, dict):
                setup.append(Problem("evidence.manifest", "evidence/manifest.json is not a JSON object"))
                manifest = None
        else:
            setup.append(Problem("evidence.manifest", "evidence/manifest.json is missing"))
        run = cls(run_dir, result, events, bad_lines, manifest, None, None, setup)
        run.plan, run.spec = run._load_plan_and_spec()
        return run

    # ---- evidence ----

    @property
    def evidence_entries(self) -> list[dict[str, Any]]:
        files = (self.manifest or {}).get("files")
        return [entry for entry in files if isinstance(entry, dict)] if isinstance(files, list) else []

    @property
    def evidence_names(self) -> set[str]:
        return {str(entry.get("name")) for entry in self.evidence_entries}

    def manifest_sha256(self, name: str) -> str | None:
        for entry in self.evidence_entries:
            if entry.get("name") == name:
                return entry.get("sha256")
        return None

    def evidence_bytes(self, name: str) -> bytes | None:
        """The bytes of a retained evidence file (listed in the manifest and present), else None."""
        if name not in self.evidence_names or "/" in name or name.startswith("."):
            return None
        path = evidence_path(self.run_dir, name)
        return path.read_bytes() if path.is_file() else None

    def is_retained(self, ref: Any) -> bool:
        """A reference `name` or `name#fragment` naming a file listed in the manifest and present."""
        if not isinstance(ref, str) or not ref:
            return False
        name = ref.split("#", 1)[0]
        return self.evidence_bytes(name) is not None

    # ---- gates ----

    def gate_status(self, gate: str) -> str | None:
        """The last recorded status of a gate (events first, then tables/gates.parquet)."""
        status = None
        for event in self.events:
            if event.get("event") == "gate" and event.get("gate") == gate:
                status = event.get("status")
        if status is None:
            table = table_path(self.run_dir, GATES_TABLE)
            if table.is_file():
                try:
                    for row in pd.read_parquet(table).to_dict("records"):
                        if row.get("gate") == gate:
                            status = row.get("status")
                except (OSError, ValueError):
                    return None
        return status

    def gate_passed(self, gate: str) -> bool:
        return self.gate_status(gate) == "passed"

    # ---- plan and spec ----

    @run_dir_checks(
        ("run.plan", "EVID-9", "neither the retained spec/plan nor the spec file named by run_created can be read"),
    )
    def _load_plan_and_spec(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        plan = spec = None
        plan_bytes = self.evidence_bytes("execution-plan.json")
        spec_bytes = self.evidence_bytes("spec.json")
        try:
            if plan_bytes is not None:
                plan = _json_object(plan_bytes, "execution-plan.json")
            rehearsed = self.evidence_bytes("rehearsal-spec.json")  # a rehearsal ran this spec, not the file
            if rehearsed is not None:
                spec = _json_object(rehearsed, "rehearsal-spec.json")
            elif spec_bytes is not None:
                spec = _json_object(spec_bytes, "spec.json")
                revision = self.evidence_bytes("spec-revision.plan.json")
                if revision is not None:
                    spec = apply_revision(spec, _json_object(revision, "spec-revision.plan.json"))[0]
        except SpecError as err:
            self.setup_problems.append(Problem("run.plan", f"retained spec revision does not apply ({err})"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            self.setup_problems.append(Problem("run.plan", f"retained spec or plan evidence is not valid JSON ({err})"))
        except _NotAnObject as err:
            self.setup_problems.append(Problem("run.plan", f"retained {err}"))
        if plan is None or spec is None:
            loaded_plan, loaded_spec = self._plan_from_spec_path()
            plan = plan if plan is not None else loaded_plan
            spec = spec if spec is not None else loaded_spec
        if plan is None or spec is None:
            self.setup_problems.append(
                Problem(
                    "run.plan",
                    "neither the retained spec/plan evidence (spec.json, execution-plan.json) nor the spec file named by "
                    "run_created could be read; plan-dependent checks were skipped",
                )
            )
        return plan, spec

    def _plan_from_spec_path(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        created = next((event for event in self.events if event.get("event") == "run_created"), None)
        spec_path = created.get("spec_path") if created else None
        if not isinstance(spec_path, str) or not spec_path or not Path(spec_path).is_file():
            return None, None
        try:
            spec = load_spec(spec_path, rehearse=bool(created.get("rehearsal")))
            if created.get("spec_sha256") and spec.source.sha256 != created["spec_sha256"]:
                self.setup_problems.append(
                    Problem(
                        "run.plan",
                        f"spec file {spec_path} changed since the run started (hash differs); plan checks skipped",
                    )
                )
                return None, None
            return draft_plan(spec).to_dict(), spec.to_dict()
        except (SpecError, OSError) as err:
            self.setup_problems.append(Problem("run.plan", f"spec {spec_path} cannot be loaded: {err}"))
            return None, None


# ---------------------------------------------------------------------------------------------
# small helpers


class _NotAnObject(Exception):
    """Retained JSON evidence that parses but is no object (a tampered spec, plan or revision)."""


def _json_object(data: bytes, name: str) -> dict[str, Any]:
    value = json.loads(data)
    if not isinstance(value, dict):
        raise _NotAnObject(f"{name} is not a JSON object")
    return value


def text_key(value: Any) -> str:
    """A dict key for a value read from a record (ids may be of any JSON type in a broken record)."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def explicit_item_ids(provenance: Any) -> list[str] | None:
    """The evaluator's items.ids when it is an explicit list of strings, else None."""
    ids = as_dict(as_dict(provenance).get("items")).get("ids")
    if isinstance(ids, list) and all(isinstance(item, str) for item in ids):
        return ids
    return None


def is_hex64(value: Any) -> bool:
    return isinstance(value, str) and bool(HEX64.match(value))


def jsonl_rows(data: bytes, name: str) -> tuple[list[dict[str, Any]], str | None]:
    rows = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [], f"{name} is not UTF-8"
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            return rows, f"{name} line {number} is not valid JSON"
        if not isinstance(row, dict):
            return rows, f"{name} line {number} is not a JSON object"
        rows.append(row)
    return rows, None
