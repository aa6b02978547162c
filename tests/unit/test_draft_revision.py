"""`python -m flows.run SPEC --draft-revision` (experiment/contract/draft.py): the revision-file skeleton
of a new spec, each entry with its reason; an unfinished draft or an UNRESOLVED value never runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from experiment.contract import spec as spec_module
from experiment.contract.draft import DRAFT_KEY, FEATURES, write_draft
from experiment.contract.plan import build_plan
from experiment.contract.spec import SpecError, load_spec
from experiment.stats.update_tolerance import update_check_plan
from flows.run import main

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
NEW_SPEC = ROOT / "tests" / "fixtures" / "new_spec" / "dimuon_vs_adamw_no_robots.json"


def _copy(tmp_path: Path, source: Path, with_revision: bool = False) -> Path:
    target = tmp_path / source.name
    shutil.copy(source, target)
    if with_revision:
        shutil.copy(source.with_name(source.name.removesuffix(".json") + ".plan.json"),
                    tmp_path / (source.name.removesuffix(".json") + ".plan.json"))
    return target


def _fill(plan_path: Path) -> dict:
    """What a researcher writes into the new spec's draft (docs/new-spec.md, step 3)."""
    draft = json.loads(plan_path.read_text())
    draft["arms"][0]["name"], draft["arms"][1]["name"] = "dimuon_lite", "adamw"
    draft["arms"][1]["optimizer"] = "adamw"
    draft["experiment_features"] = {k: v is True or k == "paired_training_arms"
                                    for k, v in draft["experiment_features"].items()}
    criterion = draft["verdict_rule"]["criteria"][0]
    criterion["weights"], criterion["margin"] = {"adamw": 1, "dimuon_lite": -1}, 0.01
    del draft[DRAFT_KEY]
    plan_path.write_text(json.dumps(draft))
    return draft


