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
from records import BASELINE, RESTORATION_EVIDENCE, TREATMENT, build_gs1_run, optimizer_check

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

PATH_ID = "gs1_kernel_advantage_loop"
MISSING = ("correctness.missing",
           "the correctness_preflight gate passed but RESULT has no correctness_preflight record")
STOCK_REQUIRED = ("correctness.required",
                  "the plan says a correctness preflight applies but the record says required false")
SHAPE = ("correctness.shape", "correctness_preflight must be {required: bool, paths: [...]}")


@pytest.mark.parametrize("applicable, expected", [(True, [MISSING]), (False, [])], ids=["applies", "not applicable"])
def test_a_passed_gate_without_its_record(run, applicable, expected):
    """CORR-1: the record is missing only where the plan says the preflight applies."""
    del run.result["correctness_preflight"]
    run.plan_gate("correctness_preflight")["applicable"] = applicable
    assert run.problems("correctness.") == expected


def test_a_plan_without_a_correctness_gate_asks_no_record(run):
    del run.result["correctness_preflight"]
    run.plan["gates"] = [gate for gate in run.plan["gates"] if gate["name"] != "correctness_preflight"]
    assert run.problems("correctness.") == []


@pytest.mark.parametrize("record", [
    {"required": "yes", "paths": []},
    {"required": True, "paths": {PATH_ID: {}}},
    ["required", True],
], ids=["required not a bool", "paths not a list", "not an object"])
def test_a_record_of_another_shape(run, record):
    run.result["correctness_preflight"] = record
    assert run.problems("correctness.") == [SHAPE]


@pytest.mark.parametrize("applicable, expected", [(True, [STOCK_REQUIRED]), (False, [])],
                         ids=["applies", "not applicable"])
def test_a_stock_only_record(run, applicable, expected):
    run.result["correctness_preflight"] = {"required": False, "paths": []}
    run.plan_gate("correctness_preflight")["applicable"] = applicable
    assert run.problems("correctness.") == expected


def test_a_stock_only_record_with_paths(run):
    path = run.result["correctness_preflight"]["paths"][0]
    run.result["correctness_preflight"] = {"required": False, "paths": [path]}
    run.plan_gate("correctness_preflight")["applicable"] = False
    assert run.problems("correctness.") == [("correctness.shape", "a stock-only record has paths []")]


def test_a_required_record_without_the_spec_path(run):
    run.result["correctness_preflight"]["paths"] = []
    assert run.problems("correctness.") == [
        ("correctness.paths", f"spec path {PATH_ID} has no record (a missing check blocks like a failed one)")]


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


def test_pinned_spec_revisions_equal_to_the_recorded_ones_need_no_note(run):
    _pin_spec(run)
    assert run.problems("correctness.") == []


def test_a_spec_path_without_revisions_pins_nothing(run):
    spec_path = _pin_spec(run)
    del spec_path["baseline_revision"], spec_path["reference_revision"]
    assert run.problems("correctness.") == []


UNRESOLVED_NOTE = ("correctness.unresolved_note", "the spec's correctness revisions are UNRESOLVED; reasoning must "
                   "say the exchange may grade the check unverified")


def test_unresolved_spec_revisions_need_the_note_in_reasoning(run):
    run.result["reasoning"] = "The paired effect was measured on fixed items. One seed limits confidence."
    assert run.problems("correctness.") == [UNRESOLVED_NOTE]


@pytest.mark.parametrize("vocabulary", ["three_way", "binary"], ids=["three_way", "unknown, sorting first"])
def test_the_unresolved_note_is_asked_of_the_direction_vocabulary_only(run, vocabulary):
    """GEN-8: reasoning belongs to the direction vocabulary only (GEN-4: the three-way shape has none)."""
    run.plan["vocabulary"] = vocabulary
    run.result["reasoning"] = "The paired effect was measured on fixed items."
    assert run.problems("correctness.") == []


@pytest.mark.parametrize("value", ["  ", "", None, "UNRESOLVED: pin it"], ids=["blank", "empty", "null", "UNRESOLVED"])
def test_a_recorded_revision_that_is_not_pinned(run, value):
    _path(run)["baseline_revision"] = value
    assert run.problems("correctness.") == [
        ("correctness.revisions", f"path {PATH_ID}: baseline_revision is not pinned ({value!r})")]


@pytest.mark.parametrize("key", ["baseline_revision", "reference_revision"])
@pytest.mark.parametrize("pin", ["a-pin-sorting-before", "z-pin-sorting-after"],
                         ids=["recorded after", "recorded before"])
def test_a_recorded_revision_other_than_the_spec_pin(run, key, pin):
    _path(run)["reference_revision"] = "reference@89abcde"
    _pin_spec(run, **{key: pin})
    value = _path(run)[key]
    assert run.problems("correctness.") == [
        ("correctness.revisions", f"path {PATH_ID}: {key} {value!r} differs from the spec's {pin!r}")]


