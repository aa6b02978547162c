"""Rehearsal scale and recorded revision files (issue 12).

The seed specs rehearse from the spec as written plus its revision file: the rules of
experiment/contract/rehearsal.py are applied, every changed field is a deviation, and the rehearsal
has its own spec hash (never mistaken for, or resumed as, the production run). The revision files
may add structure and pin what the spec marks UNRESOLVED, never change a stated value.
"""

from __future__ import annotations

import json
import shutil
import typing
from pathlib import Path

import pytest

from spec_variants import variant, write_variant
from suite import GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC
from experiment.contract import rehearsal as rules
from experiment.contract.plan import build_plan, draft_plan
from experiment.contract.result import DEVIATION_FIELDS
from experiment.contract.result_models import Deviation
from experiment.contract.spec import SpecError, load_spec, plan_file_path
from experiment.data import DATA_DIRS_ENV

SEED_SPECS = [GS1_SPEC, SELFGEN_SPEC, TRIMUON_SPEC]


def _flatten(value, prefix=""):
    """{dotted path: leaf} with list items keyed by their name/id, as deviations name them."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else key))
        return out
    if isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
        out = {}
        for index, item in enumerate(value):
            out.update(_flatten(item, f"{prefix}[{item.get('name', item.get('id', index))}]"))
        return out
    return {prefix: value}


@pytest.mark.parametrize("path", SEED_SPECS, ids=lambda p: p.stem)
def test_every_substitution_is_a_deviation(path):
    written = load_spec(path)
    rehearsed = load_spec(path, rehearse=True)
    record = rehearsed.source.rehearsal
    assert record["rehearsal"] is True and record["note"] == rules.NOT_FOR_SUBMISSION
    assert record["substitution_count"] == len(record["substitutions"]) == len(record["deviations"]) > 0
    before, after = _flatten(written.to_dict()), _flatten(rehearsed.to_dict())
    changed = {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}
    named = [s["setting"] for s in record["substitutions"]]
    for key in changed:  # each changed leaf is, or lies under, a field some deviation names
        assert any(key == f or key.startswith(f + ".") or key.startswith(f + "[") for f in named), key
    for substitution, deviation in zip(record["substitutions"], record["deviations"]):
        assert set(deviation) == {"field", "original", "effective", "reason"}  # the contract's shape
        assert deviation["field"] == substitution["field"] in set(DEVIATION_FIELDS) - {"objective", "endpoint"}
        assert deviation["reason"].startswith(f"rehearsal: {substitution['setting']}: ")
        assert all(isinstance(deviation[key], str) for key in deviation)
    assert rehearsed.source.sha256 != written.source.sha256
    assert rehearsed.base_model == rules.EMBEDDED_MODEL and rehearsed.title == written.title
    assert build_plan(rehearsed).rehearsal == record


@pytest.mark.parametrize("path", SEED_SPECS, ids=lambda p: p.stem)
def test_datasets_become_the_stand_in_of_the_same_kind(path):
    rehearsed = load_spec(path, rehearse=True).to_dict()
    key = "no_robots" if "no_robots" in path.stem else "gsm8k"
    stand_in = rules.STAND_INS[key]
    assert rehearsed["dataset"]["path"] == stand_in.train and rehearsed["eval"]["path"] == stand_in.test
    assert "hf_path" not in rehearsed["dataset"]
    assert rehearsed["eval"]["n_examples"] <= stand_in.max_eval


def test_rl_scale_follows_the_written_rules():
    written, rehearsed = load_spec(GS1_SPEC).to_dict(), load_spec(GS1_SPEC, rehearse=True).to_dict()
    steps = min(written["steps"], rules.RL_ARM_STEP_BUDGET // 2)
    assert rehearsed["steps"] == steps
    assert rehearsed["dataset"]["n_examples"] == steps * max(a["groups_per_batch"] for a in written["arms"])
    factor = rules.CALIBRATED_LR["rl"] / written["optimizer"]["lr"]
    for before, after in zip(written["arms"], rehearsed["arms"]):
        assert after["lr"] == pytest.approx(before["lr"] * factor)
        assert after["group_size"] == before["group_size"]  # the design is kept
    assert rehearsed["rollout"]["max_tokens"] == rules.STAND_INS["gsm8k"].max_tokens
    assert rehearsed["correctness_preflight"] == written["correctness_preflight"]  # tolerances and pins unchanged


def test_selfgen_scale_halves_the_arm_steps_and_follows_the_pool():
    written, rehearsed = load_spec(SELFGEN_SPEC).to_dict(), load_spec(SELFGEN_SPEC, rehearse=True).to_dict()
    steps = min(written["steps"], rules.RL_ARM_STEP_BUDGET // 2 // 2)
    assert rehearsed["steps"] == steps
    rollouts = max(a.get("group_size", 8) * a["groups_per_batch"] for a in written["arms"] if a["trained"])
    groups = [a["groups_per_batch"] * min(1, rules.RL_MAX_ROLLOUTS_PER_STEP / rollouts) for a in written["arms"]
              if a["trained"]]
    assert [a["groups_per_batch"] for a in rehearsed["arms"] if a["trained"]] == [int(g) for g in groups]
    assert rehearsed["generation"]["n_accept"] == rehearsed["dataset"]["n_examples"] == steps * int(max(groups))
    assert rehearsed["generation"]["generator_model"] == rules.EMBEDDED_GENERATOR


def test_sft_grid_keeps_its_spacing():
    written, rehearsed = load_spec(TRIMUON_SPEC).to_dict(), load_spec(TRIMUON_SPEC, rehearse=True).to_dict()
    for before, after in zip(written["arms"], rehearsed["arms"]):
        ratios = [b / before["lr_grid"][0] for b in before["lr_grid"]]
        assert [a / after["lr_grid"][0] for a in after["lr_grid"]] == pytest.approx(ratios)
        assert after["steps"] == min(before["steps"], rules.SFT_RUN_STEP_BUDGET // 6)
    assert rehearsed["batch_size"] <= rules.SFT_MAX_BATCH


def test_a_dataset_without_a_stand_in_cannot_be_rehearsed(tmp_path):
    spec = json.loads(GS1_SPEC.read_text())
    spec["dataset"] = {"name": "math500", "hf_path": "hendrycks/math", "n_examples": 500}
    path = tmp_path / "math.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(SpecError, match="no local stand-in for 'math500'"):
        load_spec(path, rehearse=True)


@pytest.mark.parametrize("name, seed", [("dataset-own-chat-files", "trimuon"), ("eval-own-task-file", "gs1")])
def test_the_researchers_own_data_files_are_used_as_given_and_scaled(tmp_path, monkeypatch, name, seed):
    """Issue 46: SFT on local chat JSONL was refused at --rehearse ("no local stand-in for 'hg arithmetic chat'"),
    and an RL eval.path was swapped for the stand-in's test split. A local file is used as given, scaled by the
    rules (its item count caps eval.n_examples), and named in the record's local_data, never a substitution."""
    monkeypatch.setenv(DATA_DIRS_ENV, str(tmp_path))
    path = write_variant(variant(name, seed), tmp_path)
    written = json.loads(path.read_text())
    rehearsed = load_spec(path, rehearse=True, rehearsal_scale="wiring")
    record = rehearsed.source.rehearsal
    own = {section: written[section]["path"] for section in ("dataset", "eval") if "path" in written[section]}
    assert record["local_data"] == own
    for section, file in own.items():
        assert rehearsed.to_dict()[section]["path"] == file
        assert not [d for d in record["substitutions"] if d["setting"] in (f"{section}.path", f"{section}.name",
                                                                           f"{section}.benchmark")]
    assert rehearsed.eval.n_examples <= sum(1 for _ in open(own["eval"]))


