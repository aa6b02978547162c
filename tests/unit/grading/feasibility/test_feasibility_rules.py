"""The grader's feasibility rules (experiment/grading/feasibility.py; docs/contract-rules.md FEAS-1..FEAS-9),
each on a minimal grading context whose expected finding is worked out in the test from the contract's text
(issue 28 item 7: the complete mutation run of experiment/grading/)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from grading_contexts.feasibility import context as _ctx, messages as _messages

from experiment.grading import feasibility as rules
from experiment.grading.common import FLOAT_TOL, equal_json
from experiment.stats.feasibility import PhaseTiming, feasibility_record  # FEAS-12: the function the pilot used

KEYS = ("base_model", "lora_rank", "dataset", "steps", "batch_size", "max_seq_len", "max_tokens", "arms", "n_examples",
        "n_eval")  # FEAS-2's ten keys
CONFIG = {key: f"value of {key}" for key in KEYS}


def _phase(**changes):
    return {"seconds": 10.0, "units": 4, "planned_units": 40, "samples": 4, "gpu_count": 1, "allocation_source": "service",
            **changes}


def test_a_missing_record_is_unknown():
    assert _messages(rules.FEAS_1(_ctx())) == [("FEAS-1", "unknown", "RESULT has no measured feasibility record")]


def test_config_and_effective_config_record_the_ten_keys_identically_one_problem_per_key():
    assert rules.FEAS_2(_ctx({"config": CONFIG, "effective_config": dict(CONFIG)})) == []
    effective = {**CONFIG, "steps": "other"}
    del effective["n_eval"]
    config = {k: v for k, v in CONFIG.items() if k != "arms"}
    assert _messages(rules.FEAS_2(_ctx({"config": config, "effective_config": effective}))) == [
        ("FEAS-2", "unknown", f"Re-projection required: {key} changed or was not recorded") for key in ("steps", "arms", "n_eval")]


def test_the_pilot_evidence_source_is_named():
    assert rules.FEAS_3(_ctx({"source": "pilot/events.jsonl"})) == []
    for source in ("", None):
        assert _messages(rules.FEAS_3(_ctx({"source": source}))) == [
            ("FEAS-3", "unknown", "the pilot evidence source is not recorded")]


def test_each_phase_gives_its_six_measurements():
    good = {"setup": _phase(), "training": _phase(), "evaluation": _phase()}
    assert rules.FEAS_4(_ctx({"measurements": good})) == []
    partial = {k: v for k, v in _phase().items() if k not in ("samples", "gpu_count")}
    assert _messages(rules.FEAS_4(_ctx({"measurements": {**good, "training": partial, "evaluation": "10 s"}}))) == [
        ("FEAS-4", "unknown", "measurements.training lacks samples, gpu_count"),
        ("FEAS-4", "unknown", "measurements.evaluation lacks seconds, units, planned_units, samples, gpu_count, "
                              "allocation_source")]


@pytest.mark.parametrize("changes, flagged", [
    ({"seconds": 0.0}, False), ({"seconds": -1.0}, True), ({"seconds": "10"}, True), ({"units": 0}, True),
    ({"units": 1}, False), ({"units": None}, True), ({"units": -1}, True), ({"planned_units": "40"}, True), ({"planned_units": 0}, False),
])
def test_phase_seconds_are_measured_and_units_positive(changes, flagged):
    record = {"measurements": {"setup": _phase(**changes), "training": _phase(), "evaluation": _phase()}}
    expected = [("FEAS-4", "unknown", "measurements.setup needs measured seconds and positive units")]
    assert _messages(rules.FEAS_4(_ctx(record))) == (expected if flagged else [])


@pytest.mark.parametrize("count, source, flagged", [
    (1, "service", False), (0, "cpu only", False), (None, None, False), (1, "", True), (-1, "service", True),
    (True, "service", True), (1.0, "service", True),
])
def test_gpu_counts_come_only_with_allocation_evidence(count, source, flagged):
    phases = {name: _phase(gpu_count=count, allocation_source=source) for name in ("setup", "training")}
    record = {"measurements": phases, "recovery": {"seconds": 5.0, "gpu_count": count, "allocation_source": source}}
    issues = _messages(rules.FEAS_6(_ctx(record)))
    expected = [("FEAS-6", "unknown", f"{where}.gpu_count {count!r} has no allocation evidence")
                for where in ("measurements.setup", "measurements.training", "recovery")]
    assert issues == (expected if flagged else [])


def test_every_phase_and_the_reserve_name_one_services_gpu_count():
    record = {"measurements": {"setup": _phase(gpu_count=1), "training": _phase(gpu_count=2)},
              "recovery": {"gpu_count": 1, "allocation_source": "service"}}
    issues = _messages(rules.FEAS_6(_ctx(record)))
    assert [(rule, status) for rule, status, _ in issues] == [("FEAS-6", "unknown")]
    assert issues[0][2].startswith("the phases name different GPU counts ({'measurements.setup': 1, 'measurements.")
    assert issues[0][2].endswith(") from one service's allocation evidence")
    record["measurements"]["training"]["gpu_count"] = 1
    assert rules.FEAS_6(_ctx(record)) == []


GENERATION = {"attempted": 10, "accepted": 4, "target_accepted": 4, "filter_samples_per_candidate": 2}


def _feas7(record, generated=True, counts=None):
    ctx = _ctx(record, generation_audit={"counts": counts} if counts else {})
    ctx.gate_applicable = lambda name: generated if name == "generation_audit" else None
    return _messages(rules.FEAS_7(ctx))


def test_a_record_without_generated_tasks_says_generation_null():
    assert _feas7({"generation": None}, generated=False) == []
    assert _feas7({}, generated=False) == [
        ("FEAS-7", "unknown", "the record has no generation entry (null when no tasks are generated)")]
    assert _feas7({"generation": None}) == [
        ("FEAS-7", "unknown", "training on generated tasks needs a generation record, not null")]


def test_generated_tasks_give_the_four_counts_and_the_generation_and_filter_measurements():
    partial = {k: v for k, v in GENERATION.items() if k not in ("accepted", "target_accepted")}
    assert _feas7({"generation": partial}) == [("FEAS-7", "unknown", "generation lacks accepted, target_accepted")]
    assert _feas7({"generation": GENERATION, "measurements": {}}) == [
        ("FEAS-7", "unknown", "no generation and filter measurement for the generated tasks")]
    assert _feas7({"generation": GENERATION, "measurements": {"generation": {}}}) == [
        ("FEAS-7", "unknown", "no filter measurement for the generated tasks")]


@pytest.mark.parametrize("counts, flagged", [({"generated": 10, "accepted": 4}, False), ({"generated": 11, "accepted": 4}, True),
                                             ({"generated": 10, "accepted": 5}, True)])
def test_the_measured_yield_is_the_generation_audits_counts(counts, flagged):
    phases = {name: {"units": 10, "planned_units": 10, "samples": 10} for name in ("generation", "filter")}
    issues = _feas7({"generation": GENERATION, "measurements": phases}, counts=counts)
    expected = [("FEAS-7", "invalid", "the measured yield (attempted, accepted) is not the generation audit's counts "
                                      "(generated, accepted)")]
    assert issues == (expected if flagged else [])


def test_generation_phases_done_before_the_pilot_have_equal_units_planned_units_and_samples():
    phases = {"generation": {"units": 10, "planned_units": 10, "samples": 10},
              "filter": {"units": 20, "planned_units": 20, "samples": 19}}
    assert _feas7({"generation": GENERATION, "measurements": phases}) == [
        ("FEAS-7", "invalid", "filter: units, planned_units and samples differ (work done before the pilot is the planned "
                              "work)")]
    phases["generation"]["units"] = 9
    assert ("FEAS-7", "invalid", "the generation phase's units are not the candidates attempted") in _feas7(
        {"generation": GENERATION, "measurements": phases})


def test_the_primary_endpoint_is_the_specs():
    ctx = _ctx({"primary_endpoint": "accuracy"})
    assert rules.FEAS_8(ctx) == []  # no plan: nothing to compare
    ctx.plan = SimpleNamespace(primary_endpoint="accuracy")
    assert rules.FEAS_8(ctx) == []
    ctx.plan = SimpleNamespace(primary_endpoint="heldout_nll")
    assert _messages(rules.FEAS_8(ctx)) == [("FEAS-8", "unknown", "primary_endpoint 'accuracy' is not the spec's 'heldout_nll'")]


@pytest.mark.parametrize("fits, verdict, flagged", [(False, "supported", True), (False, "refuted", True),
                                                   (False, "inconclusive", False), (True, "supported", False),
                                                   (None, "supported", False)])
def test_a_projection_that_does_not_fit_allows_no_definitive_verdict(fits, verdict, flagged):
    issues = _messages(rules.FEAS_9(_ctx({"projection": {"fits": fits}}, verdict=verdict)))
    expected = [("FEAS-9", "invalid", "the projection does not fit the budget but a definitive verdict was posted")]
    assert issues == (expected if flagged else [])


@pytest.mark.parametrize("a, b, same", [
    (1.0, 1.0 + 1e-12, True), (1.0, 1.001, False), (0.0, 1e-10, True), (True, False, False), (False, False, True),
    (None, 0, False), (0, None, False), ("a", "a", True), ([1], [1], True), ({"a": 1}, {"a": 2}, False),
    ("1", 1.0, False), (float("nan"), float("nan"), False),
])
def test_projection_values_are_the_same_up_to_float_noise(a, b, same):
    assert equal_json(a, b, FLOAT_TOL) is same  # FEAS-12 compares the projection with this


# ---------------------------------------------------------------- FEAS-10

COMMAND = "timing pilot: 2 steps per arm plus 100 eval items"  # the self-generated spec's words


def _feas10(training_units, evaluation_units, pilot=None, command=COMMAND, steps=50, n_eval=200, arms=2):
    record = {"measurements": {"training": {"units": training_units}, "evaluation": {"units": evaluation_units}}}
    if pilot is not None:
        record["pilot"] = pilot
    ctx = _ctx(record)
    ctx.spec = {"command": command, "steps": steps}
    ctx.plan = SimpleNamespace(trained_arms=[SimpleNamespace(name=f"arm{k}") for k in range(arms)],
                               eval={"n_examples": n_eval})
    return [m for _, _, m in _messages(rules.FEAS_10(ctx))]


def test_the_stated_pilot_is_its_steps_for_each_trained_arm_and_its_items_once_or_per_model():
    assert _feas10(4, 100) == []  # 2 steps x 2 arms; 100 items scored once
    assert _feas10(4, 300) == []  # or for the base model and each of the 2 arms
    wrong = "the spec's pilot is 2 steps per arm plus 100 eval items; measured {!r} steps and {!r} items"
    assert _feas10(2, 100) == [wrong.format(2, 100)]
    assert _feas10(4, 200) == [wrong.format(4, 200)]


def test_a_spec_with_fewer_steps_or_items_than_the_stated_pilot_pilots_all_of_them():
    assert _feas10(2, 60, steps=1, n_eval=60) == []
    assert _feas10(4, 100, steps=1, n_eval=60) == [
        "the spec's pilot is 1 steps per arm plus 60 eval items; measured 4 steps and 100 items"]


def test_the_pilot_records_the_size_the_spec_states_and_where_it_comes_from():
    source = f"spec command: {COMMAND!r}"
    assert _feas10(4, 100, pilot={"steps_per_arm": 2, "eval_items": 100, "size_source": source}) == []
    assert _feas10(4, 100, pilot={"steps_per_arm": 2, "eval_items": 100, "size_source": "project default"}) == [
        f"the pilot's recorded size is not the spec's (2 steps per arm, 100 eval items, from {source})"]
    for steps, items in ((1, 100), (3, 100), (2, 99), (2, 101)):  # each side of the stated 2 steps, 100 items
        assert _feas10(4, 100, pilot={"steps_per_arm": steps, "eval_items": items, "size_source": source}) == [
            f"the pilot's recorded size is not the spec's (2 steps per arm, 100 eval items, from {source})"]


def test_a_default_size_pilot_that_records_no_size_is_left_to_feas4_and_one_that_does_is_held_to_it():
    assert _feas10(99, 99, command="train the arms") == []
    default = "project default (the spec states no pilot size)"
    assert _feas10(2, 32, pilot={"steps_per_arm": 1, "eval_items": 32, "size_source": default},
                   command="train the arms") == []
    assert _feas10(3, 32, pilot={"steps_per_arm": 1, "eval_items": 32, "size_source": default},
                   command="train the arms") == [
        "the spec's pilot is 1 steps per arm plus 32 eval items; measured 3 steps and 32 items"]


def test_feas10_needs_a_spec_and_a_plan():
    ctx = _ctx({})
    assert rules.FEAS_10(ctx) == []
    ctx.spec = {"command": COMMAND, "steps": 50}  # a spec without a plan
    assert rules.FEAS_10(ctx) == []
    ctx.spec, ctx.plan = None, SimpleNamespace(trained_arms=[], eval={"n_examples": 200})  # a plan without a spec
    assert rules.FEAS_10(ctx) == []


# ---------------------------------------------------------------- both sides of each comparison


@pytest.mark.parametrize("effective_value", ["a", "z"])
def test_a_key_whose_effective_value_sorts_before_or_after_the_piloted_one_changed(effective_value):
    record = {"config": CONFIG, "effective_config": {**CONFIG, "max_tokens": effective_value}}
    assert _messages(rules.FEAS_2(_ctx(record))) == [
        ("FEAS-2", "unknown", "Re-projection required: max_tokens changed or was not recorded")]


def test_a_record_without_phases_or_reserve_names_no_gpu_count_to_disagree_on():
    assert rules.FEAS_6(_ctx({})) == []


@pytest.mark.parametrize("counts", [{"generated": 9, "accepted": 4}, {"generated": 10, "accepted": 3}])
def test_a_yield_below_the_audits_counts_is_not_them(counts):
    phases = {name: {"units": 10, "planned_units": 10, "samples": 10} for name in ("generation", "filter")}
    assert _feas7({"generation": GENERATION, "measurements": phases}, counts=counts) == [
        ("FEAS-7", "invalid", "the measured yield (attempted, accepted) is not the generation audit's counts "
                              "(generated, accepted)")]


def test_generation_units_above_the_candidates_attempted_are_not_them():
    phases = {"generation": {"units": 11, "planned_units": 11, "samples": 11},
              "filter": {"units": 20, "planned_units": 20, "samples": 20}}
    assert _feas7({"generation": GENERATION, "measurements": phases}) == [
        ("FEAS-7", "invalid", "the generation phase's units are not the candidates attempted")]


@pytest.mark.parametrize("units", [(10, 11, 10), (10, 10, 9), (11, 10, 10), (9, 10, 10), (10, 10, 11), (10, 9, 10)])
def test_any_of_units_planned_units_and_samples_differing_either_way_is_invalid(units):
    done = dict(zip(("units", "planned_units", "samples"), units))
    phases = {"generation": {"units": 10, "planned_units": 10, "samples": 10}, "filter": done}
    assert ("FEAS-7", "invalid", "filter: units, planned_units and samples differ (work done before the pilot is the "
                                 "planned work)") in _feas7({"generation": GENERATION, "measurements": phases})


def test_a_primary_endpoint_sorting_after_the_specs_is_not_it():
    ctx = _ctx({"primary_endpoint": "perplexity"})
    ctx.plan = SimpleNamespace(primary_endpoint="heldout_nll")
    assert _messages(rules.FEAS_8(ctx)) == [
        ("FEAS-8", "unknown", "primary_endpoint 'perplexity' is not the spec's 'heldout_nll'")]


def test_more_pilot_steps_than_the_spec_states_are_not_its_pilot():
    assert _feas10(5, 100) == ["the spec's pilot is 2 steps per arm plus 100 eval items; measured 5 steps and 100 items"]


@pytest.mark.parametrize("recovery, flagged", [({"seconds": 0.5}, False), ({"seconds": 0}, True), ({"seconds": -1.0}, True),
                                               ({"seconds": "60"}, True), ({}, True), (None, True)])
def test_the_recovery_reserve_is_a_positive_number_of_seconds(recovery, flagged):
    expected = [("FEAS-5", "unknown", "recovery.seconds is not a positive reserve")]
    assert _messages(rules.FEAS_5(_ctx({"recovery": recovery}))) == (expected if flagged else [])


def _feas7_settings(measurements, tasks=None, audit=None, n_accept=4, filter_samples=2):
    """FEAS-7's project reading against the spec's generation settings: the target and the filter's samples per
    candidate, the filter phase's units (samples x candidates it counted), the audit phase's distinct re-solves."""
    files = {"tasks.jsonl": tasks, "round1.json": {"samples": [{"item_id": "a"}, {"item_id": "b"}]},
             "round2.json": {"samples": [{"item_id": "b"}, {"item_id": "c"}]}}
    ctx = _ctx({"generation": GENERATION, "measurements": measurements},
               generation_audit={"dataset_file": "tasks.jsonl", **(audit or {})})
    ctx.generation_settings = SimpleNamespace(n_accept=n_accept, filter_samples=filter_samples)
    ctx.evidence = SimpleNamespace(jsonl=lambda name: files.get(name), json=lambda name: files.get(name))
    return [m for _, _, m in _messages(rules._generation_settings_issues(ctx, GENERATION, measurements))]


def _done(units):
    return {"units": units, "planned_units": units, "samples": units}


def test_the_generation_target_and_filter_samples_are_the_specs():
    measured = {"generation": _done(10)}
    assert _feas7_settings(measured) == []
    message = "target_accepted and filter_samples_per_candidate are not the spec's ({}, {})"
    for n_accept, samples in ((5, 2), (3, 2), (4, 3), (4, 1)):  # the record's (4, 2) on each side of the spec's
        assert _feas7_settings(measured, n_accept=n_accept, filter_samples=samples) == [message.format(n_accept, samples)]


def test_the_filter_phase_counts_its_samples_of_every_candidate_it_counted():
    # three candidates carry a count (a fourth's is None: not counted), two samples each: 2 x 3 = 6 filter units
    # (not 2 + 3, 2 ** 3, nor two samples of the two candidates without a count)
    tasks = [{"item_id": "a", "base_solved": 1}, {"item_id": "b", "base_solved": 0}, {"item_id": "e", "base_solved": 2},
             {"item_id": "c", "base_solved": None}, {"item_id": "d"}]
    message = "the filter phase's units are not the filter's samples of every candidate it counted"
    assert _feas7_settings({"generation": _done(10), "filter": _done(6)}, tasks) == []
    for units in (4, 5, 7, 8):
        assert _feas7_settings({"generation": _done(10), "filter": _done(units)}, tasks) == [message]
    assert _feas7_settings({"generation": _done(10), "filter": _done(7)}, [{"item_id": "d"}]) == []  # no counts kept


def test_the_audit_phase_counts_the_distinct_candidates_the_rounds_re_solved():
    rounds = {"rounds": [{"audit_file": "round1.json"}, {"audit_file": "round2.json"}]}  # a, b, c: 3 distinct
    message = "the audit phase's units are not the {} distinct candidates the audit rounds re-solved"
    assert _feas7_settings({"generation": _done(10), "audit": _done(3)}, audit=rounds) == []
    for units in (2, 4):
        assert _feas7_settings({"generation": _done(10), "audit": _done(units)}, audit=rounds) == [message.format(3)]
    single = {"samples": [{"item_id": "x"}, {"item_id": "x"}, {"item_id": "y"}]}  # no rounds: the record's samples
    assert _feas7_settings({"generation": _done(10), "audit": _done(2)}, audit=single) == []
    assert _feas7_settings({"generation": _done(10), "audit": _done(3)}, audit=single) == [message.format(2)]


# ---------------------------------------------------------------- FEAS-12

def _timed(seconds, units, planned_units):
    return {"seconds": seconds, "units": units, "planned_units": planned_units, "samples": units, "gpu_count": 1,
            "allocation_source": "service"}


# setup 10 s for its 1 unit (1 planned): 10 s; training 20 s for 2 of 10 steps: 100 s; evaluation 5 s for 5 of 50
# items: 50 s. Planned 160 s; the recovery reserve max(25% of it, capacity waits, 1 s) = 40 s; wall 200 s.
PHASES = {"setup": _timed(10.0, 1, 1), "training": _timed(20.0, 2, 10), "evaluation": _timed(5.0, 5, 50)}


def _feas12(projection=None, recovery=None, budget=None, phases=None, drop=(), waits=0.0):
    phases = phases or PHASES
    timings = {name: PhaseTiming(**entry) for name, entry in phases.items()}
    record = feasibility_record(config={}, effective_config={}, primary_endpoint="", source="", budget={
        "max_wall_minutes": 10}, setup=timings.pop("setup"), training=timings.pop("training"),
        evaluation=timings.pop("evaluation"), extra_phases=timings, capacity_waits_seconds=waits)
    # as worked out above; capacity waits longer than 40 s raise the reserve to them
    assert (record["projection"]["wall_seconds"], record["recovery"]["seconds"]) == (160.0 + max(40.0, waits),
                                                                                    max(40.0, waits))
    record["projection"].update(projection or {})
    for key in drop:
        del record["projection"][key]
    record["recovery"].update(recovery or {})
    ctx = _ctx(record)
    ctx.plan = SimpleNamespace(budget={"max_wall_minutes": 10} if budget is None else budget)
    return _messages(rules.FEAS_12(ctx))


def test_the_projection_recomputes_from_the_measurements_and_the_budget():
    assert _feas12() == []
    wrong = "projection {} do not recompute from the measurements and the budget (recomputed: 200.0 s, fits True)"
    for value in (199.0, 201.0):
        assert _feas12({"wall_seconds": value}) == [("FEAS-12", "unknown", wrong.format("wall_seconds"))]
    assert _feas12({"fits": False, "problems": ["over"]}) == [("FEAS-12", "unknown", wrong.format("fits, problems"))]
    assert _feas12({"extra": 1}) == [("FEAS-12", "unknown", wrong.format("extra"))]  # a field the projection has not
    # capacity waits not recorded: recomputed with none (0 s), so only the missing field differs
    assert _feas12(drop=["capacity_waits_seconds"]) == [("FEAS-12", "unknown", wrong.format("capacity_waits_seconds"))]
    assert _feas12({"capacity_waits_seconds": "many"}) == [  # not a number: recomputed with none
        ("FEAS-12", "unknown", wrong.format("capacity_waits_seconds"))]
    assert _feas12(waits=50.0) == []  # 50 s of recorded waits: a 50 s reserve, a 210 s projection
    for seconds in (39.0, 41.0):
        assert _feas12(recovery={"seconds": seconds}) == [("FEAS-12", "unknown", wrong.format("recovery.seconds"))]
    assert _feas12(recovery={"seconds": 0}) == []  # not a positive reserve: FEAS-5 says so, once
    # ... but only the seconds are left to FEAS-5: the reserve's GPU count is still recomputed
    assert _feas12(recovery={"seconds": 0, "gpu_count": 2}) == [("FEAS-12", "unknown", wrong.format("recovery.gpu_count"))]
    assert _feas12(recovery={"gpu_count": 2, "allocation_source": "guess"}) == [
        ("FEAS-12", "unknown", wrong.format("recovery.gpu_count, recovery.allocation_source"))]


def test_a_budget_the_projection_exceeds_is_recomputed_too():
    # a 3-minute budget (180 s) is less than the 200 s projected: the recomputed projection does not fit
    issues = _feas12(budget={"max_wall_minutes": 3})
    assert [(rule, status) for rule, status, _ in issues] == [("FEAS-12", "unknown")]
    assert issues[0][2].startswith("projection budget_wall_seconds, fits, problems do not recompute")
    assert issues[0][2].endswith("(recomputed: 200.0 s, fits False)")


def test_without_a_projection_or_measurements_it_cannot_be_trusted():
    assert _messages(rules.FEAS_12(_ctx({"projection": None}))) == [
        ("FEAS-12", "unknown", "no projection against the budget is recorded")]
    ctx = _ctx({"projection": {}, "measurements": {"training": PHASES["training"]}})
    assert rules.FEAS_12(ctx) == []  # no plan, no budget: nothing to recompute against
    ctx.plan = SimpleNamespace(budget={"max_wall_minutes": 10})
    assert _messages(rules.FEAS_12(ctx)) == [
        ("FEAS-12", "unknown", "the projection cannot be recomputed from the measurements ('setup')")]


def test_a_projection_that_does_not_fit_cannot_pass_its_fits_off_as_a_number():
    """A leniency found by the mutation run (feasibility.py `_same`, `or` -> `and` survived): JSON's false is not 0.
    A projection over its 3-minute budget (200 s > 180 s) recomputes `fits: false`; written as `fits: 0` next to a
    definitive verdict, FEAS-9 (which reads `fits is False`) did not fire, and FEAS-12 took 0 for false, so the
    record's feasibility passed although the full run does not fit. Now FEAS-12 says fits does not recompute."""
    timings = {name: PhaseTiming(**entry) for name, entry in PHASES.items()}
    record = feasibility_record(config={}, effective_config={}, primary_endpoint="", source="",
                                budget={"max_wall_minutes": 3}, setup=timings.pop("setup"),
                                training=timings.pop("training"), evaluation=timings.pop("evaluation"))
    assert record["projection"]["fits"] is False  # 200 s projected, 180 s budget
    record["projection"]["fits"] = 0
    ctx = _ctx(record, verdict="supported")
    ctx.plan = SimpleNamespace(budget={"max_wall_minutes": 3})
    assert rules.FEAS_9(ctx) == []  # FEAS-9 reads only a JSON false
    assert _messages(rules.FEAS_12(ctx)) == [("FEAS-12", "unknown", "projection fits do not recompute from the "
                                              "measurements and the budget (recomputed: 200.0 s, fits False)")]


@pytest.mark.parametrize("a, b", [(True, 1), (1, True), (False, 0), (0.0, False), (True, 1.0)])
def test_a_boolean_and_a_number_are_never_the_same_projection_value(a, b):
    # FEAS-12 compares with common.equal_json (feasibility's own _same was merged into it)
    assert equal_json(a, b, FLOAT_TOL) is False
    assert equal_json(a, a, FLOAT_TOL) is True and equal_json(b, b, FLOAT_TOL) is True