def test_a_same_code_baseline_check_reports_the_revision_that_ran(run):
    """CORR-3: a baseline parity check whose two sides are the same code names what ran, not the pin
    (it stays unverified); the reference revision is still the spec's."""
    _path(run)["reference_revision"] = "reference@89abcde"
    _pin_spec(run, baseline_revision="tinker-cookbook@0123abc", reference_revision="reference@4567def")
    _path(run)["parity_sides"] = {"baseline_loss": {"same_code": True}}
    assert run.problems("correctness.") == [
        ("correctness.revisions",
         f"path {PATH_ID}: reference_revision 'reference@89abcde' differs from the spec's 'reference@4567def'")]


def test_a_baseline_revision_other_than_the_pin_without_same_code_sides(run):
    _pin_spec(run, baseline_revision="tinker-cookbook@0123abc")
    _path(run)["parity_sides"] = {"baseline_loss": {"same_code": False}}
    assert run.checks("correctness.") == ["correctness.revisions"]


# ---------------------------------------------------------------- CORR-5: learning-rate probes

LR_SCALING = ("correctness.lr_scaling",
              f"path {PATH_ID}: each lr_scaling entry needs numeric learning_rate and update_norm")


@pytest.mark.parametrize("probe", [
    {"learning_rate": 4e-05, "update_norm": None},
    {"learning_rate": None, "update_norm": 0.01},
    {"learning_rate": 4e-05},
    [4e-05, 0.01],
], ids=["no update_norm", "no learning_rate", "update_norm absent", "not an object"])
def test_a_learning_rate_probe_without_its_numbers(run, probe):
    _path(run)["lr_scaling"].append(probe)
    assert run.problems("correctness.") == [LR_SCALING]


def test_several_bad_probes_of_a_path_are_one_problem(run):
    _path(run)["lr_scaling"] = [{"learning_rate": 4e-05}, {"update_norm": 0.01}]
    assert run.problems("correctness.") == [LR_SCALING]


# ---------------------------------------------------------------- CORR-3, CORR-4: measured errors and acceptance

KEYS = "max_abs_error, reference_max_abs, relative_l2_error, cosine_similarity"


@pytest.mark.parametrize("measured", [None, "passed", {"max_abs_error": 0.0, "reference_max_abs": 2.0,
                                                        "relative_l2_error": 0.0}],
                         ids=["null", "a pass flag", "no cosine_similarity"])
def test_a_check_without_its_measured_errors(run, measured):
    _path(run)["errors"]["baseline_loss"] = measured
    assert run.problems("correctness.") == [
        ("correctness.errors", f"path {PATH_ID}: check baseline_loss has no measured {KEYS}")]


def test_each_check_without_measured_errors_is_a_problem(run):
    _path(run)["errors"]["baseline_loss"] = None
    _path(run)["errors"]["reference_gradient"] = {}
    assert run.problems("correctness.") == [
        ("correctness.errors", f"path {PATH_ID}: check baseline_loss has no measured {KEYS}"),
        ("correctness.errors", f"path {PATH_ID}: check reference_gradient has no measured {KEYS}"),
    ]


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


@pytest.mark.parametrize("applicable, expected", [
    (True, [("provenance.missing",
             "the restoration_preflight gate passed but RESULT has no initialization_provenance")]),
    (False, []),
], ids=["applies", "not applicable"])
def test_a_passed_restoration_gate_without_its_record(run, applicable, expected):
    del run.result["initialization_provenance"]
    run.plan_gate("restoration_preflight")["applicable"] = applicable
    assert run.problems("provenance.") == expected


@pytest.mark.parametrize("change", [
    {"version": 0}, {"version": 2}, {"version": "1"}, {"arms": [BASELINE, TREATMENT]}, {"arms": None},
], ids=["version 0", "version 2", "version '1'", "arms a list", "no arms"])
def test_a_provenance_record_of_another_shape(run, change):
    _record(run).update(change)
    assert run.problems("provenance.") == [
        ("provenance.shape", "initialization_provenance must be {version: 1, arms: {<arm>: ...}}")]


def test_the_spec_groups_name_the_arms_that_need_an_entry(run):
    """REST-1: one entry per arm named in restoration_preflight.groups (not every trained arm of the plan)."""
    run.spec["restoration_preflight"]["groups"][0]["arms"] = _spec_group_arms(run)[:1]  # grpo_gs8 alone
    del _record(run)["arms"][TREATMENT]
    assert run.problems("provenance.") == []
    run.spec["restoration_preflight"]["groups"][0]["arms"] = _spec_group_arms(run)[:1] + [{"name": TREATMENT}]
    assert run.problems("provenance.") == [
        ("provenance.arm_missing", f"arm {TREATMENT} has no initialization_provenance entry")]