# ---- recorded revision files ----


def test_gs1_revision_pins_the_unresolved_correctness_revisions():
    spec = load_spec(GS1_SPEC)
    written = json.loads(GS1_SPEC.read_text())
    revision = spec.source.revision
    assert revision is not None and revision.path == str(plan_file_path(GS1_SPEC))
    assert set(revision.resolved) == {
        "correctness_preflight.status",
        "correctness_preflight.paths[gs1_kernel_advantage_loop].baseline_revision",
        "correctness_preflight.paths[gs1_kernel_advantage_loop].reference_revision",
    }
    path = spec.to_dict()["correctness_preflight"]["paths"][0]
    assert "UNRESOLVED" not in json.dumps(spec.to_dict()["correctness_preflight"])
    assert path["tolerances"] == written["correctness_preflight"]["paths"][0]["tolerances"]
    assert build_plan(spec).gate("correctness_preflight").details["revisions_unresolved"] is False


def test_gs1_alone_keeps_its_revisions_unresolved(tmp_path):
    alone = tmp_path / GS1_SPEC.name
    shutil.copy(GS1_SPEC, alone)
    spec = load_spec(alone)
    assert spec.source.revision is None
    assert draft_plan(spec).gate("correctness_preflight").details["revisions_unresolved"] is True
    assert load_spec(alone, rehearse=True).source.revision is None
    with pytest.raises(SpecError, match="UNRESOLVED and the spec has no revision file"):  # refused before spending
        build_plan(load_spec(alone, rehearse=True))


