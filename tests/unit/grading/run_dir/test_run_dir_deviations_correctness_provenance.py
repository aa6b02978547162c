"""The run-directory validator's deviations, correctness, provenance and evaluation checks tested from each side
(experiment/grading/run_dir.py, `_check_deviations_recorded_before_use` to `check_evaluation`;
docs/contract-rules.md GEN-6, CORR-1..6, REST-1..7, EVAL-1/7/8 and the run-dir table's check ids).

One consistent GS1 run (records.build_gs1_run) is built and loaded once per module; each test takes
deep copies of its RESULT, events, plan and spec, breaks one thing and validates the copy in memory (the
evidence files stay the built ones, read-only). Expected findings are worked out from the rules' text: a
value on each side of a comparison, each operand of a condition, a later entry after one that is skipped
(issue 28 item 7: the survivors of the complete mutation run)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from records import BASELINE, TREATMENT, build_gs1_run, optimizer_check, restoration_evidence

from experiment.grading import correctness, restoration
from experiment.grading.common import short
from experiment.grading.run_dir import RunFiles, Validator

HEX_A, HEX_B = "a" * 64, "b" * 64


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> RunFiles:
    store = build_gs1_run(tmp_path_factory.mktemp("run-dir-rd2") / "runs")
    return RunFiles.load(store.run_dir)


class Run:
    """Deep copies of one built run's records, to break; `problems(prefix)` validates them."""

    def __init__(self, files: RunFiles):
        self._files = files
        self.result: dict[str, Any] = copy.deepcopy(files.result)
        self.events: list[dict[str, Any]] = copy.deepcopy(files.events)
        self.plan: dict[str, Any] = copy.deepcopy(files.plan)
        self.spec: dict[str, Any] = copy.deepcopy(files.spec)

    def problems(self, *prefixes: str) -> list[tuple[str, str]]:
        files = dataclasses.replace(self._files, result=self.result, events=self.events, plan=self.plan,
                                    spec=self.spec, setup_problems=[])
        return [(p.check, p.message) for p in Validator(files).run().problems if p.check.startswith(prefixes)]

    def checks(self, *prefixes: str) -> list[str]:
        return [check for check, _ in self.problems(*prefixes)]

    def plan_gate(self, name: str) -> dict[str, Any]:
        return next(gate for gate in self.plan["gates"] if gate["name"] == name)

    def set_gate_status(self, name: str, status: str) -> None:
        for event in self.events:
            if event.get("event") == "gate" and event.get("gate") == name:
                event["status"] = status


@pytest.fixture
def run(built) -> Run:
    return Run(built)


def test_the_built_run_has_no_problem(run):
    assert run.problems() == []


@pytest.mark.parametrize("category", [correctness, restoration], ids=["correctness", "restoration"])
def test_the_built_run_grades_verified_as_the_contract_reads_its_run_directory(built, category):
    """The built run retains what an honest run retains (the spec revision, the fixed input, the probe's record and
    reference, every arm's service responses, the fixed batch, the create-save-restore check): the contract rules
    the correctness.* and provenance.* checks run find nothing in it."""
    grade = category.grade(Validator(built).contract)
    assert (grade.status, grade.issues) == ("verified", [])


# ---------------------------------------------------------------- GEN-6: deviations posted in a running update

STEPS = {"field": "steps", "original": "40", "effective": "20", "reason": "the budget allows 20 steps"}
UNRECORDED_STEPS = ("deviations.shape",  # GEN-6's one implementation (experiment.grading.general.GEN_6)
                    "1 deviation(s) were never posted in a running update before training (unrecorded)")


def _update(status: str, deviations: list[Any]) -> dict[str, Any]:
    return {"event": "result_updated", "fields": ["deviations", "status"], "status": status, "deviations": deviations}


def test_a_deviation_posted_in_a_running_update_is_recorded(run):
    run.result["deviations"] = [STEPS]
    run.events.insert(5, _update("running", [STEPS]))
    assert run.problems("deviations.") == []


def test_a_deviation_first_posted_in_a_failed_final_update_is_unrecorded(run):
    """"failed" sorts before "running": only a running update records a deviation."""
    run.result.update(status="failed", deviations=[STEPS])
    run.events.append(_update("failed", [STEPS]))
    assert run.problems("deviations.") == [UNRECORDED_STEPS]