def test_without_spec_groups_every_trained_plan_arm_needs_an_entry(run):
    run.spec["restoration_preflight"]["groups"] = []
    run.plan["arms"].append({**run.plan["arms"][0], "name": "base_model", "trained": False})
    del _record(run)["arms"][TREATMENT]
    assert run.problems("provenance.") == [
        ("provenance.arm_missing", f"arm {TREATMENT} has no initialization_provenance entry")]


def test_an_entry_that_is_no_object_does_not_stop_the_next_arm(run):
    arms = _record(run)["arms"]
    arms[BASELINE] = "server says ok"
    arms[TREATMENT]["initialization"]["before_first_update"] = False
    assert run.problems("provenance.") == [
        ("provenance.shape", f"arm {BASELINE}: entry must be an object"),
        ("provenance.initialization", f"arm {TREATMENT}: initialization.before_first_update is not true"),
    ]


# ---------------------------------------------------------------- REST-3: one initialization per group

def test_arms_of_one_group_with_different_base_checkpoints(run):
    """The differing values are listed, each cut to 20 characters."""
    _entry(run, TREATMENT)["initialization"]["base_checkpoint"] = "Qwen/Qwen3.5-2B-Instruct"
    assert run.problems("provenance.") == [
        ("provenance.group_mismatch", "initialization.base_checkpoint differs across the group "
                                      f"({BASELINE}='Qwen/Qwen3.5-2B', {TREATMENT}='Qwen/Qwen3.5-2B-...)")]


def test_without_spec_groups_the_trained_plan_arms_are_one_group(run):
    run.spec["restoration_preflight"]["groups"] = []
    _entry(run, TREATMENT)["initialization"]["base_checkpoint"] = "Qwen/Qwen3.5-2B-Base"
    assert run.checks("provenance.") == ["provenance.group_mismatch"]


def test_arms_in_separate_groups_may_load_different_checkpoints(run):
    first, second = _spec_group_arms(run)
    run.spec["restoration_preflight"]["groups"] = [{"arms": [first]}, {"arms": [second]}]
    _entry(run, TREATMENT)["initialization"]["base_checkpoint"] = "Qwen/Qwen3.5-2B-Base"
    assert run.problems("provenance.") == []


def test_a_group_of_three_arms_with_one_different_checkpoint(run):
    _spec_group_arms(run).append({**_spec_group_arms(run)[1], "name": "gs1_kernel_b"})
    third = copy.deepcopy(_entry(run, TREATMENT))
    third["initialization"]["checkpoint_uri"] = third["initialization"]["loaded_checkpoint_uri"] = "tinker://b/0"
    _record(run)["arms"]["gs1_kernel_b"] = third
    assert run.checks("provenance.") == ["provenance.group_mismatch", "provenance.group_mismatch"]


# ---------------------------------------------------------------- REST-2: initialization proof

NO_PROOF = "no measured adapter_sha256 and no immutable full-initialization checkpoint proof from a server response"


def _adapter_only(run: Run, source: str, adapter: Any = HEX_A) -> None:
    for arm in (BASELINE, TREATMENT):
        _entry(run, arm)["initialization"] = {"base_checkpoint": "Qwen/Qwen3.5-2B", "adapter_sha256": adapter,
                                               "source": source, "evidence_ref": RESTORATION_EVIDENCE,
                                               "before_first_update": True}


def _no_proof() -> list[tuple[str, str]]:
    return [("provenance.initialization", f"arm {arm}: {NO_PROOF}") for arm in (BASELINE, TREATMENT)]


@pytest.mark.parametrize("source", ["server_response", "local_hash"])
def test_a_measured_adapter_hash_proves_the_initialization(run, source):
    _adapter_only(run, source)
    assert run.problems("provenance.") == []


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

RESTORE_COUNT = ("provenance.restore_count", f"arm {BASELINE}: restore_count must be a non-negative integer")


def test_no_restore_and_one_check_at_creation(run):
    _entry(run).update(restore_count=0, optimizer_checks=[optimizer_check(0)])
    assert run.problems("provenance.") == []


@pytest.mark.parametrize("count", [-1, "1", True, 1.5], ids=["negative", "a string", "a boolean", "a fraction"])
def test_a_restore_count_that_is_no_non_negative_integer(run, count):
    _entry(run)["restore_count"] = count
    assert run.problems("provenance.") == [RESTORE_COUNT]


def test_a_check_that_is_no_object_does_not_stop_the_next_check(run):
    late = {**optimizer_check(1), "before_next_update": False}
    _entry(run)["optimizer_checks"] = ["created with adamw", optimizer_check(0), late]
    assert run.problems("provenance.") == [
        ("provenance.optimizer_checks", f"arm {BASELINE}, after_restore 1: before_next_update is not true")]


