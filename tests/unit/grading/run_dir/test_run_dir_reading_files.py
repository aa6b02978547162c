"""The run-directory layer's reading of a run directory (experiment/grading/run_dir.py, `RunFiles`): result.json,
the evidence manifest and which evidence counts as retained, gate statuses from events.jsonl and
tables/gates.parquet, the plan and spec from retained evidence or the spec file named by run_created, and the
observations cap. Expected findings follow docs/contract-rules.md (run.plan EVID-9, evidence.manifest EVID-8,
decision.observations_cap DEC-4) and docs/exchange-contract.md; issue 28 item 7 (the mutation run of grading/)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from suite import GS1_SPEC
from records import record_gate

from experiment.contract.plan import build_plan
from experiment.contract.spec import load_spec
from experiment.grading.decision import DEC_4
from experiment.grading.decision_rows import observation_rows
from experiment.grading.run_dir import RunDirError, RunFiles, Validator, run_validation
from experiment.run.store import RunStore

GS1_REVISION = GS1_SPEC.with_name(GS1_SPEC.name.replace(".json", ".plan.json"))


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A run with spec.json and execution-plan.json retained and four gates recorded (events and table)."""
    spec = load_spec(GS1_SPEC)
    plan = build_plan(spec)
    store = RunStore.create(tmp_path_factory.mktemp("rd1-files") / "runs", spec, plan)
    store.add_evidence("spec.json", "spec", GS1_SPEC.read_bytes())
    store.add_evidence("execution-plan.json", "effective_config", json.dumps(plan.to_dict(), sort_keys=True))
    store.add_evidence("notes.txt", "metrics", "retained\n")
    record_gate(store, "spec_intake", "passed", deviations=0)
    record_gate(store, "preflight_probe", "passed")
    record_gate(store, "generation_audit", "not_applicable")
    record_gate(store, "correctness_preflight", "failed")
    return store.run_dir


@pytest.fixture
def run_dir(template, tmp_path) -> Path:
    return Path(shutil.copytree(template, tmp_path / template.name))


def events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines() if line.strip()]


def write_events(run_dir: Path, rows: list[dict[str, Any]]) -> None:
    (run_dir / "events.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def set_created(run_dir: Path, **fields: Any) -> None:
    write_events(run_dir, [dict(row, **fields) if row.get("event") == "run_created" else row
                           for row in events(run_dir)])


def manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "evidence" / "manifest.json").read_text())


