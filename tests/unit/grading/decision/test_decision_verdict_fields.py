"""The grader's decision rules on the fields a direction verdict reports and the adaptive choice
(experiment/grading/decision.py; docs/contract-rules.md DEC-6, DEC-8, DEC-13), each on an input whose
expected finding is worked out in the test (issue 28 item 7: mutants that survived the record-level tests)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from grading_contexts.decision import (
    two_arm_best_lr_context as _two_arm_best_lr_ctx,
    CRITERION_C1,
    SELECTED,
    summaries as _summaries,
    three_lr_context as _three_lr_ctx,
)

from experiment.grading import decision
from experiment.grading.common import first_difference


# ---------------------------------------------------------------- DEC-8: RESULT's effect, margin and ci

# What the recomputation gives (DEC-8's paired_hoeffding): one criterion, its effect, interval and margin.
PRIMARY = {"id": "c", "effect": 0.5, "lower": 0.25, "upper": 0.75, "margin": 0.125}
REPORTED = {"verdict": "supported", "effect": 0.5, "margin": 0.125, "seeds": 1, "ci": [0.25, 0.75]}


def _direction_dec8(monkeypatch, **result):
    """DEC-8 of a direction_confidence record without a decision object, whose recomputation is PRIMARY."""
    monkeypatch.setattr(decision, "read_observations", lambda ctx: [])
    monkeypatch.setattr(decision, "DEC_6", lambda ctx: [])
    monkeypatch.setattr(decision, "_recompute", lambda ctx: ({"method": "paired_hoeffding", "criteria": [PRIMARY]}, ""))
    ctx = SimpleNamespace(result={**REPORTED, **result}, spec={"decision_rule": {"method": "paired_hoeffding", "seeds": [0]}},
                          plan=SimpleNamespace(vocabulary="direction_confidence", selection=None, role_to_arm={}))
    return [(issue.rule, issue.status, issue.message) for issue in decision.DEC_8(ctx)]


def test_a_direction_verdict_reporting_the_recomputed_effect_margin_seeds_and_interval_passes(monkeypatch):
    assert _direction_dec8(monkeypatch) == []


def test_a_reported_margin_other_than_the_spec_criterions_is_invalid(monkeypatch):
    assert _direction_dec8(monkeypatch, margin=0.25) == [
        ("DEC-8", "invalid", "RESULT.margin 0.25 is not the spec's 0.125")]


@pytest.mark.parametrize("ci", [
    [0.25, 0.875],  # the upper bound moved
    [0.375, 0.75],  # the lower bound moved
    [0.25, 0.75, 1.0],  # a third number
    [0.25],  # one bound only
    {"lower": 0.25, "upper": 0.75},  # not a [lower, upper] list
], ids=["upper", "lower", "three numbers", "one number", "an object"])
def test_a_reported_interval_that_is_not_the_recomputed_lower_upper_pair_is_invalid(monkeypatch, ci):
    issues = _direction_dec8(monkeypatch, ci=ci)
    assert [(rule, status) for rule, status, _ in issues] == [("DEC-8", "invalid")]
    assert issues[0][2].startswith("RESULT.ci ") and issues[0][2].endswith(" is not the recomputed interval")


def test_a_missing_interval_is_reported_missing_once_not_also_as_a_wrong_interval(monkeypatch):
    assert _direction_dec8(monkeypatch, ci=None) == [
        ("DEC-8", "invalid", "RESULT.ci is missing although the recomputed decision has an interval")]


@pytest.mark.parametrize("seeds", [2, 0, True], ids=["more", "fewer", "a bool"])
def test_reported_seeds_other_than_the_number_the_rule_schedules_are_invalid(monkeypatch, seeds):
    """The rule schedules one seed ([0]): RESULT.seeds is 1, not 2, 0 or true (a bool, though true == 1)."""
    assert _direction_dec8(monkeypatch, seeds=seeds) == [
        ("DEC-8", "invalid", f"RESULT.seeds {seeds!r} is not the 1 seed(s) the rule schedules and the observations hold")]


def test_best_lr_decision_objects_are_compared_per_criterion_not_as_a_paired_decision_record():
    """A best-LR rule computes point estimates per arm (DEC-8: no interval, no alpha, no adjustment), so a
    decision object that carries it, with its observations file named, is compared on its criteria (c1 =
    nll(a1) - nll(b1) = 1 - 3, c2 = time(a1) = 5: test_decision_recomputation_helpers's two-arm example),
    never rebuilt as a paired_hoeffding decision record."""

    ctx = _two_arm_best_lr_ctx(vocabulary="three_way")
    ctx.result["decision"].update(criteria=[{"id": "c1", "effect": -2.0}, {"id": "c2", "effect": 5.0}],
                                  observations_file={"name": "observations.jsonl", "sha256": "a" * 64})
    assert decision.DEC_8(ctx) == []


def test_a_best_lr_direction_verdict_reports_no_interval():
    """DEC-8: best_lr_threshold has no interval. The two-arm example: c1 = 1 - 3 = -2 against margin 0 is not
    met, so the verdict is refuted, with effect -2, margin 0 and the rule's one seed; a ci beside them is invalid."""

    ctx = _two_arm_best_lr_ctx(vocabulary="direction_confidence")
    ctx.result["decision"]["criteria"] = [{"id": "c1", "effect": -2.0}, {"id": "c2", "effect": 5.0}]
    ctx.result.update(verdict="refuted", effect=-2.0, margin=0.0, seeds=1)
    assert decision.DEC_8(ctx) == []
    ctx.result["ci"] = [-3.0, -1.0]
    assert [(i.rule, i.status, i.message) for i in decision.DEC_8(ctx)] == [
        ("DEC-8", "invalid", "RESULT.ci is reported although the best-LR rule computes no interval")]


@pytest.mark.parametrize("verdict, messages", [
    (None, []),  # no verdict posted: DEC-9 has nothing to compare (DEC-1 grades the missing decision)
    ("refuted", []),
    ("supported", ["verdict supported is not the recomputed refuted"]),
])
def test_dec9_holds_a_posted_verdict_and_only_a_posted_one_against_the_recomputed(verdict, messages):
    """The two-arm best-LR example recomputes to refuted (c1 = 1 - 3 = -2 is below its margin 0)."""

    ctx = _two_arm_best_lr_ctx(vocabulary="direction_confidence")
    if verdict is not None:
        ctx.result["verdict"] = verdict
    assert [i.message for i in decision.DEC_9(ctx)] == messages


@pytest.mark.parametrize("recomputed, posted, messages", [
    ("weak", "weak", []),
    ("weak", "strong", ["confidence strong although a criterion's interval does not settle its margin"]),
    ("strong", "strong", []),
    ("weak", None, []),  # no confidence posted: nothing claimed
])
def test_a_direction_verdict_cannot_claim_strong_confidence_the_recomputation_finds_weak(monkeypatch, recomputed,
                                                                                        posted, messages):
    """DEC-9 (direction_confidence): strong only when every criterion's interval settles its margin."""
    monkeypatch.setattr(decision, "read_observations", lambda ctx: [])
    monkeypatch.setattr(decision, "_recompute", lambda ctx: (
        {"method": "paired_hoeffding", "verdict": "refuted", "confidence": recomputed, "criteria": [PRIMARY]}, ""))
    ctx = SimpleNamespace(result={"verdict": "refuted", **({"confidence": posted} if posted else {})},
                          plan=SimpleNamespace(vocabulary="direction_confidence"))
    assert [i.message for i in decision.DEC_9(ctx)] == messages


@pytest.mark.parametrize("vocabulary, verdict, messages", [
    ("three_way", "inconclusive", []),  # a blocking limit may make any decided comparison inconclusive
    ("direction_confidence", "inconclusive", ["verdict inconclusive is not the recomputed supported"]),
    ("three_way", "abandoned", ["verdict abandoned is not the recomputed supported"]),  # sorts before inconclusive
])
def test_only_a_three_way_inconclusive_verdict_is_excused_from_the_recomputed_one(monkeypatch, vocabulary, verdict,
                                                                                  messages):
    """DEC-9: direction_confidence has no inconclusive verdict (supported or refuted); three-way's inconclusive
    is excused, no other word is."""
    monkeypatch.setattr(decision, "read_observations", lambda ctx: [])
    monkeypatch.setattr(decision, "_recompute", lambda ctx: (
        {"method": "paired_hoeffding", "verdict": "supported", "confidence": "strong", "criteria": [PRIMARY]}, ""))
    ctx = SimpleNamespace(result={"verdict": verdict}, plan=SimpleNamespace(vocabulary=vocabulary))
    assert [i.message for i in decision.DEC_9(ctx)] == messages


def test_dec10_leaves_best_lr_point_estimates_to_dec12():
    """DEC-10 compares scores with per-arm means of paired observations; a best-LR recomputation has none."""

    ctx = _two_arm_best_lr_ctx(vocabulary="three_way")
    ctx.result["evaluation"] = {"scores": [{"arm": "a1", "metric": "nll", "seed": 0, "value": 9.0}]}
    assert decision.DEC_10(ctx) == []


def _dec10(scores):
    """DEC-10 against a recomputation whose accuracy means are T 0.75 (seeds 0 and 1: 0.5 and 1.0) and B 0.25."""
    recomputed = {"method": "paired_hoeffding", "criteria": [{"metric": "accuracy", "per_arm_means": {"B": 0.25, "T": 0.75},
                                                             "per_arm_seed_means": {"T": {"0": 0.5, "1": 1.0}}}]}
    ctx = SimpleNamespace(result={"evaluation": {"scores": scores}}, plan=SimpleNamespace(selection=None))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decision, "read_observations", lambda ctx: [])
        patch.setattr(decision, "_recompute", lambda ctx: (recomputed, ""))
        return [i.message for i in decision.DEC_10(ctx)]