def test_a_deviation_first_posted_in_the_succeeded_update_is_unrecorded(run):
    run.result["deviations"] = [STEPS]
    run.events.append(_update("succeeded", [STEPS]))
    assert run.problems("deviations.") == [UNRECORDED_STEPS]


def test_a_deviation_that_is_no_object_has_no_valid_field(run):
    run.result["deviations"] = ["steps 40 -> 20"]
    assert run.problems("deviations.") == [("deviations.shape", "deviation 'steps 40 -> 20' has no valid field")]


# ---------------------------------------------------------------- CORR-1, CORR-2: the record and the plan's gate
# correctness.* run CORR-1..6 and CORR-9's one implementation (experiment.grading.correctness) on the typed plan of the
# retained spec; whether the gate applies is the spec's (the retained plan's word decides nothing)

PATH_ID = "gs1_kernel_advantage_loop"
MISSING = ("correctness.missing",
           "the path needs a correctness preflight but RESULT has no record (a missing check blocks like a failed one)")
STOCK_REQUIRED = ("correctness.required", "the record says required is not true for a custom or forked path")
NO_PATH_RECORD = ("correctness.paths", f"path {PATH_ID}: no record (a missing check blocks)")


def _stock_only(run: Run) -> None:
    """The spec as a stock-only run's: no custom loss or optimizer, correctness_preflight.required false."""
    run.spec["correctness_preflight"]["required"] = False
    run.spec["experiment_features"].update(custom_loss=False, custom_optimizer=False)


@pytest.mark.parametrize("applicable, expected", [(True, [MISSING]), (False, [])], ids=["applies", "not applicable"])
def test_a_passed_gate_without_its_record(run, applicable, expected):
    """CORR-1: the record is missing only where the plan says the preflight applies."""
    del run.result["correctness_preflight"]
    if not applicable:
        _stock_only(run)
        run.set_gate_status("correctness_preflight", "not_applicable")  # as a stock-only run records its gate
    assert run.problems("correctness.") == expected


def test_the_retained_plan_without_a_correctness_gate_still_asks_the_record(run):
    """The gate is the plan the contract derives from the retained spec: a retained plan that leaves it out does not
    excuse the record (the copy this layer had read the retained plan's word and asked nothing)."""
    del run.result["correctness_preflight"]
    run.plan["gates"] = [gate for gate in run.plan["gates"] if gate["name"] != "correctness_preflight"]
    assert run.problems("correctness.") == [MISSING]


@pytest.mark.parametrize("record, expected", [
    ({"required": "yes", "paths": []}, [STOCK_REQUIRED, NO_PATH_RECORD]),
    ({"required": True, "paths": {PATH_ID: {}}}, [NO_PATH_RECORD]),
    (["required", True], [("correctness.required", MISSING[1]), NO_PATH_RECORD]),
], ids=["required not a bool", "paths not a list", "not an object"])
def test_a_record_of_another_shape(run, record, expected):
    run.result["correctness_preflight"] = record
    assert run.problems("correctness.") == expected


@pytest.mark.parametrize("applicable, expected", [(True, [STOCK_REQUIRED, NO_PATH_RECORD]), (False, [])],
                         ids=["applies", "not applicable"])
def test_a_stock_only_record(run, applicable, expected):
    run.result["correctness_preflight"] = {"required": False, "paths": []}
    if not applicable:
        _stock_only(run)
    assert run.problems("correctness.") == expected


def test_a_stock_only_record_with_paths(run):
    path = run.result["correctness_preflight"]["paths"][0]
    run.result["correctness_preflight"] = {"required": False, "paths": [path]}
    _stock_only(run)
    assert run.problems("correctness.") == [
        ("correctness.stock_only", 'a stock-only run reports {"required": false, "paths": []}')]


def test_a_required_record_without_the_spec_path(run):
    run.result["correctness_preflight"]["paths"] = []
    assert run.problems("correctness.") == [NO_PATH_RECORD]


# ---------------------------------------------------------------- CORR-6: revisions pinned and the spec's

def _path(run: Run) -> dict[str, Any]:
    return run.result["correctness_preflight"]["paths"][0]