def list_evidence(run_dir: Path, name: str, data: bytes) -> None:
    """Write an evidence file and list it in the manifest (as a tampered or hand-made run would)."""
    path = run_dir / "evidence" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    current = manifest(run_dir)
    current["files"] = [entry for entry in current["files"] if entry["name"] != name] + [
        {"name": name, "kind": "metrics", "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}]
    (run_dir / "evidence" / "manifest.json").write_text(json.dumps(current))


def unlist_evidence(run_dir: Path, name: str) -> None:
    current = manifest(run_dir)
    current["files"] = [entry for entry in current["files"] if entry["name"] != name]
    (run_dir / "evidence" / "manifest.json").write_text(json.dumps(current))


def setup_problems(run_dir: Path) -> list[tuple[str, str]]:
    return [(p.check, p.message) for p in RunFiles.load(run_dir).setup_problems]


def spec_copy(tmp_path: Path, note: str | None = None) -> Path:
    """The GS1 spec and its plan file copied elsewhere; with `note`, the plan file's note changed (a different
    spec hash: the hash is of the canonical JSON of spec + plan file, so only a changed value changes it)."""
    folder = tmp_path / "specs"
    folder.mkdir(exist_ok=True)
    revision = json.loads(GS1_REVISION.read_text())
    if note is not None:
        revision["plan_file_note"] = note
    (folder / GS1_REVISION.name).write_text(json.dumps(revision))
    path = folder / GS1_SPEC.name
    path.write_bytes(GS1_SPEC.read_bytes())
    return path


# ---------------------------------------------------------------------------------------------
# result.json and the manifest


def test_the_template_reads_without_setup_problems(run_dir):
    files = RunFiles.load(run_dir)
    assert files.setup_problems == [] and files.plan is not None and files.spec is not None


def test_result_json_that_is_not_json_is_a_run_dir_error(run_dir):
    (run_dir / "result.json").write_text("{not json")
    with pytest.raises(RunDirError, match="cannot read RESULT"):
        run_validation(run_dir)
    (run_dir / "result.json").write_bytes(b'{"status": "\xff"}')
    with pytest.raises(RunDirError, match="cannot read RESULT"):
        run_validation(run_dir)


def test_result_json_with_a_key_written_twice_is_a_run_dir_error(run_dir):
    """RESULT read by the run-dir layer (the flow's decision gate grades a RESULT it holds plus its run directory):
    a "verdict" written twice, the forged one first, was read as the last (honest) one before."""
    text = (run_dir / "result.json").read_text()
    (run_dir / "result.json").write_text(text.replace("{", '{"verdict": "supported", ', 1)
                                         .replace('"status"', '"verdict": "refuted", "status"', 1))
    with pytest.raises(RunDirError, match="'verdict' is written twice"):
        run_validation(run_dir)


def test_result_json_that_is_no_object_is_a_run_dir_error(run_dir):
    (run_dir / "result.json").write_text("[]")
    with pytest.raises(RunDirError) as caught:
        run_validation(run_dir)
    assert str(caught.value) == f"{run_dir / 'result.json'}: RESULT must be a JSON object"


@pytest.mark.parametrize("data", [b"{not json", b'{"files": "\xff"}'])
def test_a_manifest_that_is_not_json_is_a_problem_not_an_error(run_dir, data):
    (run_dir / "evidence" / "manifest.json").write_bytes(data)
    report = run_validation(run_dir)
    assert [p.check for p in report.problems if "not valid JSON" in p.message] == ["evidence.manifest"]


# ---------------------------------------------------------------------------------------------
# retained evidence: listed in the manifest and present, a plain name


def test_retained_means_listed_and_present_under_a_plain_name(run_dir):
    (run_dir / "evidence" / "extra.txt").write_text("on disk, not listed\n")
    list_evidence(run_dir, "sub/nested.txt", b"listed, in a folder\n")
    list_evidence(run_dir, ".hidden.txt", b"listed, hidden\n")
    files = RunFiles.load(run_dir)
    assert files.evidence_bytes("notes.txt") == b"retained\n"
    for ref in ("notes.txt", "notes.txt#section", "notes.txt#a#b"):
        assert files.is_retained(ref) is True, ref
    for ref in ("extra.txt", "sub/nested.txt", ".hidden.txt", "missing.txt", "", None, 5, ["notes.txt"]):
        assert files.is_retained(ref) is False, ref
    for name in ("extra.txt", "sub/nested.txt", ".hidden.txt"):
        assert files.evidence_bytes(name) is None, name


# ---------------------------------------------------------------------------------------------
# gate status: the last gate event, else tables/gates.parquet


def test_gate_status_is_the_last_gate_event(run_dir):
    (run_dir / "tables" / "gates.parquet").unlink()
    rows = events(run_dir) + [
        {"event": "gate", "gate": "preflight_probe", "status": "failed"},
        # notes that carry a gate and a status, sorting before and after "gate", are no gate verdicts
        {"event": "a_note", "gate": "preflight_probe", "status": "passed"},
        {"event": "z_note", "gate": "preflight_probe", "status": "passed"},
        {"event": "a_note", "gate": "spec_intake", "status": "failed"},
        {"event": "z_note", "gate": "spec_intake", "status": "failed"},
    ]
    write_events(run_dir, rows)
    files = RunFiles.load(run_dir)
    assert files.gate_status("preflight_probe") == "failed"
    assert files.gate_status("spec_intake") == "passed" and files.gate_passed("spec_intake")
    assert files.gate_status("correctness_preflight") == "failed"
    assert files.gate_status("evaluation") is None


def test_gate_status_falls_back_to_the_gates_table(run_dir):
    write_events(run_dir, [row for row in events(run_dir) if row.get("event") != "gate"])
    files = RunFiles.load(run_dir)
    assert files.gate_status("spec_intake") == "passed"
    assert files.gate_status("generation_audit") == "not_applicable"
    assert files.gate_status("correctness_preflight") == "failed"
    assert files.gate_status("evaluation") is None


def test_the_gate_event_wins_over_the_table(run_dir):
    write_events(run_dir, events(run_dir) + [{"event": "gate", "gate": "preflight_probe", "status": "failed"}])
    assert RunFiles.load(run_dir).gate_status("preflight_probe") == "failed"  # the table says passed


def test_gate_status_from_the_table_is_that_gates_last_row(run_dir):
    write_events(run_dir, [row for row in events(run_dir) if row.get("event") != "gate"])
    # other gates' rows before and after, sorting before and after "feasibility_pilot"
    rows = [{"gate": "feasibility_pilot", "status": "passed"}, {"gate": "activation_gate", "status": "failed"},
            {"gate": "spec_intake", "status": "failed"}]
    pd.DataFrame(rows).to_parquet(run_dir / "tables" / "gates.parquet")
    files = RunFiles.load(run_dir)
    assert files.gate_status("feasibility_pilot") == "passed"
    assert files.gate_status("activation_gate") == "failed"
    assert files.gate_status("evaluation") is None


def test_an_unreadable_gates_table_gives_no_status(run_dir):
    write_events(run_dir, [row for row in events(run_dir) if row.get("event") != "gate"])
    (run_dir / "tables" / "gates.parquet").write_bytes(b"not parquet")
    assert RunFiles.load(run_dir).gate_status("spec_intake") is None
    assert [p.check for p in run_validation(run_dir).problems if p.check.endswith(".shape")] == []


# ---------------------------------------------------------------------------------------------
# plan and spec: retained evidence first, then the spec file named by run_created


def test_a_retained_spec_revision_is_applied(run_dir):
    list_evidence(run_dir, "spec-revision.plan.json", GS1_REVISION.read_bytes())
    files = RunFiles.load(run_dir)
    pinned = json.loads(GS1_REVISION.read_text())["correctness_preflight"]["paths"][0]["baseline_revision"]
    assert files.setup_problems == []
    assert files.spec["base_model"] == json.loads(GS1_SPEC.read_text())["base_model"]
    assert files.spec["correctness_preflight"]["paths"][0]["baseline_revision"] == pinned


def test_a_retained_revision_that_changes_a_stated_value_is_reported(run_dir):
    list_evidence(run_dir, "spec-revision.plan.json", json.dumps({"base_model": "Qwen/Qwen3-4B"}).encode())
    problems = setup_problems(run_dir)
    assert [check for check, message in problems if "retained spec revision does not apply" in message] == [
        "run.plan"]


def test_retained_plan_evidence_that_is_not_json_is_reported(run_dir):
    list_evidence(run_dir, "execution-plan.json", b"{not json")
    files = RunFiles.load(run_dir)
    assert [p.check for p in files.setup_problems] == ["run.plan"]
    assert "not valid JSON" in files.setup_problems[0].message
    assert files.plan is not None and files.plan["vocabulary"] == "direction_confidence"  # from the spec file


def test_retained_plan_and_spec_do_not_consult_the_spec_file(run_dir, tmp_path):
    changed = spec_copy(tmp_path, note="edited after the run started")
    assert load_spec(changed).source.sha256 != load_spec(GS1_SPEC).source.sha256
    set_created(run_dir, spec_path=str(changed))
    assert setup_problems(run_dir) == []
    set_created(run_dir, spec_path=str(spec_copy(tmp_path)))  # the same spec elsewhere: also fine
    assert setup_problems(run_dir) == []


def test_a_changed_spec_file_is_reported_when_it_is_consulted(run_dir, tmp_path):
    unlist_evidence(run_dir, "execution-plan.json")
    set_created(run_dir, spec_path=str(spec_copy(tmp_path, note="edited after the run started")))
    problems = setup_problems(run_dir)
    assert [check for check, message in problems if "changed since the run started" in message] == ["run.plan"]


def test_a_missing_retained_plan_is_built_from_the_spec_file(run_dir):
    unlist_evidence(run_dir, "execution-plan.json")
    files = RunFiles.load(run_dir)
    assert files.setup_problems == [] and files.plan["vocabulary"] == "direction_confidence"
    assert [arm["name"] for arm in files.plan["arms"]] == ["grpo_gs8", "gs1_kernel"]


def test_a_missing_retained_spec_is_read_from_the_spec_file(run_dir):
    unlist_evidence(run_dir, "spec.json")
    files = RunFiles.load(run_dir)
    assert files.setup_problems == [] and files.spec["base_model"] == json.loads(GS1_SPEC.read_text())["base_model"]


@pytest.mark.parametrize("unlisted", ["spec.json", "execution-plan.json"])
def test_one_retained_half_without_a_readable_spec_file_is_reported(run_dir, tmp_path, unlisted):
    unlist_evidence(run_dir, unlisted)
    set_created(run_dir, spec_path=str(tmp_path / "gone.json"))
    assert [check for check, message in setup_problems(run_dir) if message.startswith("neither")] == ["run.plan"]


@pytest.fixture
def bare_run(tmp_path) -> Path:
    """A run without retained spec or plan: only the spec file named by run_created tells them."""
    spec = load_spec(GS1_SPEC)
    return RunStore.create(tmp_path / "bare-runs", spec, build_plan(spec)).run_dir


def test_the_run_created_event_is_found_wherever_it_is(bare_run):
    write_events(bare_run, [{"event": "a_note", "text": "first"}, {"event": "zz_note", "text": "second"}]
                 + events(bare_run))
    files = RunFiles.load(bare_run)
    assert files.setup_problems == [] and files.spec is not None and files.plan is not None


@pytest.mark.parametrize("recorded", ["0" * 64, "f" * 64])  # below and above the file's real hash
def test_a_spec_file_whose_hash_differs_from_run_created_is_not_used(bare_run, recorded):
    set_created(bare_run, spec_sha256=recorded)
    problems = setup_problems(bare_run)
    assert [check for check, message in problems if "changed since the run started" in message] == ["run.plan"]
    assert RunFiles.load(bare_run).spec is None


def test_a_spec_file_that_cannot_be_loaded_is_reported(bare_run, tmp_path):
    broken = tmp_path / "broken-spec.json"
    broken.write_text("{not a spec")
    set_created(bare_run, spec_path=str(broken))
    problems = setup_problems(bare_run)
    assert [check for check, message in problems if "cannot be loaded" in message] == ["run.plan"]


# ---------------------------------------------------------------------------------------------
# the observations cap (DEC-4: at most 100 000 observations)


def observations_file(run_dir: Path, count: int) -> dict[str, str]:
    row = '{"arm":"a","item_id":"i%d","metric":"accuracy","seed":0,"value":1}\n'
    data = "".join(row % index for index in range(count)).encode()
    list_evidence(run_dir, f"observations-{count}.jsonl", data)
    return {"name": f"observations-{count}.jsonl", "sha256": hashlib.sha256(data).hexdigest()}


def test_the_observations_cap_is_100000(run_dir):
    """DEC-4's one implementation on the observations file read from the run directory's evidence/."""
    at_cap, over = observations_file(run_dir, 100_000), observations_file(run_dir, 100_001)
    for reference, count, flagged in ((at_cap, 100_000, False), (over, 100_001, True)):
        files = RunFiles.load(run_dir)
        files.result["decision"] = {"version": 1, "observations_file": reference}
        context = Validator(files).contract
        assert len(observation_rows(context)[0]) == count
        caps = [issue.message for issue in DEC_4(context)]
        assert caps == (["observations exceed 10 MiB or 100 000 rows"] if flagged else [])