def _score(arm, seed, value, metric="accuracy"):
    return {"arm": arm, "seed": seed, "value": value, "metric": metric}


def test_each_arms_score_per_seed_reproduces_that_seeds_mean_or_the_arms():
    # T per seed; B (no per-seed means) its mean. Scores of another metric (f1) or another arm (Z, sorting
    # after both) at seeds without a mean are not this criterion's: not compared.
    scores = [_score("T", 0, 0.5), _score("T", 1, 1.0), _score("B", 0, 0.25), _score("T", 2, 9.0, metric="f1"),
              _score("Z", 3, 9.0), _score("A", 4, 9.0), _score("T", 5, 9.0, metric="acc")]  # "acc" < "accuracy"
    assert _dec10(scores) == []
    # a seed's scores (two here) are named by the first of them
    assert _dec10([_score("T", 0, 0.5), _score("T", 1, 0.75), _score("T", 1, 0.875)]) == [
        "arm T: score 0.75 does not reproduce from the observations (mean 1.0)"]
    assert _dec10([_score("B", 0, 0.5)]) == ["arm B: score 0.5 does not reproduce from the observations (mean 0.25)"]


# ---------------------------------------------------------------- DEC-8: the whole decision object


@pytest.mark.parametrize("recorded, expected", [
    ({"a": 1.0, "b": [1, "x"]}, {"a": 1.0, "b": [1, "x"]}),
    ({"a": 1.0 + 1e-12}, {"a": 1.0}),  # numbers within the grader's tolerance are the same number
    (2.0 + 1e-12, 2.0),
    ([0.5 + 1e-12, True], [0.5, True]),
])
def test_json_values_that_agree_have_no_first_difference(recorded, expected):
    assert first_difference(recorded, expected, "decision") is None