def test_a_new_spec_gets_every_missing_entry_with_its_reason_and_the_draft_never_runs(tmp_path, capsys):
    spec_path = _copy(tmp_path, NEW_SPEC)
    with pytest.raises(SpecError, match="expected companion plan file"):
        load_spec(spec_path)
    assert main([str(spec_path), "--draft-revision"]) == 0
    out = capsys.readouterr().out
    plan_path = tmp_path / "dimuon_vs_adamw_no_robots.plan.json"
    assert f"wrote {plan_path}" in out
    draft = json.loads(plan_path.read_text())
    fields = {item["field"] for item in draft[DRAFT_KEY]}
    assert {"arms", "arms[treatment].lr_grid", "arms[baseline].lr_grid", "verdict_rule",
            "correctness_preflight.required"} <= fields
    assert {f"experiment_features.{name}" for name in FEATURES} <= fields
    assert all(item["why"] and item["action"] in ("add", "pin") for item in draft[DRAFT_KEY])
    assert [arm["role"] for arm in draft["arms"]] == ["treatment", "baseline"]
    assert draft["arms"][0]["optimizer"] == "dimuon"  # proposed from the spec's optimizer.name
    assert draft["arms"][0]["lr_grid"] == [5e-05, 0.0001, 0.0002]
    # as written the draft is refused at load, with what to do (exit 2, one line)
    assert main([str(spec_path), "--plan"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unfinished draft" in err and "\n" not in err

    _fill(plan_path)
    plan = build_plan(load_spec(spec_path))
    assert plan.role_to_arm["treatment"]["arm"] == "dimuon_lite" and plan.role_to_arm["baseline"]["arm"] == "adamw"
    assert [run.name for run in plan.training_runs][:3] == ["dimuon_lite@lr=5e-05", "dimuon_lite@lr=0.0001",
                                                           "dimuon_lite@lr=0.0002"]
    assert plan.gate("correctness_preflight").applicable is False
    assert main([str(spec_path), "--draft-revision"]) == 0
    assert "nothing to add or pin" in capsys.readouterr().out


def test_a_value_left_unresolved_in_a_revision_is_refused_before_anything_runs(tmp_path, monkeypatch):
    spec_path = _copy(tmp_path, NEW_SPEC)
    write_draft(spec_path)
    plan_path = tmp_path / "dimuon_vs_adamw_no_robots.plan.json"
    draft = _fill(plan_path)
    draft["verdict_rule"]["criteria"][0]["margin"] = "UNRESOLVED: the margin"
    plan_path.write_text(json.dumps(draft))
    # weakened: without the check the open margin loads and plans; it would fail only at the decision, after training
    monkeypatch.setattr(spec_module, "_unresolved_paths", lambda value, where="": [])
    assert build_plan(load_spec(spec_path)).spec_title
    monkeypatch.undo()
    with pytest.raises(SpecError) as refused:
        load_spec(spec_path)
    assert "verdict_rule.criteria[0].margin" in str(refused.value) and "UNRESOLVED" in str(refused.value)


def test_an_optimizer_path_is_drafted_with_the_written_analysis_at_the_sweep(tmp_path):
    spec_path = _copy(tmp_path, SPECS / "trimuon_vs_dimuon_no_robots.json", with_revision=True)
    plan_path = tmp_path / "trimuon_vs_dimuon_no_robots.plan.json"
    revision = json.loads(plan_path.read_text())
    del revision["correctness_preflight"]
    plan_path.write_text(json.dumps(revision))
    target, items = write_draft(spec_path)
    assert target.name == "trimuon_vs_dimuon_no_robots.plan.draft.json"  # the revision file is left as it is
    assert [item["field"] for item in items] == ["correctness_preflight.paths"]
    path = json.loads(target.read_text())["correctness_preflight"]["paths"][0]
    assert path["kind"] == "optimizer" and path["reference_revision"].startswith("sha256:")
    assert path["baseline_revision"].startswith("UNRESOLVED")
    assert path["tolerances"] == update_check_plan([5e-05, 0.0001, 0.0002], 32)["tolerances"]


def test_roles_the_plan_would_infer_are_proposed_and_unresolved_revisions_asked_for(tmp_path):
    spec_path = _copy(tmp_path, SPECS / "gs1_kernel_vs_grpo_gsm8k.json")
    inferred = build_plan(load_spec(SPECS / "gs1_kernel_vs_grpo_gsm8k.json"))
    target, items = write_draft(spec_path)
    draft = json.loads(target.read_text())
    proposed = {arm["name"]: arm["role"] for arm in draft["arms"]}
    assert proposed == {entry["arm"]: role for role, entry in inferred.role_to_arm.items()}
    assert set(draft["correctness_revisions"]["gs1_kernel_advantage_loop"]) == {"baseline_revision", "reference_revision"}
    assert "correctness_revisions" in {item["field"] for item in items}


@pytest.mark.parametrize("name", ["selfgen_tasks_vs_gsm8k", "trimuon_vs_dimuon_no_robots"])
def test_the_seed_specs_with_their_revisions_need_nothing(tmp_path, name):
    assert write_draft(_copy(tmp_path, SPECS / f"{name}.json", with_revision=True)) == (None, [])


def test_gs1_with_its_revision_still_has_its_inferred_roles_to_confirm(tmp_path):
    _, items = write_draft(_copy(tmp_path, SPECS / "gs1_kernel_vs_grpo_gsm8k.json", with_revision=True))
    assert sorted(item["field"] for item in items) == ["arms[grpo_gs8].role", "arms[gs1_kernel].role"]


@pytest.mark.parametrize("content, message", [
    (None, "no such file"), ("[1]", "must be a JSON object"), ("{not json", "JSON"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, content, message):
    spec_path = tmp_path / "spec.json"
    if content is not None:
        spec_path.write_text(content)
    assert main([str(spec_path), "--draft-revision"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err


def test_a_revision_file_passed_as_the_spec_is_refused(tmp_path, capsys):
    plan_path = _copy(tmp_path, SPECS / "trimuon_vs_dimuon_no_robots.plan.json")
    assert main([str(plan_path), "--draft-revision"]) == 2
    assert "revision file" in capsys.readouterr().err