def _pin_spec(run: Run, **pins: Any) -> dict[str, Any]:
    """The spec path pinned to the recorded revisions (or to `pins`), and a reasoning that says nothing of them."""
    spec_path = run.spec["correctness_preflight"]["paths"][0]
    for key in ("baseline_revision", "reference_revision"):
        spec_path[key] = pins.get(key, _path(run)[key])
    run.result["reasoning"] = "The paired effect was measured on fixed items. One seed limits confidence."
    return spec_path


def _differs(key: str, value: Any, pin: Any) -> tuple[str, str]:
    return ("correctness.revisions", f"path {PATH_ID}: reported {key} {short(value)} is not the pinned {short(pin)}")


def test_pinned_spec_revisions_equal_to_the_recorded_ones_need_no_note(run):
    _pin_spec(run)
    assert run.problems("correctness.") == []


def test_a_spec_path_without_revisions_pins_nothing(run):
    spec_path = _pin_spec(run)
    del spec_path["baseline_revision"], spec_path["reference_revision"]
    assert run.problems("correctness.") == []


UNRESOLVED_NOTE = ("correctness.unresolved_note", "the spec's correctness revisions are UNRESOLVED; reasoning must "
                   "say the exchange may grade the check unverified")


def _unresolve(run: Run) -> None:
    """The spec's revisions UNRESOLVED (as the seed spec writes them, before its recorded revision pins them)."""
    for key in ("baseline_revision", "reference_revision"):
        run.spec["correctness_preflight"]["paths"][0][key] = "UNRESOLVED: pin it"


def test_unresolved_spec_revisions_need_the_note_in_reasoning(run):
    _unresolve(run)
    run.result["reasoning"] = "The paired effect was measured on fixed items. One seed limits confidence."
    assert run.problems("correctness.") == [UNRESOLVED_NOTE]


@pytest.mark.parametrize("vocabulary", ["three_way", "binary"], ids=["three_way", "unknown, sorting first"])
def test_the_unresolved_note_is_asked_of_the_direction_vocabulary_only(run, vocabulary):
    """GEN-8: reasoning belongs to the direction vocabulary only (GEN-4: the three-way shape has none)."""
    _unresolve(run)
    run.plan["vocabulary"] = vocabulary
    run.result["reasoning"] = "The paired effect was measured on fixed items."
    assert run.problems("correctness.") == []


@pytest.mark.parametrize("value", ["  ", "", None, "UNRESOLVED: pin it"], ids=["blank", "empty", "null", "UNRESOLVED"])
def test_a_recorded_revision_that_is_not_pinned(run, value):
    pin = _path(run)["baseline_revision"]
    _path(run)["baseline_revision"] = value
    assert _differs("baseline_revision", value, pin) in run.problems("correctness.revisions")


@pytest.mark.parametrize("key", ["baseline_revision", "reference_revision"])
@pytest.mark.parametrize("pin", ["a-pin-sorting-before", "z-pin-sorting-after"],
                         ids=["recorded after", "recorded before"])
def test_a_recorded_revision_other_than_the_spec_pin(run, key, pin):
    _path(run)["reference_revision"] = "reference@89abcde"
    _pin_spec(run, **{key: pin})
    value = _path(run)[key]
    assert run.problems("correctness.") == [_differs(key, value, pin)]


def test_a_same_code_baseline_check_reports_the_revision_that_ran(run):
    """CORR-3: a baseline parity check whose two sides are the same code names what ran, not the pin
    (it stays unverified); the reference revision is still the spec's."""
    _path(run)["reference_revision"] = "reference@89abcde"
    _pin_spec(run, baseline_revision="tinker-cookbook@0123abc", reference_revision="reference@4567def")
    _path(run)["parity_sides"] = {"baseline_loss": {"same_code": True}}
    assert run.problems("correctness.") == [_differs("reference_revision", "reference@89abcde", "reference@4567def")]


def test_a_baseline_revision_other_than_the_pin_without_same_code_sides(run):
    _pin_spec(run, baseline_revision="tinker-cookbook@0123abc")
    _path(run)["parity_sides"] = {"baseline_loss": {"same_code": False}}
    assert run.checks("correctness.") == ["correctness.revisions"]


# ---------------------------------------------------------------- CORR-2: learning-rate probes of the contract's shape