@pytest.mark.parametrize("recorded, expected, where", [
    ({"a": 1.0}, {"a": 1.0, "b": 2}, "decision"),  # a key missing
    ({"a": 1.0, "b": 2, "extra": 3}, {"a": 1.0, "b": 2}, "decision"),  # a key added
    (["a"], {"a": 1}, "decision"),  # not an object
    (None, {"a": 1}, "decision"),
    ({"a": [1, 2]}, {"a": [1, 2, 3]}, "decision.a"),  # a list one item short
    ({"a": [1, 2, 3, 4]}, {"a": [1, 2, 3]}, "decision.a"),  # one item long
    ({"a": (1, 2)}, {"a": [1, 2]}, "decision.a"),  # not a JSON list
    ({"a": [1, 2.5]}, {"a": [1, 2.0]}, "decision.a[1]"),
    ({"a": True}, {"a": 1}, "decision.a"),  # a bool is not the number 1
    ({"a": 1}, {"a": True}, "decision.a"),  # nor the number 1 the bool
    ({"a": "1"}, {"a": 1}, "decision.a"),
], ids=["key missing", "key added", "list for object", "null for object", "short list", "long list", "tuple",
        "number", "bool for number", "number for bool", "string for number"])
def test_the_first_difference_is_the_path_of_the_first_value_that_differs(recorded, expected, where):
    assert first_difference(recorded, expected, "decision") == where


def test_strings_and_other_json_values_differ_unless_equal_whatever_their_order():
    assert first_difference("b", "a", "decision.method") == "decision.method"
    assert first_difference("a", "b", "decision.method") == "decision.method"
    assert first_difference("a", "a", "decision.method") is None


def test_a_decision_record_that_cannot_be_rebuilt_leaves_the_reason_to_dec2():
    """An observations_file named by a path cannot be rebuilt into a decision record (DecisionError): DEC-2
    reports the path, and the whole-record comparison adds nothing."""
    ctx = SimpleNamespace(result={"decision": {"observations_file": {"name": "runs/o.jsonl", "sha256": "a" * 64}}},
                          plan=None)
    assert decision._whole_record(ctx, {"method": "paired_hoeffding", "criteria": []}) == []


# ---------------------------------------------------------------- DEC-6: completeness per evaluator


def test_a_criterions_items_are_those_of_the_evaluator_its_first_row_names():
    """Two rows of one metric name two evaluators: e1 lists i1 and i2, e2 only i1. Completeness is over the
    evaluator of the criterion's first row (e1), so i2 is missing for both arms (first in arm order: B)."""
    rows = [{"item_id": "i1", "arm": "T", "seed": 0, "metric": "accuracy", "value": 1.0, "evaluator_id": "e1"},
            {"item_id": "i1", "arm": "B", "seed": 0, "metric": "accuracy", "value": 0.0, "evaluator_id": "e2"}]
    ctx = SimpleNamespace(
        result={"decision": {"observations": rows}, "evaluation": {"evaluators": {
            "e1": {"items": {"ids": ["i1", "i2"]}}, "e2": {"items": {"ids": ["i1"]}}}}},
        spec={"decision_rule": {"method": "paired_hoeffding", "seeds": [0], "criteria": [
            {"id": "accuracy", "metric": "accuracy", "weights": {"T": 1, "B": -1}}]}},
        plan=SimpleNamespace(role_to_arm={}, selection=None, training_runs=[]))
    assert [i.message for i in decision.DEC_6(ctx)] == ["criterion accuracy: 2 observations missing (first: B, i2, seed 0)"]


# ---------------------------------------------------------------- DEC-13: the adaptive choice

ITEMS = ["i1", "i2", "i3", "i4"]
CRITERION = {"id": "c", "metric": "accuracy", "weights": {"treatment": 1, "baseline": -1}, "margin": 0.0,
             "bounds": [0.0, 1.0]}


def _adaptive_ctx(rule_seeds=None, items=ITEMS, criteria=(CRITERION,), recorded_selected="T2", planned_criterion="c"):
    """Candidates T1 and T2 for the treatment role, baseline B. On every item T1 is right, T2 and B are
    wrong: on the selection items T1's effect is 1 - 0 = 1 and T2's 0 - 0 = 0, so T1 is chosen."""
    correct = {"T1": True, "T2": False, "B": False}
    files = {f"{arm}.jsonl": [{"item_id": item, "arm": arm, "seed": 0, "correct": right} for item in items]
             for arm, right in correct.items()}
    rule = {"method": "paired_hoeffding", "criteria": list(criteria)}
    if rule_seeds is not None:
        rule["seeds"] = rule_seeds
    return SimpleNamespace(
        spec={"decision_rule": rule},
        plan=SimpleNamespace(selection={"role": "treatment", "candidates": ["T1", "T2"], "criterion": planned_criterion},
                             role_to_arm={"treatment": {"arm": "T2"}, "baseline": {"arm": "B"}}, seeds=[0],
                             criteria=[SimpleNamespace(arm_weights={"T1": 1, "T2": 1, "B": -1})]),
        result={"decision": {"selection": {"evaluator_id": "e", "selected": recorded_selected}},
                "evaluation": {"evaluators": {"e": {"items": {"ids": list(items)}}},
                               "scores": [{"arm": arm, "metric": "accuracy", "predictions_ref": name}
                                          for name, arm in (("T1.jsonl", "T1"), ("T2.jsonl", "T2"), ("B.jsonl", "B"))]}},
        evidence=SimpleNamespace(jsonl=lambda name: files.get(name)))


@pytest.mark.parametrize("rule_seeds", [None, [0]], ids=["the plan's seeds", "the rule's seeds"])
def test_the_choice_is_recomputed_from_the_selection_items_with_the_rules_or_else_the_plans_seeds(rule_seeds):
    expected, why = decision._recompute_selection(_adaptive_ctx(rule_seeds))
    assert why == ""
    assert (expected["selected"], expected["effects"]) == ("T1", {"T1": 1.0, "T2": 0.0})


def test_a_choice_that_cannot_be_recomputed_says_why_instead_of_raising():
    """One evaluated item cannot be split into selection and confirmation items (each needs one)."""
    expected, why = decision._recompute_selection(_adaptive_ctx(items=["i1"]))
    assert expected is None
    assert why == "the selection cannot be recomputed: adaptive selection needs at least 2 evaluated items (got 1)"