def test_selfgen_arm_data_decides_which_arm_trains_on_generated_tasks(tmp_path):
    spec = load_spec(SELFGEN_SPEC)
    assert {arm.name: spec.data_source(arm.name) for arm in spec.arms} == {
        "base": "none", "rl_gsm8k": "dataset", "rl_selfgen": "generated_tasks"}
    # the mapping reads the spec's own arms[].data text: swap the two texts and the arms swap sources
    raw = json.loads(SELFGEN_SPEC.read_text())
    raw["arms"][1]["data"], raw["arms"][2]["data"] = raw["arms"][2]["data"], raw["arms"][1]["data"]
    copy = tmp_path / SELFGEN_SPEC.name
    copy.write_text(json.dumps(raw))
    shutil.copy(plan_file_path(SELFGEN_SPEC), plan_file_path(copy))
    swapped = load_spec(copy)
    assert swapped.data_source("rl_gsm8k") == "generated_tasks" and swapped.data_source("rl_selfgen") == "dataset"


def test_selfgen_alone_is_refused_before_anything_is_paid_for(tmp_path):
    alone = tmp_path / SELFGEN_SPEC.name
    shutil.copy(SELFGEN_SPEC, alone)
    with pytest.raises(SpecError, match="no trained arm's data maps to generated_tasks"):
        load_spec(alone)


def _copy_with_revision(tmp_path: Path, spec: Path, revision: dict) -> Path:
    copy = tmp_path / spec.name
    shutil.copy(spec, copy)
    plan_file_path(copy).write_text(json.dumps(revision))
    return copy


def test_revision_may_not_change_a_stated_value(tmp_path):
    revision = json.loads(plan_file_path(GS1_SPEC).read_text())
    revision["correctness_preflight"]["paths"][0]["tolerances"] = {"baseline_loss": {"atol": 1.0, "rtol": 1.0}}
    with pytest.raises(SpecError, match="changes a value the spec states"):
        load_spec(_copy_with_revision(tmp_path, GS1_SPEC, revision))


def test_revision_may_not_name_an_arm_the_spec_lacks(tmp_path):
    revision = json.loads(plan_file_path(SELFGEN_SPEC).read_text())
    revision["arms"].append({"name": "rl_extra", "role": "treatment"})
    with pytest.raises(SpecError, match="names name 'rl_extra', which the spec does not have"):
        load_spec(_copy_with_revision(tmp_path, SELFGEN_SPEC, revision))