@pytest.mark.parametrize("probe, error", [
    ({"learning_rate": 4e-05, "update_norm": None}, "lr_scaling.2.update_norm: Input should be a valid number"),
    ({"learning_rate": None, "update_norm": 0.01}, "lr_scaling.2.learning_rate: Input should be a valid number"),
    ({"learning_rate": 4e-05}, "lr_scaling.2.update_norm: Field required"),
    ([4e-05, 0.01], "lr_scaling.2: Input should be a valid dictionary or instance of LrProbe"),
], ids=["no update_norm", "no learning_rate", "update_norm absent", "not an object"])
def test_a_learning_rate_probe_without_its_numbers(run, probe, error):
    _path(run)["lr_scaling"].append(probe)
    assert run.problems("correctness.") == [("correctness.paths", f"path {PATH_ID}.{error}")]


def test_several_bad_probes_of_a_path_are_one_problem(run):
    _path(run)["lr_scaling"] = [{"learning_rate": 4e-05}, {"update_norm": 0.01}]
    assert run.problems("correctness.") == [
        ("correctness.paths", f"path {PATH_ID}.lr_scaling.0.update_norm: Field required (and 1 more)")]


# ---------------------------------------------------------------- CORR-3, CORR-4: measured errors and acceptance

def _no_errors(check: str) -> tuple[str, str]:
    return ("correctness.errors", f"path {PATH_ID}: no measured errors for check {check}")


NOT_PARITY_ERRORS = ("correctness.paths", f"path {PATH_ID}.errors.baseline_loss: Input should be a valid dictionary "
                                          "or instance of ParityErrors")


@pytest.mark.parametrize("measured", [None, "passed"], ids=["null", "a pass flag"])
def test_a_check_without_its_measured_errors(run, measured):
    _path(run)["errors"]["baseline_loss"] = measured
    assert run.problems("correctness.") == [NOT_PARITY_ERRORS, _no_errors("baseline_loss")]


def test_a_cosine_similarity_is_measured_where_the_tolerance_bounds_it(run):
    """CORR-3: a check whose tolerance has min_cosine measures cosine_similarity (baseline_gradient's does; baseline_loss's
    does not, so it needs none: the copy this layer had asked it of every check)."""
    without_cosine = {"max_abs_error": 0.0, "reference_max_abs": 2.0, "relative_l2_error": 0.0}
    _path(run)["errors"]["baseline_loss"] = dict(without_cosine)
    assert run.problems("correctness.") == []
    _path(run)["errors"]["baseline_gradient"] = dict(without_cosine)
    assert run.problems("correctness.") == [_no_errors("baseline_gradient")]


def test_each_check_without_measured_errors_is_a_problem(run):
    _path(run)["errors"]["baseline_loss"] = None
    _path(run)["errors"]["reference_gradient"] = {}
    assert run.problems("correctness.errors") == [_no_errors("baseline_loss"), _no_errors("reference_gradient")]


def _fail_tolerance(run: Run) -> None:
    """baseline_loss 1e-3 off on a reference of 2: over atol 1e-6 + rtol 1e-5 * 2."""
    _path(run)["errors"]["baseline_loss"].update(max_abs_error=1e-3, reference_max_abs=2.0)


@pytest.mark.parametrize("gate, status, went_on", [
    ("passed", "succeeded", True),
    ("passed", "running", True),  # the gate passed: the run went on
    ("failed", "succeeded", True),  # the run finished past the failed check
    ("failed", "failed", False),  # the run stopped at the gate
    ("failed", "running", False),
    ("failed", None, False),
], ids=["passed, succeeded", "passed, running", "failed, succeeded", "failed, failed", "failed, running",
        "failed, no status"])
def test_a_check_over_its_tolerance_blocks_a_run_that_went_on(run, gate, status, went_on):
    _fail_tolerance(run)
    run.set_gate_status("correctness_preflight", gate)
    if status is None:
        del run.result["status"]
    else:
        run.result["status"] = status
    assert run.checks("correctness.") == (["correctness.acceptance"] if went_on else [])


# ---------------------------------------------------------------- REST-1: the record, its arms

def _record(run: Run) -> dict[str, Any]:
    return run.result["initialization_provenance"]


def _entry(run: Run, arm: str = BASELINE) -> dict[str, Any]:
    return _record(run)["arms"][arm]


def _both(run: Run, part: str, **fields: Any) -> None:
    for arm in (BASELINE, TREATMENT):
        _entry(run, arm)[part].update(fields)