def test_the_choice_is_recomputed_on_the_criterion_the_spec_names_and_no_other():
    """The planned criterion b is not among the rule's criteria a and c (one sorting before it, one after)."""
    criteria = [{**CRITERION, "id": "a"}, {**CRITERION, "id": "c"}]
    assert decision._recompute_selection(_adaptive_ctx(criteria=criteria, planned_criterion="b")) == (
        None, "the decision_rule has no criterion b")


@pytest.mark.parametrize("recorded, treatment", [("T1", "T1"), ("T2", "T2"), ("X", "T2")],
                         ids=["a candidate", "the plan's own arm", "not a candidate"])
def test_while_the_choice_cannot_be_recomputed_the_recorded_candidate_takes_the_role(monkeypatch, recorded, treatment):
    """Without a recomputed choice the recorded one maps the role, if it is one of the candidates; a name that
    is not a candidate leaves the plan's arm (T2) in the role."""
    monkeypatch.setattr(decision, "_recomputed_selection", lambda ctx: (None, "cannot be recomputed"))
    ctx = _adaptive_ctx(recorded_selected=recorded)
    assert decision._role_to_arm(ctx) == {"treatment": treatment, "baseline": "B"}


# ---------------------------------------------------------------- ADAPT-1, DEC-14, DEC-11


def _manifest(arm, pair, ids):
    import hashlib
    import json

    return {"arm": arm, "pair": pair, "warmup_batches": 0, "adaptation_batch_ids": ids,
            "adaptation_batch_hash": hashlib.sha256(json.dumps(ids).encode()).hexdigest()}  # ADAPT-1's formula


def _adapt(manifests, confidence="strong"):
    ctx = SimpleNamespace(result={"adaptation_manifests": manifests, "confidence": confidence})
    return [(i.status, i.message) for i in decision.ADAPT_1(ctx)]


def test_arms_of_a_pair_on_identical_batches_may_be_strong():
    assert _adapt([_manifest("T", "p", ["b1", "b2"]), _manifest("B", "p", ["b1", "b2"]),
                   _manifest("X", "q", ["b9"])]) == []


def test_arms_of_a_pair_on_different_batches_cannot_be_strong():
    manifests = [_manifest("T", "p", ["b1", "b2"]), _manifest("B", "p", ["b1", "b3"])]
    assert _adapt(manifests) == [("invalid", "pair p: arms B, T consumed different batches but confidence is 'strong', "
                                             "not weak")]
    assert _adapt(manifests, confidence="weak") == []
    assert _adapt(manifests, confidence=None) == []
    # different batches in different pairs are no mismatch
    assert _adapt([_manifest("T", "p", ["b1"]), _manifest("B", "q", ["b2"])]) == []


def test_a_batch_hash_that_is_not_sha256_of_the_ids_json_is_invalid_and_the_next_arm_still_checked():
    wrong = {**_manifest("T", "p", ["b1"]), "adaptation_batch_hash": "0" * 64}
    assert _adapt([{"arm": "S", "pair": "p", "warmup_batches": 0, "adaptation_batch_ids": "b1,b2"}, wrong, _manifest("B", "p", ["b1"])]) == [
        ("invalid", "arm S: adaptation_batch_ids is not a list"),
        ("invalid", "arm T: adaptation_batch_hash is not sha256(json.dumps(adaptation_batch_ids))")]


OBS_REF = {"name": "observations.jsonl", "sha256": "a" * 64}
GATE = {"event": "gate", "gate": "decision", "status": "passed"}
ADDED = {"event": "evidence_added", **OBS_REF}


@pytest.mark.parametrize("events, messages", [
    ([GATE, ADDED], []),
    ([{**GATE, "status": "failed"}, ADDED], ["events.jsonl does not record the decision gate passing"]),
    ([{**GATE, "gate": "evaluation"}, ADDED], ["events.jsonl does not record the decision gate passing"]),
    ([{**GATE, "event": "gate_started"}, ADDED], ["events.jsonl does not record the decision gate passing"]),
    ([{**GATE, "event": "evaluation"}, ADDED], ["events.jsonl does not record the decision gate passing"]),
    ([{**GATE, "gate": "correctness"}, ADDED], ["events.jsonl does not record the decision gate passing"]),
    ([{**GATE, "status": "started"}, ADDED], ["events.jsonl does not record the decision gate passing"]),
    ([GATE, {**ADDED, "event": "checkpoint_saved"}],
     ["events.jsonl does not log observations.jsonl with the decision's sha256"]),
    ([GATE, {**ADDED, "name": "a.jsonl"}], ["events.jsonl does not log observations.jsonl with the decision's sha256"]),
    ([GATE, {**ADDED, "sha256": "0" * 64}], ["events.jsonl does not log observations.jsonl with the decision's sha256"]),
    ([GATE, {**ADDED, "sha256": "b" * 64}], ["events.jsonl does not log observations.jsonl with the decision's sha256"]),
    ([GATE, {**ADDED, "name": "other.jsonl"}], ["events.jsonl does not log observations.jsonl with the decision's sha256"]),
    ([GATE, {**ADDED, "event": "evidence_removed"}],
     ["events.jsonl does not log observations.jsonl with the decision's sha256"]),
], ids=["both", "gate failed", "another gate", "another event", "another sha256", "another file", "not added",
        "event before gate", "gate before decision", "status after passed", "event before evidence_added",
        "name before", "sha256 before"])
def test_a_run_directorys_event_log_records_the_decision_gate_and_the_observations_file(events, messages):
    ctx = SimpleNamespace(run_dir="run", events=events, result={"decision": {"observations_file": OBS_REF}})
    assert [(i.status, i.message) for i in decision.DEC_14(ctx)] == [("unverified", m) for m in messages]


