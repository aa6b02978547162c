"""`python -m flows.run SPEC --draft-revision` (experiment/contract/draft.py): the revision-file skeleton
of a new spec, each entry with its reason; an unfinished draft or an UNRESOLVED value never runs."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
from pathlib import Path

import pytest

from experiment.contract import spec as spec_module
from experiment.contract import support as support_module
from experiment.contract.draft import DRAFT_KEY, FEATURES, write_draft
from experiment.contract.plan import build_plan
from experiment.contract.spec import SpecError, load_spec
from experiment.contract.spec_prose import sdk_defaults
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
    """What a researcher does with the new spec's draft (docs/new-spec.md, step 3): confirms what it proposes."""
    draft = json.loads(plan_path.read_text())
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
    assert {"arms", "arms[dimuon_lite].lr_grid", "arms[adamw].lr_grid", "verdict_rule",
            "correctness_preflight.required"} <= fields
    assert {f"experiment_features.{name}" for name in FEATURES} <= fields
    assert all(item["why"] and item["action"] in ("add", "pin") for item in draft[DRAFT_KEY])
    # the arms the method and baseline texts describe: "Treatment dimuon-lite ..., baseline AdamW (beta1 0.9, beta2 0.95)"
    assert [(arm["name"], arm["role"], arm["optimizer"]) for arm in draft["arms"]] == [
        ("dimuon_lite", "treatment", {"family": "dimuon", "config": sdk_defaults("dimuon")}),
        ("adamw", "baseline", {"family": "adamw", "config": {**sdk_defaults("adamw"), "beta1": 0.9, "beta2": 0.95}})]
    assert draft["arms"][0]["lr_grid"] == [5e-05, 0.0001, 0.0002]  # "a grid around 1e-4": optimizer.lr x factors
    assert draft["verdict_rule"]["criteria"][0]["margin"] == 0.01  # "at least 0.01 nats below"
    # as written the draft is refused at load, with what to do (exit 2, one line)
    assert main([str(spec_path), "--plan"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unfinished draft" in err and "\n" not in err

    _fill(plan_path)  # one pass: the draft as proposed plans
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
    monkeypatch.setattr(support_module, "check_stated_terms", lambda spec: None)  # which refuses a non-number margin
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
    # proposed: the installed SDK and the baseline arm, as the recorded revision pins it
    assert path["baseline_revision"] == f"tinker=={importlib.metadata.version('tinker')} dimuon-lite on the stock " \
                                       "service; the fork commit is recorded by the run"
    assert path["precision"] == "fork: FP16 polar core, TF32 disabled; reference: float64"  # the method's words
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


def test_the_trimuon_spec_alone_is_drafted_in_one_pass_with_the_arms_its_text_describes(tmp_path):
    """Before: two generic arms (the baseline's optimizer UNRESOLVED), so its correctness path appeared only on a
    second pass. Now the method and baseline texts give the recorded revision's arms, and the draft as proposed
    plans at once."""
    spec_path = _copy(tmp_path, SPECS / "trimuon_vs_dimuon_no_robots.json")
    recorded = json.loads((SPECS / "trimuon_vs_dimuon_no_robots.plan.json").read_text())
    target, items = write_draft(spec_path)
    draft = json.loads(target.read_text())
    keys = ("name", "role", "optimizer", "lr_grid", "service")
    assert [{k: arm[k] for k in keys} for arm in draft["arms"]] == [{k: arm[k] for k in keys} for arm in recorded["arms"]]
    assert "correctness_preflight.paths" in {item["field"] for item in items}
    assert draft["verdict_rule"]["criteria"][0]["margin"] == recorded["verdict_rule"]["criteria"][0]["margin"]
    assert not [item for item in items if item["action"] in ("check", "fix")]  # --plan's checks ran and passed
    _fill(target)
    assert build_plan(load_spec(spec_path)).role_to_arm["treatment"]["arm"] == "trimuon"
    assert write_draft(spec_path) == (None, [])


def _stock_rl_spec(tmp_path: Path) -> Path:
    """GRPO at two learning rates on GSM8K: stock loss and optimizer, no preflight sections, every feature stated."""
    spec = json.loads((SPECS / "gs1_kernel_vs_grpo_gsm8k.json").read_text())
    for key in ("correctness_preflight", "activation_gate", "restoration_preflight", "preflight", "feasibility",
                "feasibility_check", "command"):
        spec.pop(key, None)
    spec["arms"] = [{"name": "grpo_lr4", "role": "baseline", "advantage": "group_mean", "group_size": 8,
                     "groups_per_batch": 8, "lr": 4e-05, "seed": 0},
                    {"name": "grpo_lr8", "role": "treatment", "advantage": "group_mean", "group_size": 8,
                     "groups_per_batch": 8, "lr": 8e-05, "seed": 0}]
    spec["experiment_features"] = {name: name in ("paired_comparison", "paired_training_arms") for name in FEATURES}
    spec["correctness_preflight"] = {"required": False, "paths": [], "reason": "stock loss and optimizer"}
    path = tmp_path / "grpo_lr_gsm8k.json"
    path.write_text(json.dumps(spec))
    return path


def test_a_stock_only_rl_spec_gets_the_restoration_group_plan_asks_for(tmp_path, capsys):
    """Before: "nothing to add or pin", then --plan refused: "trained arms grpo_lr4, grpo_lr8 are in no restoration
    group" (the group, with each arm's optimizer_config, written by hand)."""
    spec_path = _stock_rl_spec(tmp_path)
    assert main([str(spec_path), "--plan"]) == 2
    assert "in no restoration group" in capsys.readouterr().err
    target, items = write_draft(spec_path)
    assert [item["field"] for item in items] == ["restoration_preflight.groups"]
    group = json.loads(target.read_text())["restoration_preflight"]["groups"][0]["arms"]
    assert [(m["name"], m["optimizer"], m["optimizer_config"]["learning_rate"]) for m in group] == [
        ("grpo_lr4", "adamw", 4e-05), ("grpo_lr8", "adamw", 8e-05)]
    _fill(target)
    assert build_plan(load_spec(spec_path)).gate("restoration_preflight").applicable is True
    assert write_draft(spec_path) == (None, [])


def test_a_margin_the_spec_leaves_open_is_pinned_from_its_success_criterion(tmp_path, capsys):
    """Before: refused with pydantic's words ("Input should be a valid number ...") and not drafted."""
    spec_path = _copy(tmp_path, SPECS / "gs1_kernel_vs_grpo_gsm8k.json", with_revision=True)
    spec = json.loads(spec_path.read_text())
    spec["decision_rule"]["criteria"][0]["margin"] = "UNRESOLVED: the noninferiority margin"
    spec_path.write_text(json.dumps(spec))
    assert main([str(spec_path), "--plan"]) == 2
    err = capsys.readouterr().err.strip()
    assert "decision_rule.criteria[0].margin" in err and "pin it in the spec's revision file" in err and "\n" not in err
    target, items = write_draft(spec_path)
    pinned = json.loads(target.read_text())["decision_rule"]["criteria"]
    assert pinned == [{"id": "primary", "margin": -0.03}]  # "must exceed -0.03 (noninferiority margin of 3 points)"
    assert "decision_rule.criteria[0].margin" in {item["field"] for item in items}


def test_a_draft_that_plan_would_refuse_says_so_with_the_refusal(tmp_path):
    """Before: the draft listed the roles to confirm and nothing of the refusal waiting at --plan."""
    spec_path = _copy(tmp_path, SPECS / "gs1_kernel_vs_grpo_gsm8k.json", with_revision=True)
    spec = json.loads(spec_path.read_text())
    spec["decision_rule"]["method"] = "paired_bootstrap_bca"
    spec_path.write_text(json.dumps(spec))
    _, items = write_draft(spec_path)
    fix = [item for item in items if item["action"] == "fix"]
    assert len(fix) == 1 and fix[0]["field"] == "decision_rule.method"
    assert "--plan refuses the spec" in fix[0]["why"] and "paired_hoeffding" in fix[0]["why"]


def test_the_selfgen_spec_alone_gets_its_arm_data_from_the_arms_data_texts(tmp_path):
    """Before: every arm_data entry UNRESOLVED. The arms' data texts name their source as the recorded revision
    maps it ("640 audited Qwen3.5-2B-generated tasks" -> generated_tasks)."""
    spec_path = _copy(tmp_path, SPECS / "selfgen_tasks_vs_gsm8k.json")
    recorded = json.loads((SPECS / "selfgen_tasks_vs_gsm8k.plan.json").read_text())
    target, items = write_draft(spec_path)
    assert json.loads(target.read_text())["arm_data"] == recorded["arm_data"]
    assert not [item for item in items if item["action"] in ("check", "fix")]