def _spec_group_arms(run: Run) -> list[dict[str, Any]]:
    return run.spec["restoration_preflight"]["groups"][0]["arms"]


# provenance.* run REST-1..8's one implementation (experiment.grading.restoration) on the typed plan of the retained
# spec; whether the gate applies is the spec's

NOT_VERSION_1 = "initialization_provenance is missing or not version 1"


@pytest.mark.parametrize("applicable, expected", [
    (True, [("provenance.missing", NOT_VERSION_1)]),
    (False, []),
], ids=["applies", "not applicable"])
def test_a_passed_restoration_gate_without_its_record(run, applicable, expected):
    del run.result["initialization_provenance"]
    if not applicable:  # the spec as an unpaired run's: no arms share an initialization
        run.spec["restoration_preflight"]["applicable"] = False
        run.spec["experiment_features"]["paired_training_arms"] = False
    assert run.problems("provenance.") == expected


@pytest.mark.parametrize("change, expected", [
    ({"version": 0}, NOT_VERSION_1), ({"version": 2}, NOT_VERSION_1), ({"version": "1"}, NOT_VERSION_1),
    ({"arms": [BASELINE, TREATMENT]}, f"missing arm evidence for {BASELINE}, {TREATMENT}"),
    ({"arms": None}, f"missing arm evidence for {BASELINE}, {TREATMENT}"),
], ids=["version 0", "version 2", "version '1'", "arms a list", "no arms"])
def test_a_provenance_record_of_another_shape(run, change, expected):
    _record(run).update(change)
    assert run.problems("provenance.") == [("provenance.shape", expected)]


def test_the_spec_groups_name_the_arms_that_need_an_entry(run):
    """REST-1: one entry per arm named in restoration_preflight.groups (not every trained arm of the plan)."""
    run.spec["restoration_preflight"]["groups"][0]["arms"] = _spec_group_arms(run)[:1]  # grpo_gs8 alone
    del _record(run)["arms"][TREATMENT]
    assert run.problems("provenance.") == []
    run.spec["restoration_preflight"]["groups"][0]["arms"] = _spec_group_arms(run)[:1] + [{"name": TREATMENT}]
    assert run.problems("provenance.") == [("provenance.shape", f"missing arm evidence for {TREATMENT}")]


def test_without_spec_groups_every_trained_plan_arm_needs_an_entry(run):
    run.spec["restoration_preflight"]["groups"] = []
    run.plan["arms"].append({**run.plan["arms"][0], "name": "base_model", "trained": False})
    del _record(run)["arms"][TREATMENT]
    assert run.problems("provenance.") == [("provenance.shape", f"missing arm evidence for {TREATMENT}")]


def test_an_entry_that_is_no_object_does_not_stop_the_next_arm(run):
    arms = _record(run)["arms"]
    arms[BASELINE] = "server says ok"
    arms[TREATMENT]["initialization"]["before_first_update"] = False
    assert run.problems("provenance.") == [
        ("provenance.shape", f"missing arm evidence for {BASELINE}"),
        ("provenance.initialization", f"arm {TREATMENT}: initialization needs evidence_ref and before_first_update true"),
    ]


# ---------------------------------------------------------------- REST-2, REST-3: one initialization per group

def _other_model(arm: str, model: str) -> tuple[str, str]:
    return ("provenance.initialization", f"arm {arm}: base_checkpoint {model!r} is not the spec's model "
                                         "'Qwen/Qwen3.5-2B'")


def test_arms_of_one_group_with_different_base_checkpoints(run):
    """REST-2: every arm's base checkpoint is the spec's model (so the arms of a group cannot differ in it)."""
    _entry(run, TREATMENT)["initialization"]["base_checkpoint"] = "Qwen/Qwen3.5-2B-Instruct"
    assert run.problems("provenance.") == [_other_model(TREATMENT, "Qwen/Qwen3.5-2B-Instruct")]


def test_without_spec_groups_the_trained_plan_arms_are_one_group(run):
    run.spec["restoration_preflight"]["groups"] = []
    _entry(run, TREATMENT)["initialization"].update(checkpoint_uri="tinker://b/0", loaded_checkpoint_uri="tinker://b/0")
    assert "provenance.group_mismatch" in run.checks("provenance.")