def test_dec14_applies_to_run_directories_with_a_decision_or_a_verdict_only():
    assert decision.DEC_14(SimpleNamespace(run_dir=None, events=[], result={"verdict": "supported"})) == []
    assert decision.DEC_14(SimpleNamespace(run_dir="run", events=[], result={})) == []
    verdict_only = decision.DEC_14(SimpleNamespace(run_dir="run", events=[], result={"verdict": "supported"}))
    assert [i.message for i in verdict_only] == ["events.jsonl does not record the decision gate passing"]


def _dec11(weights, recorded, arms=("T", "B"), adjustment=None, method="paired_hoeffding", recorded_adjustment=None):
    ctx = SimpleNamespace(
        spec={"decision_rule": {"method": method, "criteria": [{"weights": weights}]}},
        result={"decision": {"role_to_arm": recorded, **({"adjustment": recorded_adjustment} if recorded_adjustment else {})}},
        plan=SimpleNamespace(arms=[SimpleNamespace(name=a) for a in arms], selection=None,
                             role_to_arm={"treatment": {"arm": "T"}, "baseline": {"arm": "B"}},
                             decision={"adjustment": adjustment} if adjustment else None))
    return [(i.status, i.message) for i in decision.DEC_11(ctx)]


def test_role_keyed_weights_record_the_specs_role_mapping():
    weights = {"treatment": 1, "baseline": -1}
    assert _dec11(weights, {"treatment": "T", "baseline": "B"}) == []
    assert _dec11(weights, {"treatment": "B", "baseline": "T"}) == [
        ("invalid", "role_to_arm {'treatment': 'B', 'baseline': 'T'} is not the spec's mapping "
                    "{'treatment': 'T', 'baseline': 'B'}")]
    # weights keyed by arm names: no mapping to record
    assert _dec11({"T": 1, "B": -1}, None) == []
    # a role label that is also an arm's name is that arm, not a role
    assert _dec11({"treatment": 1, "B": -1}, None, arms=("treatment", "B")) == []
    # only a paired_hoeffding decision object records the mapping (experiment.stats.decision.decision_record):
    # best_lr_threshold weighs arms through their runs, and a method the grader does not know records none
    assert _dec11(weights, None, method="best_lr_threshold") == []
    assert _dec11(weights, {"treatment": "B"}, method="sequential_test") == []


def test_simultaneous_criteria_record_the_bonferroni_adjustment():
    weights = {"T": 1, "B": -1}
    assert _dec11(weights, None, adjustment="bonferroni", recorded_adjustment="bonferroni") == []
    assert _dec11(weights, None, adjustment="bonferroni") == [
        ("invalid", "simultaneous criteria: the decision object does not record the Bonferroni adjustment")]
    assert _dec11(weights, None, adjustment="none") == []


# ---------------------------------------------------------------- DEC-12: the LR grid's edge


def test_a_grid_edge_is_reported_only_where_the_selected_rate_is_at_an_edge_of_its_grid():
    assert decision._recompute(_three_lr_ctx())[0]["grid_edge"] is False
    assert decision.DEC_12(_three_lr_ctx(grid_edge=False)) == []
    assert [(i.status, i.message) for i in decision.DEC_12(_three_lr_ctx(grid_edge=True))] == [
        ("invalid", "grid_edge True is not the recomputed False")]


# ---------------------------------------------------------------- DEC-12: what the record says of the selection


def test_the_posted_selection_per_arm_is_the_recomputed_one():
    assert _summaries(SELECTED) == []
    assert _summaries({"A": SELECTED["A"]}) == []  # metrics.arms need not post every arm
    for key, value in (("selected_run", "a1"), ("selected_lr", 0.01), ("grid_edge", True), ("nll", 1.5)):
        assert _summaries({**SELECTED, "A": {**SELECTED["A"], key: value}}) == [
            f"metrics.arms A: {key} not the recomputed selection"]


def test_a_retained_verdict_record_holds_every_arms_selection_and_the_recomputed_criteria():
    verdict = {"per_arm": SELECTED, "criteria": [CRITERION_C1]}
    assert _summaries({}, {"verdict.json": verdict}) == []
    assert _summaries({}, {"verdict.json": {**verdict, "per_arm": {"A": SELECTED["A"]}}}) == [
        "verdict.json B: the arm not the recomputed selection"]
    for key, value in (("effect", -2.0), ("margin", 0.5), ("met", True), ("metric", "loss"), ("metric", "perplexity")):
        assert _summaries({}, {"verdict.json": {**verdict, "criteria": [{**CRITERION_C1, key: value}]}}) == [
            "verdict.json: criterion c1 is not the recomputed one"]
    assert _summaries({}, {"verdict.json": {**verdict, "criteria": []}}) == ["verdict.json: criterion c1 is not the recomputed one"]
    # not a verdict record: a .jsonl file, or JSON without per_arm and criteria
    assert _summaries({}, {"verdict.jsonl": {"per_arm": {}, "criteria": []}, "other.json": {"per_arm": {}},
                           "more.json": {"per_arm": {}, "criteria": "c1"}}) == []


def test_each_runs_recomputed_metric_is_what_metrics_arms_posts_for_it():
    """A run's value is posted under its name, or under its arm's `runs` keyed by its learning rate."""
    rows = [{"arm": "a1", "metric": "nll", "value": 2.0}, {"arm": "a2", "metric": "nll", "value": 1.0},
            {"arm": "a3", "metric": "nll", "value": 3.0}]

    def run_metrics(arms):
        ctx = _three_lr_ctx(metrics={"arms": arms})
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(decision, "derived_rows", lambda ctx: (rows, ""))
            return [i.message for i in decision._run_metrics(ctx)]

    by_rate = {"0.02": {"nll": 1.0}, "4e-2": {"nll": 3.0}}
    assert run_metrics({"a1": {"nll": 2.0}, "A": {"runs": by_rate}}) == []
    assert run_metrics({"a1": {"nll": 2.5}, "A": {"runs": by_rate}}) == ["metrics.arms does not report the recomputed a1 nll"]
    assert run_metrics({"a1": {"nll": 2.0}, "A": {"runs": {"0.02": {"nll": 1.0}, "rate": {"nll": 3.0}}}}) == [
        "metrics.arms does not report the recomputed a3 nll"]
    assert run_metrics({}) == ["metrics.arms does not report the recomputed a1 nll, a2 nll, a3 nll"]