def test_revision_file_is_held_to_the_hostile_input_rules(tmp_path):
    copy = tmp_path / GS1_SPEC.name
    shutil.copy(GS1_SPEC, copy)
    plan_file_path(copy).write_text('{"notes": {"x": NaN}}')
    with pytest.raises(SpecError, match="notes.x: NaN is not a number"):
        load_spec(copy)


def test_cli_plan_of_a_rehearsal_names_it(capsys):
    from flows import run as run_cli

    assert run_cli.main([str(GS1_SPEC), "--rehearse", "--plan"]) == run_cli.EXIT_DECISION
    plan = json.loads(capsys.readouterr().out)
    assert plan["rehearsal"]["rehearsal"] is True and plan["base_model"] == rules.EMBEDDED_MODEL
    assert plan["spec_sha256"] != load_spec(GS1_SPEC).source.sha256


def test_cli_rehearsal_refuses_a_service_url(capsys, tmp_path):
    from flows import run as run_cli

    code = run_cli.main([str(GS1_SPEC), "--rehearse", "--backend", "https://example.invalid", "--runs-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == run_cli.EXIT_BAD_INPUT and err.startswith("--rehearse runs on the embedded backend: drop --backend; ")
    assert "TINKER_BASE_URL=http://127.0.0.1:N" in err  # the route that rehearses against a backend served on its own


@pytest.mark.parametrize("path", SEED_SPECS, ids=lambda p: p.stem)
def test_wiring_scale_is_smaller_and_says_so(path):
    """The wiring scale (end-to-end tests of the wiring) trains at most MIN_STEPS per arm and run and
    evaluates at most 48 items; the record names the scale and the summary says its verdict means nothing."""
    standard = load_spec(path, rehearse=True)
    wiring = load_spec(path, rehearse=True, rehearsal_scale="wiring")
    assert wiring.source.rehearsal["scale"] == "wiring" and standard.source.rehearsal["scale"] == "standard"
    assert wiring.steps == 2 < standard.steps
    assert wiring.to_dict()["eval"]["n_examples"] == 48 < standard.to_dict()["eval"]["n_examples"]
    assert wiring.source.sha256 != standard.source.sha256  # never resumed as one another
    summary = rules.rehearsal_summary("Verdict.", wiring.source.rehearsal)
    assert summary.startswith(rules.NOT_FOR_SUBMISSION) and "wiring scale (its verdict means nothing)" in summary
    assert "wiring" not in rules.rehearsal_summary("Verdict.", standard.source.rehearsal)


def test_an_unknown_rehearsal_scale_is_refused():
    with pytest.raises(SpecError, match="unknown rehearsal scale 'huge'"):
        load_spec(GS1_SPEC, rehearse=True, rehearsal_scale="huge")


# What each kind of setting is labelled (issue 45): the setting that changed, never a neighbouring contract field.
LABELS = {"learning_rate": lambda s: s.rsplit(".", 1)[-1] in ("lr", "lr_grid", "learning_rate", "learning_rates",
                                                               "update_learning_rates"),
          "budget": lambda s: s.startswith("budget."),
          "rollout": lambda s: s == "rollout",
          "tolerance": lambda s: s.startswith("correctness_preflight") and not s.endswith("learning_rates"),
          "model": lambda s: s == "base_model"}


@pytest.mark.parametrize("path", SEED_SPECS, ids=lambda p: p.stem)
@pytest.mark.parametrize("scale", ["standard", "wiring"])
def test_every_deviation_field_names_what_changed(path, scale):
    substitutions = load_spec(path, rehearse=True, rehearsal_scale=scale).source.rehearsal["substitutions"]
    for substitution in substitutions:
        for label, names in LABELS.items():
            assert names(substitution["setting"]) == (substitution["field"] == label), substitution
    assert {s["field"] for s in substitutions} >= {"learning_rate", "budget", "model"}


def test_the_typed_record_takes_every_deviation_field():
    assert typing.get_args(Deviation.model_fields["field"].annotation) == DEVIATION_FIELDS