def test_arms_in_separate_groups_may_load_different_checkpoints(run):
    first, second = _spec_group_arms(run)
    run.spec["restoration_preflight"]["groups"] = [{"arms": [first]}, {"arms": [second]}]
    _entry(run, TREATMENT)["initialization"].update(checkpoint_uri="tinker://b/0", loaded_checkpoint_uri="tinker://b/0")
    assert run.problems("provenance.group_mismatch") == []


def test_a_group_of_three_arms_with_one_different_checkpoint(run):
    _spec_group_arms(run).append({**_spec_group_arms(run)[1], "name": "gs1_kernel_b"})
    third = copy.deepcopy(_entry(run, TREATMENT))
    third["initialization"]["checkpoint_uri"] = third["initialization"]["loaded_checkpoint_uri"] = "tinker://b/0"
    _record(run)["arms"]["gs1_kernel_b"] = third
    assert run.problems("provenance.group_mismatch") == [
        ("provenance.group_mismatch", "group grpo_gs8/gs1_kernel/gs1_kernel_b: arms load different initial checkpoints"),
        ("provenance.group_mismatch", "arms grpo_gs8 and gs1_kernel_b share no initialization identity"),
        ("provenance.group_mismatch", "arms gs1_kernel and gs1_kernel_b share no initialization identity")]


# ---------------------------------------------------------------- REST-2: initialization proof

NO_PROOF = ("initialization is proven neither by a measured adapter_sha256 nor by a loaded immutable "
            "full-initialization checkpoint")


def _adapter_only(run: Run, source: str, adapter: Any = HEX_A) -> None:
    for arm in (BASELINE, TREATMENT):
        _entry(run, arm)["initialization"] = {"base_checkpoint": "Qwen/Qwen3.5-2B", "adapter_sha256": adapter,
                                               "source": source, "evidence_ref": restoration_evidence(arm),
                                               "before_first_update": True, "init_seed": 0}


def _no_proof() -> list[tuple[str, str]]:
    return [("provenance.initialization", f"arm {arm}: {NO_PROOF}") for arm in (BASELINE, TREATMENT)]


@pytest.mark.parametrize("source", ["server_response", "local_hash"])
def test_a_measured_adapter_hash_proves_the_initialization(run, source):
    _adapter_only(run, source)
    assert run.problems("provenance.initialization") == []


@pytest.mark.parametrize("source, adapter", [("declared", HEX_A), ("server_response", "adapter-0001")],
                         ids=["declared hash", "not a hash"])
def test_an_adapter_hash_that_is_no_proof(run, source, adapter):
    _adapter_only(run, source, adapter)
    assert run.problems("provenance.initialization") == _no_proof()


@pytest.mark.parametrize("flaw", [
    {"checkpoint_uri": ""},
    {"checkpoint_immutable": False},
    {"checkpoint_scope": "adapter_only"},  # sorts before full_initialization
    {"checkpoint_scope": "weights_only"},  # sorts after it
    {"loaded_checkpoint_uri": None},
    {"load_succeeded": False},
    {"source": "local_hash"},  # sorts before server_response
    {"source": "service_log"},  # sorts after it
], ids=lambda flaw: next(f"{key}={value}" for key, value in flaw.items()))
def test_a_checkpoint_with_one_proof_missing_proves_nothing(run, flaw):
    _both(run, "initialization", **flaw)
    assert run.problems("provenance.initialization") == _no_proof()


# ---------------------------------------------------------------- REST-4: restore count and optimizer checks

def test_no_restore_and_one_check_at_creation(run):
    """An arm created from a measured adapter (no saved state) with no restore has one check, at creation."""
    _adapter_only(run, "server_response")
    _entry(run).update(restore_count=0, restores=[], optimizer_checks=[optimizer_check(0)])
    assert run.problems("provenance.optimizer_checks") == []


@pytest.mark.parametrize("count", [-1, "1", True, 1.5], ids=["negative", "a string", "a boolean", "a fraction"])
def test_a_restore_count_that_is_no_non_negative_integer(run, count):
    _entry(run)["restore_count"] = count
    assert run.problems("provenance.optimizer_checks") == [
        ("provenance.optimizer_checks", f"arm {BASELINE}: optimizer_checks cover after_restore [0, 1], not creation "
                                        f"and each of {count!r} restores"),
        ("provenance.optimizer_checks", f"arm {BASELINE}: restore_count {count!r} but 1 restores are recorded")]