def test_a_long_list_of_runs_not_posted_names_the_first_four():
    rows = [{"arm": run, "metric": metric, "value": 1.0} for run in ("a1", "a2", "a3") for metric in ("nll", "time")]
    ctx = _three_lr_ctx(metrics={"arms": {}})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decision, "derived_rows", lambda ctx: (rows, ""))
        assert [i.message for i in decision._run_metrics(ctx)] == [
            "metrics.arms does not report the recomputed a1 nll, a1 time, a2 nll, a2 time"]


def test_a_recorded_selected_learning_rate_is_the_recomputed_one():
    def dec12(per_arm):
        ctx = _three_lr_ctx(grid_edge=False)
        ctx.result["decision"]["selection"] = {"per_arm": per_arm}
        return [(i.status, i.message) for i in decision.DEC_12(ctx)]

    assert dec12({"A": {"selected_lr": 0.02}, "B": {"selected_lr": 0.01}}) == []
    assert dec12({"A": {"selected_lr": 0.02}}) == []  # an arm not recorded is not compared
    assert dec12({"A": {"selected_lr": 0.01}, "B": {"selected_lr": 0.01}}) == [
        ("invalid", "arm A: recorded selected LR 0.01 is not the recomputed 0.02")]


# ---------------------------------------------------------------- the decision category's grade


def _graded(spec, result, finds=None):
    """decision.grade with every rule check stubbed, each finding what `finds` gives for its name (the
    branches of grade itself)."""
    ctx = SimpleNamespace(spec=spec, result=result, revision_fields=set(), measured=True)
    with pytest.MonkeyPatch.context() as patch:
        for name in ("DEC_2", "DEC_3", "DEC_4", "DEC_5", "DEC_6", "DEC_7", "DEC_8", "DEC_9", "DEC_10", "DEC_11", "DEC_12",
                     "DEC_13", "DEC_14", "ADAPT_1"):
            patch.setattr(decision, name, lambda ctx, name=name: list((finds or {}).get(name, [])))
        patch.setattr(decision, "CHECKS", [decision.DEC_1] + [getattr(decision, n) for n in (
            "DEC_2", "DEC_3", "DEC_4", "DEC_5", "DEC_6", "DEC_7", "DEC_8", "DEC_9", "DEC_10", "DEC_11", "DEC_12", "DEC_13",
            "DEC_14", "ADAPT_1")])
        grade = decision.grade(ctx)
    return grade.status, [(i.rule, i.status, i.message) for i in grade.issues], grade.notes


PAIRED_RULE = {"decision_rule": {"method": "paired_hoeffding"}}
REVISION_RULE = {"verdict_rule": {"method": "best_lr_threshold"}}


def test_no_spec_grades_the_decision_unknown():
    assert _graded(None, {})[:2] == ("unknown", [("DEC-1", "unknown", "no spec to grade the decision against")])


def test_a_spec_without_a_rule_grades_not_applicable_unless_a_decision_object_is_posted():
    assert _graded({}, {}) == ("not_applicable", [], ["the spec has no decision_rule"])
    assert _graded({}, {"decision": {}})[:2] == ("invalid", [
        ("DEC-1", "invalid", "the spec has no decision_rule but RESULT carries a decision object")])


def test_a_rule_from_the_recorded_revision_is_recomputed_and_graded_as_the_exchange_does():
    assert _graded(REVISION_RULE, {"verdict": "supported"}) == ("not_applicable", [], [decision.REVISION_NOTE])
    assert _graded(REVISION_RULE, {})[:2] == ("unknown", [("DEC-1", "unknown", "no verdict (the comparison was not decided)")])
    status, issues, _ = _graded(REVISION_RULE, {"verdict": "supported", "decision": {}})
    assert status == "invalid" and [i[:2] for i in issues] == [("DEC-1", "invalid")]
    from experiment.grading.common import Issue

    # the recorded revision's rule: the checks a bare verdict allows (no decision object to check the shape of)
    finds = {name: [Issue(name.replace("_", "-"), "invalid", "found")] for name in (
        "DEC_2", "DEC_3", "DEC_4", "DEC_5", "DEC_6", "DEC_7", "DEC_8", "DEC_9", "DEC_10", "DEC_11", "DEC_12", "DEC_13",
        "DEC_14", "ADAPT_1")}
    status, issues, notes = _graded(REVISION_RULE, {"verdict": "supported"}, finds)
    assert (status, notes) == ("invalid", [decision.REVISION_NOTE])
    assert [rule for rule, _, _ in issues] == ["DEC-3", "DEC-6", "DEC-7", "DEC-8", "DEC-9", "DEC-12", "DEC-14", "ADAPT-1"]


def test_a_specs_own_rule_needs_the_decision_object_and_then_every_check():
    assert _graded(PAIRED_RULE, {"verdict": "supported"})[:2] == (
        "unverified", [("DEC-1", "unverified", "a verdict was posted but RESULT has no decision object")])
    assert _graded(PAIRED_RULE, {"verdict": "supported", "decision": {}})[:2] == ("verified", [])
    from experiment.grading.common import Issue

    finds = {name: [Issue(name.replace("_", "-"), "unverified", "found")] for name in ("DEC_2", "DEC_13", "ADAPT_1")}
    status, issues, _ = _graded(PAIRED_RULE, {"verdict": "supported", "decision": {}}, finds)
    assert (status, [rule for rule, _, _ in issues]) == ("unverified", ["DEC-2", "DEC-13", "ADAPT-1"])