# ---------------------------------------------------------------- REST-5, REST-6: requested and actual optimizer

def _unverified(after_restore: int) -> tuple[str, str]:
    return ("provenance.unverified", f"arm {BASELINE}, after_restore {after_restore}: no actual optimizer "
                                     "family/config from a server response (unverified)")


@pytest.mark.parametrize("fields", [
    {"source": "declared"},
    {"actual_family": None},
    {"actual_config": None},
], ids=["declared", "no actual family", "no actual config"])
def test_an_optimizer_check_not_read_from_a_server_response_is_unverified(run, fields):
    _entry(run)["optimizer_checks"][0].update(fields)
    assert run.problems("provenance.") == [_unverified(0)]


def test_an_unverified_check_does_not_stop_the_next_check(run):
    checks = _entry(run)["optimizer_checks"]
    checks[0]["source"] = "declared"
    checks[1]["evidence_ref"] = "restoration-elsewhere.json"
    assert run.problems("provenance.") == [
        _unverified(0),
        ("provenance.evidence_ref", f"arm {BASELINE}, after_restore 1: evidence_ref 'restoration-elsewhere.json' "
                                    "names no retained evidence file"),
    ]


def test_a_check_without_a_source_does_not_stop_the_checks_of_the_next_arm(run):
    """Whatever a check without a `source` grades (test_run_dir_optimizer_source: REST-6 asks server_response),
    the validation goes on: the next arm's flaw is still reported."""
    del _entry(run)["optimizer_checks"][0]["source"]
    _entry(run, TREATMENT)["initialization"]["before_first_update"] = False
    assert ("provenance.initialization", f"arm {TREATMENT}: initialization.before_first_update is not true") in \
        run.problems("provenance.")


@pytest.mark.parametrize("actual", ["adagrad", "sgd"], ids=["sorting before adamw", "sorting after adamw"])
def test_an_actual_family_other_than_the_requested(run, actual):
    _entry(run)["optimizer_checks"][0]["actual_family"] = actual
    assert run.problems("provenance.") == [
        ("provenance.optimizer_mismatch", f"arm {BASELINE}, after_restore 0: actual family {actual} is not the "
                                          "requested adamw")]


def test_the_spec_optimizer_family_is_its_first_word(run):
    """REST-5: a group arm's `optimizer: "Adam with decoupled weight decay"` is the adamw family."""
    for arm in _spec_group_arms(run):
        arm["optimizer"] = "Adam with decoupled weight decay"
    assert run.problems("provenance.") == []
    for arm in _spec_group_arms(run):
        arm["optimizer"] = "SGD with momentum"
    assert set(run.checks("provenance.")) == {"provenance.requested"}


@pytest.mark.parametrize("key, value, requested", [
    ("beta1", 0.8, 0.9),  # a key sorting before "family"
    ("learning_rate", 8e-05, 4e-05),  # one sorting after it
])
def test_an_actual_setting_other_than_the_requested(run, key, value, requested):
    _entry(run)["optimizer_checks"][0]["actual_config"][key] = value
    assert run.problems("provenance.") == [
        ("provenance.optimizer_mismatch", f"arm {BASELINE}, after_restore 0: {key} is {value} but {requested} was "
                                          "requested")]


# ---------------------------------------------------------------- REST-7: initial output

def _unavailable(run: Run, **fields: Any) -> None:
    for arm in (BASELINE, TREATMENT):
        _entry(run, arm)["initial_output"] = {"available": False, **fields}


REASON = "the service returns no logprobs for the fixed batch"


@pytest.mark.parametrize("required, reason, expected", [
    (True, REASON, "the spec requires a fixed-batch initial_output but it is unavailable"),
    (False, REASON, None),
    (False, None, "initial_output unavailable without a reason"),
    (False, "", "initial_output unavailable without a reason"),
], ids=["required, with a reason", "not required, with a reason", "not required, no reason", "empty reason"])
def test_an_unavailable_initial_output(run, required, reason, expected):
    run.spec["restoration_preflight"]["fixed_batch_required"] = required
    _unavailable(run, **({"reason": reason} if reason is not None else {}))
    expected_problems = [] if expected is None else [("provenance.initial_output", f"arm {arm}: {expected}")
                                         for arm in (BASELINE, TREATMENT)]
    assert run.problems("provenance.") == expected_problems


@pytest.mark.parametrize("key", ["batch_sha256", "output_sha256"])
def test_an_initial_output_hash_that_is_not_64_hex(run, key):
    _both(run, "initial_output", **{key: "0x" + "a" * 62})
    assert run.problems("provenance.") == [
        ("provenance.initial_output", f"arm {arm}: initial_output.{key} is not a 64-hex hash")
        for arm in (BASELINE, TREATMENT)]


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