def test_a_check_that_is_no_object_does_not_stop_the_next_check(run):
    late = {**optimizer_check(1), "before_next_update": False}
    _entry(run)["optimizer_checks"] = ["created with adamw", optimizer_check(0), late]
    assert run.problems("provenance.optimizer_checks") == [
        ("provenance.optimizer_checks", f"arm {BASELINE}: an optimizer check is not before_next_update")]


# ---------------------------------------------------------------- REST-5, REST-6: requested and actual optimizer

def _unverified(after_restore: int) -> tuple[str, str]:
    return ("provenance.optimizer_mismatch", f"arm {BASELINE}, after_restore {after_restore}: the optimizer is "
                                             "declared, not read from a server response")


@pytest.mark.parametrize("fields, expected", [
    ({"source": "declared"}, _unverified(0)),
    ({"actual_family": None}, _unverified(0)),
    ({"actual_config": None}, ("provenance.optimizer_mismatch", f"arm {BASELINE}, after_restore 0: the server response "
                               "does not expose learning_rate, beta1, beta2, eps, lora_rank, so the optimizer config "
                               "stays unverified")),
], ids=["declared", "no actual family", "no actual config"])
def test_an_optimizer_check_not_read_from_a_server_response_is_unverified(run, fields, expected):
    _entry(run)["optimizer_checks"][0].update(fields)
    assert run.problems("provenance.") == [expected]


def test_an_unverified_check_does_not_stop_the_next_check(run):
    checks = _entry(run)["optimizer_checks"]
    checks[0]["source"] = "declared"
    checks[1]["evidence_ref"] = "restoration-elsewhere.json"
    assert run.problems("provenance.") == [
        _unverified(0),
        ("provenance.optimizer_mismatch", f"arm {BASELINE}, after_restore 1: restoration-elsewhere.json holds no server "
                                          "response with the optimizer"),
        ("provenance.evidence_ref", "evidence_ref 'restoration-elsewhere.json': restoration-elsewhere.json is not a "
                                    "retained evidence file"),
    ]


def test_a_check_without_a_source_does_not_stop_the_checks_of_the_next_arm(run):
    """Whatever a check without a `source` grades (test_run_dir_optimizer_source: REST-6 asks server_response),
    the validation goes on: the next arm's flaw is still reported."""
    del _entry(run)["optimizer_checks"][0]["source"]
    _entry(run, TREATMENT)["initialization"]["before_first_update"] = False
    assert ("provenance.initialization", f"arm {TREATMENT}: initialization needs evidence_ref and before_first_update "
                                         "true") in run.problems("provenance.")


@pytest.mark.parametrize("actual", ["adagrad", "sgd"], ids=["sorting before adamw", "sorting after adamw"])
def test_an_actual_family_other_than_the_requested(run, actual):
    _entry(run)["optimizer_checks"][0]["actual_family"] = actual
    assert run.problems("provenance.") == [
        ("provenance.optimizer_mismatch", f"arm {BASELINE}, after_restore 0: the server reports family {actual!r}, "
                                          "requested 'adamw'")]


def test_the_spec_optimizer_family_is_its_first_word(run):
    """REST-5: a group arm's `optimizer: "Adam with decoupled weight decay"` is the adamw family."""
    for arm in _spec_group_arms(run):
        arm["optimizer"] = "Adam with decoupled weight decay"
    assert run.problems("provenance.") == []
    for arm in _spec_group_arms(run):
        arm["optimizer"] = "SGD with momentum"
    assert "provenance.requested" in set(run.checks("provenance."))


@pytest.mark.parametrize("key, value", [
    ("beta1", 0.8),  # a key sorting before "family"
    ("learning_rate", 8e-05),  # one sorting after it
])
def test_an_actual_setting_other_than_the_requested(run, key, value):
    _entry(run)["optimizer_checks"][0]["actual_config"][key] = value
    where = f"arm {BASELINE}, after_restore 0"
    assert run.problems("provenance.") == [
        ("provenance.optimizer_mismatch", f"{where}: actual {key} are not what the retained server response says"),
        ("provenance.optimizer_mismatch", f"{where}: actual {key} are not what the retained response reports"),
        ("provenance.optimizer_mismatch", f"{where}: the server reports other {key} than requested")]