def test_a_spec_without_a_rule_still_holds_adaptation_manifests_to_adapt1():
    from experiment.grading.common import Issue

    finds = {"ADAPT_1": [Issue("ADAPT-1", "invalid", "found")], "DEC_2": [Issue("DEC-2", "invalid", "found")]}
    assert _graded({}, {}, finds) == ("invalid", [("ADAPT-1", "invalid", "found")], [])


# ---------------------------------------------------------------- DEC-13: the frozen selection in the evidence


def _frozen_ctx(entries, files, run_dir=None, events=None):
    """Retained files by name: (sha256, JSON content)."""
    return SimpleNamespace(
        result={"decision": {"observations_file": {"name": "observations.jsonl"}}},
        evidence=SimpleNamespace(entries=[{"name": n} for n in entries],
                                 sha256=lambda name: files.get(name, (None, None))[0],
                                 json=lambda name: files.get(name, (None, None))[1]),
        run_dir=run_dir, events=events)


def _selection_record():
    import hashlib
    import json

    body = {"version": 1, "selected": "T1", "candidates": ["T1", "T2"]}
    # experiment/stats/selection.py's record hash: canonical JSON of the record without its hash and file ref
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    frozen = {**body, "record_sha256": digest}
    return frozen, {**frozen, "file": {"name": "adaptive-selection.json", "sha256": "s" * 64}}


def _frozen(entries=("adaptive-selection.json", "observations.jsonl"), frozen=None, sha="s" * 64, **ctx_args):
    retained, recorded = _selection_record()
    files = {"adaptive-selection.json": (sha, retained if frozen is None else frozen), "observations.jsonl": ("o", None)}
    return [(i.status, i.message) for i in decision._frozen_in_evidence(_frozen_ctx(entries, files, **ctx_args), recorded)]


def test_the_frozen_selection_is_retained_with_its_sha256_as_the_recorded_selection_before_the_observations():
    assert _frozen() == []
    for sha in ("t" * 64, "r" * 64):  # sorting after and before the named "s" * 64
        assert _frozen(sha=sha) == [("unverified", "the frozen selection file 'adaptive-selection.json' is not "
                                                   "retained under the sha256 decision.selection names")]
    retained, _ = _selection_record()
    assert _frozen(frozen={**retained, "selected": "T2"}) == [
        ("invalid", "the retained adaptive-selection.json is not the selection decision.selection records")]
    assert _frozen(frozen=[retained]) == [
        ("invalid", "the retained adaptive-selection.json is not the selection decision.selection records")]
    assert _frozen(entries=("observations.jsonl", "adaptive-selection.json")) == [
        ("invalid", "adaptive-selection.json was retained after observations.jsonl: the selection was not frozen before "
                    "the confirmation observations")]
    assert _frozen(entries=("adaptive-selection.json",)) == []  # no observations file retained: no order to hold


@pytest.mark.parametrize("wrong", ["0" * 64, "f" * 64])
def test_a_selection_whose_record_sha256_is_not_the_hash_of_its_body_is_invalid_even_when_both_copies_agree(wrong):
    retained, recorded = _selection_record()
    retained, recorded = {**retained, "record_sha256": wrong}, {**recorded, "record_sha256": wrong}
    files = {"adaptive-selection.json": ("s" * 64, retained)}
    ctx = _frozen_ctx(["adaptive-selection.json"], files)
    assert [(i.status, i.message) for i in decision._frozen_in_evidence(ctx, recorded)] == [
        ("invalid", "the retained adaptive-selection.json is not the selection decision.selection records")]


def test_a_file_is_not_retained_after_itself():
    """The order rule is between two files; a record naming one file for both fails elsewhere (DEC-3)."""
    retained, recorded = _selection_record()
    files = {"adaptive-selection.json": ("s" * 64, retained)}
    ctx = _frozen_ctx(["adaptive-selection.json"], files, run_dir="run",
                      events=[{"event": "evidence_added", "name": "adaptive-selection.json"}])
    ctx.result["decision"]["observations_file"] = {"name": "adaptive-selection.json"}
    assert decision._frozen_in_evidence(ctx, recorded) == []


@pytest.mark.parametrize("events, flagged", [
    ([("adaptive-selection.json", "evidence_added"), ("observations.jsonl", "evidence_added")], False),
    ([("observations.jsonl", "evidence_added"), ("adaptive-selection.json", "evidence_added")], True),
    ([("observations.jsonl", "evidence_added")], True),
    ([("adaptive-selection.json", "evidence_removed"), ("observations.jsonl", "evidence_added")], True),
    ([("adaptive-selection.json", "checkpoint_saved"), ("observations.jsonl", "evidence_added")], True),
    ([("adaptive-selection.json", "evidence_added")], False),
])
def test_in_a_run_directory_the_event_log_adds_the_selection_before_the_observations(events, flagged):
    logged = [{"event": event, "name": name} for name, event in events]
    expected = [("invalid", "events.jsonl does not log adaptive-selection.json before observations.jsonl")]
    assert _frozen(run_dir="run", events=logged) == (expected if flagged else [])


def _dec13(selection, adaptive=True, planned=True, recomputed=(None, "predictions not inline"), items=("i1", "i2")):
    spec = {"experiment_features": {"adaptive_selection": adaptive}}
    decision_object = {} if selection is None else {"selection": selection}
    ctx = SimpleNamespace(spec=spec, result={"decision": decision_object, "evaluation": {"evaluators": {
        "e": {"items": {"ids": list(items)}} if items is not None else {}}}},
        plan=SimpleNamespace(selection={"role": "treatment", "candidates": ["T1", "T2"], "criterion": "c"} if planned else None))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decision, "_recomputed_selection", lambda ctx: recomputed)
        patch.setattr(decision, "read_observations", lambda ctx: None)
        patch.setattr(decision, "_frozen_in_evidence", lambda ctx, recorded: [])
        patch.setattr(decision.sel, "selection_problems", lambda recorded, items, expected: [])
        return [(i.status, i.message) for i in decision.DEC_13(ctx)]


FROZEN = {"frozen_before_confirmation": True, "evaluator_id": "e"}


def test_a_selection_the_spec_does_not_ask_for_is_invalid():
    assert _dec13(None, adaptive=False) == []
    assert _dec13(FROZEN, adaptive=False) == [
        ("invalid", "decision.selection is recorded but the spec asks for no adaptive selection")]
    assert _dec13(FROZEN, adaptive="true") == [  # only the JSON true asks for it
        ("invalid", "decision.selection is recorded but the spec asks for no adaptive selection")]


@pytest.mark.parametrize("selection", [None, {"evaluator_id": "e"}, {**FROZEN, "frozen_before_confirmation": "true"},
                                       ["frozen"]])
def test_adaptive_selection_needs_a_selection_frozen_before_confirmation(selection):
    assert _dec13(selection) == [
        ("invalid", "adaptive selection needs decision.selection.frozen_before_confirmation true")]


def test_adaptive_selection_needs_candidates_and_says_why_a_choice_cannot_be_recomputed():
    assert _dec13(FROZEN, planned=False) == [
        ("invalid", "the spec's arms give adaptive selection no candidates to choose between")]
    assert _dec13(FROZEN) == [("unverified", "the selection cannot be recomputed: predictions not inline")]
    assert _dec13(FROZEN, recomputed=({"selected": "T1"}, "")) == []
    assert _dec13(FROZEN, items=None) == [
        ("invalid", "decision.selection names evaluator 'e', which lists no explicit items")]


def test_posted_numbers_of_the_selection_agree_within_float_noise():
    near = {**SELECTED, "A": {**SELECTED["A"], "nll": 1.0 + 1e-13, "selected_lr": 0.02 + 1e-15}}
    assert _summaries(near) == []


def test_a_retained_verdict_record_of_any_name_holds_every_arm():
    verdict = {"per_arm": {"A": SELECTED["A"]}, "criteria": [CRITERION_C1]}
    assert _summaries({}, {"a-verdict.json": verdict}) == ["a-verdict.json B: the arm not the recomputed selection"]


def test_a_retained_criterion_claiming_met_when_the_recomputation_is_not_or_the_reverse_is_invalid():
    """c1 = -1 * nll(A) + 1 * nll(B) = -1 + 4 = 3 against margin 0: met."""
    met = {**CRITERION_C1, "effect": 3.0, "met": True}
    verdict = {"per_arm": SELECTED, "criteria": [met]}
    assert _summaries({}, {"verdict.json": verdict}, weights={"A": -1, "B": 1}) == []
    verdict["criteria"] = [{**met, "met": False}]
    assert _summaries({}, {"verdict.json": verdict}, weights={"A": -1, "B": 1}) == [
        "verdict.json: criterion c1 is not the recomputed one"]


@pytest.mark.parametrize("confidence, flagged", [("strong", True), ("weak", False), (None, False)])
def test_a_grid_edge_selection_cannot_be_strong(confidence, flagged):
    """A at two rates (NLL 2 at 0.01, 1 at 0.02): the lower is at the grid's edge."""
    ctx = _three_lr_ctx(values={"a1": 2.0, "a2": 1.0, "b1": 4.0}, grid_edge=True)
    ctx.plan.training_runs = [r for r in ctx.plan.training_runs if r.name != "a3"]
    if confidence:
        ctx.result["confidence"] = confidence
    messages = [i.message for i in decision.DEC_12(ctx)]
    assert ("a grid-edge LR was selected but confidence is strong" in messages) is flagged


def test_dec9_leaves_a_three_way_records_confidence_to_gen4(monkeypatch):
    """DEC-9's strong-confidence rule is the direction vocabulary's: a three-way record carrying confidence
    strong is GEN-4's finding (the three-way shape has no confidence), not DEC-9's; a recomputed confidence
    of strong is never a finding."""
    monkeypatch.setattr(decision, "read_observations", lambda ctx: [])
    monkeypatch.setattr(decision, "_recompute", lambda ctx: (
        {"method": "paired_hoeffding", "verdict": "supported", "confidence": "weak", "criteria": [PRIMARY]}, ""))
    ctx = SimpleNamespace(result={"verdict": "supported", "confidence": "strong"},
                          plan=SimpleNamespace(vocabulary="three_way"))
    assert decision.DEC_9(ctx) == []


@pytest.mark.parametrize("rule,seeds,finding", [
    ({"seeds": [0, 1]}, 2, False), ({"seeds": [0, 1]}, 1, True),
    ({}, 1, False), ({}, 2, True),  # a rule naming no seeds schedules one
])
def test_result_seeds_is_the_number_of_seeds_the_rule_schedules(rule, seeds, finding):
    ctx = SimpleNamespace(result={"verdict": "supported", "effect": 0.1, "margin": 0.0, "seeds": seeds, "ci": [0.0, 0.2]},
                          spec={"decision_rule": {"method": "paired_hoeffding", **rule}})
    issues = decision._direction_fields(ctx, {"method": "paired_hoeffding", "criteria": [{"lower": 0.0}]})
    scheduled = len(rule.get("seeds", [0]))
    assert [issue.message for issue in issues] == ([f"RESULT.seeds {seeds} is not the {scheduled} seed(s) the rule "
                                                    "schedules and the observations hold"] if finding else [])


@pytest.mark.parametrize("method,findings", [
    ("paired_hoeffding", []),  # three_way: inconclusive may stand for a decided comparison
    ("best_lr_threshold", ["verdict inconclusive is not the recomputed supported"]),  # the best-LR rule always decides
])
def test_only_a_paired_three_way_decision_lets_inconclusive_stand(monkeypatch, method, findings):
    ctx = SimpleNamespace(result={"verdict": "inconclusive"}, plan=SimpleNamespace(vocabulary="three_way"))
    monkeypatch.setattr(decision, "_verdict_recomputed", lambda ctx: {"method": method, "verdict": "supported"})
    assert [issue.message for issue in decision.DEC_9_verdict(ctx)] == findings