# ---------------------------------------------------------------- REST-7: initial output

def _unavailable(run: Run, **fields: Any) -> None:
    for arm in (BASELINE, TREATMENT):
        _entry(run, arm)["initial_output"] = {"available": False, **fields}


REASON = "the service returns no logprobs for the fixed batch"


@pytest.mark.parametrize("required, reason, expected", [
    (True, REASON, "initial output not captured although the spec requires a fixed batch"),
    (False, REASON, None),
    (False, None, "initial output not captured"),
    (False, "", "initial output not captured"),
], ids=["required, with a reason", "not required, with a reason", "not required, no reason", "empty reason"])
def test_an_unavailable_initial_output(run, required, reason, expected):
    run.spec["restoration_preflight"]["fixed_batch_required"] = required
    _unavailable(run, **({"reason": reason} if reason is not None else {}))
    expected_problems = [] if expected is None else [("provenance.initial_output", f"arm {arm}: {expected}")
                                         for arm in (BASELINE, TREATMENT)]
    assert run.problems("provenance.") == expected_problems


NO_HASHES = "initial_output needs batch_sha256, output_sha256, evidence_ref and before_first_update true"


@pytest.mark.parametrize("key, also", [
    ("batch_sha256", [f"arm {BASELINE}, {TREATMENT}: batch_sha256 is not the hash of the retained "
                      "restoration-fixed-batch.json"]),
    ("output_sha256", []),
])
def test_an_initial_output_hash_that_is_not_64_hex(run, key, also):
    _both(run, "initial_output", **{key: "0x" + "a" * 62})
    found = run.problems("provenance.")
    assert [(check, message) for check, message in found if message.endswith(NO_HASHES)] == [
        ("provenance.initial_output", f"arm {arm}: {NO_HASHES}") for arm in (BASELINE, TREATMENT)]
    assert all(("provenance.initial_output", message) in found for message in also)


# ---------------------------------------------------------------- EVAL-1, EVAL-7, EVAL-8: the evaluation record

def _scores(run: Run) -> list[Any]:
    return run.result["evaluation"]["scores"]


# EVAL-1's one implementation (experiment.grading.evaluator.EVAL_1: the contract's Evaluation model)
NOT_VERSION_1 = [("evaluation.shape", "evaluation.version: Input should be 1")]


@pytest.mark.parametrize("change, expected", [
    ({"version": 0}, NOT_VERSION_1), ({"version": 2}, NOT_VERSION_1),
    ({"evaluators": []}, [("evaluation.shape", "evaluation.evaluators: Input should be a valid dictionary"),
                          ("evaluation.shape", "evaluation defines no evaluator")]),
], ids=["version 0", "version 2", "evaluators a list"])
def test_an_evaluation_record_of_another_shape(run, change, expected):
    run.result["evaluation"].update(change)
    assert run.problems("evaluation.") == expected


def test_a_score_of_an_unknown_evaluator(run):
    _scores(run)[0]["evaluator_id"] = HEX_B
    assert run.problems("evaluation.scores") == [
        ("evaluation.scores", f"score {BASELINE}/accuracy names evaluator '{HEX_B[:56]}... that the record does not "
                              "define")]


def test_a_score_that_is_no_object_does_not_stop_the_next_score(run):
    _scores(run)[0]["value"] = None
    _scores(run).insert(0, "accuracy 0.66")
    assert run.problems("evaluation.shape", "evaluation.scores") == [
        ("evaluation.shape", "evaluation.scores.0: Input should be a valid dictionary or instance of Score (and 1 more)"),
        ("evaluation.scores", f"score {BASELINE}/accuracy needs arm, metric and a finite value")]


def test_a_score_whose_predictions_are_not_retained(run):
    _scores(run)[0]["predictions_ref"] = "predictions-elsewhere.jsonl"
    assert run.problems("evaluation.predictions_missing") == [
        ("evaluation.predictions_missing", "predictions 'predictions-elsewhere.jsonl': predictions-elsewhere.jsonl is "
                                           "not a retained evidence file")]


def test_a_predictions_ref_with_a_fragment_names_its_retained_file(run):
    _scores(run)[0]["predictions_ref"] += "#rows"
    assert run.problems("evaluation.") == []
