"""The grader's recomputation helpers of the decision (experiment/grading/decision.py, decision_rows.py), each on inputs
whose expected value is worked out by hand in the test (issue 28 item 7: mutants that survived the
record-level tests)."""

from __future__ import annotations

import pytest
from grading_contexts.decision import (
    observation_context as _observation_ctx,
    two_arm_best_lr_context as _two_arm_best_lr_ctx,
)

from experiment.grading import decision, decision_rows


def _rows(*predictions):
    return [{"prediction": p} for p in predictions]


def test_held_out_nll_is_token_weighted_or_the_mean_of_example_means():
    rows = _rows({"nll_sum": 7.5, "n_tokens": 2}, {"nll_sum": 5.0, "n_tokens": 4}, {"nll_sum": 9.0, "n_tokens": 0})
    # token_mean: (7.5 + 5) / (2 + 4); example_mean: (7.5/2 + 5/4) / 2 = (3.75 + 1.25) / 2; the row of 0 tokens
    # counts in neither (non-integral quotients, so floor division or another operator gives another value)
    assert decision_rows.nll_from_predictions(rows, "token_mean") == 12.5 / 6
    assert decision_rows.nll_from_predictions(rows, "example_mean") == 2.5
    # only example_mean is the mean of example means: any other name is the token-weighted default
    assert decision_rows.nll_from_predictions(rows, "batch_mean") == 12.5 / 6
    # a negative token count is not a count: such a row is not counted either
    rows.append({"prediction": {"nll_sum": 1.0, "n_tokens": -1}})
    assert decision_rows.nll_from_predictions(rows, "token_mean") == 12.5 / 6


@pytest.mark.parametrize("prediction", [{"nll_sum": "6", "n_tokens": 3}, {"nll_sum": 6.0, "n_tokens": "3"},
                                        {"nll_sum": 6.0, "n_tokens": 3.0}, {"n_tokens": 3}, {"nll_sum": 6.0}])
def test_held_out_nll_is_not_recomputed_from_a_malformed_row(prediction):
    rows = _rows({"nll_sum": 4.0, "n_tokens": 1}, prediction)
    assert decision_rows.nll_from_predictions(rows, "token_mean") is None


def test_held_out_nll_of_no_rows_or_no_tokens_is_not_recomputed():
    assert decision_rows.nll_from_predictions([], "token_mean") is None
    assert decision_rows.nll_from_predictions(_rows({"nll_sum": 1.0, "n_tokens": 0}), "example_mean") is None


class _Evidence:
    def __init__(self, data: bytes):
        self.data = data

    def bytes(self, name):
        return self.data if name == "observations.jsonl" else None


@pytest.mark.parametrize("rows, size, flagged", [
    (100_000, 10 * 1024 * 1024, False),  # exactly the contract's caps: read
    (100_001, 1, True),  # one observation over
    (1, 10 * 1024 * 1024 + 1, True),  # one byte over
])
def test_the_observations_file_is_capped_at_the_contracts_10_mib_and_100_000_rows(monkeypatch, rows, size, flagged):
    """DEC-4 (docs/contract-rules.md): the observations file holds at most 10 MiB and 100 000 observations."""
    from types import SimpleNamespace

    monkeypatch.setattr(decision, "observation_rows", lambda ctx: ([{}] * rows, ""))
    monkeypatch.setattr(decision, "decision_object", lambda ctx: {"observations_file": {"name": "observations.jsonl"}})
    issues = decision.DEC_4(SimpleNamespace(evidence=_Evidence(b"x" * size)))
    assert [(issue.rule, issue.status) for issue in issues] == ([("DEC-4", "unverified")] if flagged else [])


class _Files:
    def __init__(self, files: dict):
        self.files = files

    def jsonl(self, name):
        return self.files.get(name)


def _ctx(files: dict, scores: list):
    from types import SimpleNamespace

    return SimpleNamespace(result={"evaluation": {"scores": scores}}, evidence=_Files(files))


SCORES = [{"arm": "a", "metric": "accuracy", "predictions_ref": "a.jsonl"},
          {"arm": "z", "metric": "accuracy", "predictions_ref": "z.jsonl"}]


def test_prediction_rows_of_the_chosen_arms_become_observations_correct_scored_1_and_wrong_0():
    rows = [{"item_id": "i1", "arm": "a", "seed": 0, "correct": True},
            {"item_id": "i2", "arm": "a", "seed": 0, "correct": False},
            {"item_id": "i3", "arm": "a", "seed": 1, "value": 0.25, "metric": "f1"}]
    found = decision_rows.prediction_observations(_ctx({"a.jsonl": rows}, SCORES), {"a"})  # z.jsonl is not read
    assert [(o.item_id, o.seed, o.value, o.metric) for o in found] == [
        ("i1", 0, 1.0, "accuracy"), ("i2", 0, 0.0, "accuracy"), ("i3", 1, 0.25, "f1")]


@pytest.mark.parametrize("files", [{}, {"a.jsonl": [{"item_id": "i1", "arm": "a", "seed": 0}]}],
                         ids=["file not retained", "row without value or correct"])
def test_prediction_rows_that_cannot_be_read_give_no_observations(files):
    assert decision_rows.prediction_observations(_ctx(files, SCORES), {"a"}) is None


@pytest.mark.parametrize("spec, revision_fields, from_revision", [
    ({}, set(), False),  # no rule at all: nothing comes from the revision
    ({"verdict_rule": {"method": "best_lr_threshold"}}, set(), True),  # a verdict_rule for a spec without a decision_rule
    ({"decision_rule": {"method": "paired_hoeffding"}, "verdict_rule": {"x": 1}}, set(), False),  # the spec's own rule
    ({"decision_rule": {"method": "paired_hoeffding"}}, {"decision_rule"}, True),  # a decision_rule the revision adds
])
def test_the_rule_comes_from_the_revision_only_as_its_docstring_says(spec, revision_fields, from_revision):
    from types import SimpleNamespace

    from experiment.grading.evidence import EvidenceAccess

    ctx = SimpleNamespace(spec=spec, revision_fields=revision_fields, spec_model=None, evidence=EvidenceAccess({}))
    assert decision._from_revision(ctx) is from_revision


def test_a_revision_that_only_pins_the_specs_open_margin_adds_no_rule():
    """The spec's own decision_rule with its margin UNRESOLVED, the revision pinning it (tests/spec_variants.py
    margin-open-pinned): the rule is the spec's (a decision object, DEC-1), the pin graded unverified (DEC-15).
    On the parent grader _from_revision said True here (the decision graded not_applicable / its object invalid)."""
    import json
    from types import SimpleNamespace

    from experiment.contract.result_models import evidence_file
    from experiment.grading.evidence import EvidenceAccess

    written = {"decision_rule": {"method": "paired_hoeffding", "criteria": [{"id": "c", "margin": "UNRESOLVED: the margin"}]}}
    revision = {"decision_rule": {"criteria": [{"id": "c", "margin": -0.03}]}}
    merged = {"decision_rule": {"method": "paired_hoeffding", "criteria": [{"id": "c", "margin": -0.03}]}}
    files = EvidenceAccess({"evidence": {"files": [evidence_file("spec.json", "spec", json.dumps(written).encode()),
                                                   evidence_file("spec-revision.plan.json", "spec_revision",
                                                                 json.dumps(revision).encode())]}})
    ctx = SimpleNamespace(spec=merged, revision_fields=("decision_rule",), spec_model=None, evidence=files)
    assert decision._from_revision(ctx) is False
    assert [(i.rule, i.status) for i in decision.DEC_15(ctx)] == [("DEC-15", "unverified")]
    assert decision.DEC_15(ctx)[0].message.startswith("decision_rule.criteria[c].margin: UNRESOLVED in the spec")


class _Metrics(_Files):
    def by_kind(self, kind):
        return [{"name": name} for name in self.files] + [{"name": 5}] if kind == "metrics" else []


def test_step_rows_are_read_from_the_jsonl_metrics_files_only_and_name_a_run_and_its_optimizer_seconds():
    from types import SimpleNamespace

    step = {"run": "r1", "optim_seconds": 0.5}
    files = {"steps.jsonl": [step, {"run": "r1"}, {"optim_seconds": 1.0}, {"run": "r2", "optim_seconds": 0.7}],
             "steps.json": [{"run": "r9", "optim_seconds": 9.0}]}  # not a .jsonl file: not read
    rows = decision_rows.step_rows(SimpleNamespace(evidence=_Metrics(files)))
    assert rows == [step, {"run": "r2", "optim_seconds": 0.7}]


class _RunEvidence(_Files):
    def by_kind(self, kind):
        return [{"name": "steps.jsonl"}] if kind == "metrics" else []

    def why(self, name):
        return f"{name} is not retained"


def _best_lr_ctx(metrics=("heldout_nll", "median_optim_step_seconds"), lr1_steps=3, files=None, scores=None):
    from types import SimpleNamespace

    steps = [{"run": "lr1", "optim_seconds": 0.3}, {"run": "lr1", "optim_seconds": 0.1},
             {"run": "lr2", "optim_seconds": 0.5}, {"run": "lr1", "optim_seconds": 0.2},
             {"run": "lr2", "optim_seconds": 0.7}, {"run": "lr2", "optim_seconds": "slow"}]
    files = {"p1.jsonl": _rows({"nll_sum": 3.0, "n_tokens": 2}, {"nll_sum": 1.0, "n_tokens": 4}),
             "p2.jsonl": _rows({"nll_sum": 2.0, "n_tokens": 1}), "steps.jsonl": steps} if files is None else files
    scores = [{"run": "lr1", "predictions_ref": "p1.jsonl", "evaluator_id": "e1"},
              {"arm": "lr2", "predictions_ref": "p2.jsonl", "evaluator_id": "e2"}] if scores is None else scores
    return SimpleNamespace(
        plan=SimpleNamespace(eval={"aggregation": "example_mean"},
                             training_runs=[SimpleNamespace(name="lr1", steps=lr1_steps),
                                            SimpleNamespace(name="lr2", steps=None)]),
        spec={"verdict_rule": {"method": "best_lr_threshold", "criteria": [{"metric": m} for m in metrics]}},
        result={"evaluation": {"scores": scores, "evaluators": {"ev0": {}, "ev1": {}}}},
        evidence=_RunEvidence(files))


def test_best_lr_values_are_recomputed_per_run_from_predictions_and_the_step_log():
    rows, why = decision_rows.derived_rows(_best_lr_ctx())
    row = {"item_id": "best_lr_threshold", "seed": 0}
    assert (rows, why) == ([
        # example_mean of lr1's rows: (3/2 + 1/4) / 2; its three logged steps' median 0.2 (every planned step)
        {**row, "arm": "lr1", "metric": "heldout_nll", "value": (1.5 + 0.25) / 2, "evaluator_id": "e1"},
        # (a step time is attributed to the record's first evaluator)
        {**row, "arm": "lr1", "metric": "median_optim_step_seconds", "value": 0.2, "evaluator_id": "ev0"},
        {**row, "arm": "lr2", "metric": "heldout_nll", "value": 2.0, "evaluator_id": "e2"},
        # lr2 plans no step count: its numeric steps (0.5, 0.7; "slow" is not a number) are its log
        {**row, "arm": "lr2", "metric": "median_optim_step_seconds", "value": (0.5 + 0.7) / 2, "evaluator_id": "ev0"},
    ], "")


@pytest.mark.parametrize("ctx_args, why", [
    ({"lr1_steps": 4}, "run lr1: median_optim_step_seconds does not recompute from the retained evidence"),
    ({"lr1_steps": 2}, "run lr1: median_optim_step_seconds does not recompute from the retained evidence"),
    ({"metrics": ("wall_seconds",)}, "metric wall_seconds is not recomputable from the retained evidence"),
    ({"metrics": ("accuracy",)}, "metric accuracy is not recomputable from the retained evidence"),
    ({"scores": [{"run": "lr2", "predictions_ref": "p2.jsonl"}]}, "no score of run lr1"),
    ({"files": {}}, "run lr1: p1.jsonl is not retained"),
    ({"files": {"p1.jsonl": _rows({"nll_sum": 1.0, "n_tokens": 0})}},
     "run lr1: heldout_nll does not recompute from the retained evidence"),
])
def test_best_lr_values_that_do_not_recompute_say_why(ctx_args, why):
    assert decision_rows.derived_rows(_best_lr_ctx(**ctx_args)) == (None, why)


def test_best_lr_without_a_plan_recomputes_nothing():
    ctx = _best_lr_ctx()
    ctx.plan = None
    assert decision_rows.derived_rows(ctx) == (None, "no plan")


def test_best_lr_predictions_unreadable_for_no_stated_reason_say_no_jsonl_predictions():
    ctx = _best_lr_ctx(files={})
    ctx.evidence.why = lambda name: None
    assert decision_rows.derived_rows(ctx) == (None, "run lr1: no JSONL predictions")


def test_only_a_best_lr_rule_without_a_decision_object_has_its_rows_derived():
    ctx = _best_lr_ctx()
    assert decision_rows.observation_rows(ctx)[0] == decision_rows.derived_rows(ctx)[0] is not None
    ctx.spec = {"decision_rule": {**ctx.spec["verdict_rule"], "method": "paired_hoeffding"}}
    assert decision_rows.observation_rows(ctx) == (None, "no observations")  # paired: the record's own observations or none


ROW = {"item_id": "i1", "arm": "a", "seed": 0, "metric": "accuracy", "value": 1.0}


@pytest.mark.parametrize("decision_object, files, expected", [
    ({"observations": [ROW]}, {}, ([ROW], "")),
    ({"observations_file": {"name": "obs.jsonl", "sha256": "s1"}}, {"obs.jsonl": ("s1", True, "", [ROW])}, ([ROW], "")),
    ({"observations_file": {"sha256": "s1"}}, {}, (None, "no observations")),
    ({"observations_file": {"name": "obs.jsonl", "sha256": "s2"}}, {"obs.jsonl": ("s1", True, "", [ROW])},
     (None, "observations_file obs.jsonl is not retained under the sha256 the decision names")),
    ({"observations_file": {"name": "obs.jsonl", "sha256": "s1"}}, {"obs.jsonl": ("s1", False, "too big", [ROW])},
     (None, "too big")),
    ({"observations_file": {"name": "obs.jsonl", "sha256": "s1"}}, {"obs.jsonl": ("s1", True, "", None)},
     (None, "obs.jsonl is not JSONL observations")),
], ids=["inline", "file", "unnamed file", "other sha256", "unusable", "not JSONL"])
def test_observation_rows_are_read_inline_or_from_the_retained_file_the_decision_names(decision_object, files, expected):
    assert decision_rows.observation_rows(_observation_ctx(decision_object, files)) == expected


def test_one_malformed_observation_row_makes_the_observations_unreadable():
    assert [o.item_id for o in decision_rows.read_observations(_observation_ctx({"observations": [ROW]}))] == ["i1"]
    assert decision_rows.read_observations(_observation_ctx({"observations": [ROW, {**ROW, "seed": "0"}]})) is None


def test_best_lr_with_no_training_run_has_nothing_to_recompute():
    ctx = _best_lr_ctx()
    ctx.plan.training_runs = []
    assert decision_rows.observation_rows(ctx) == (None, "no training runs to recompute")


@pytest.mark.parametrize("method", ["a_rank_test", "sequential_test"])  # sorting before and after the known two
def test_a_method_the_grader_does_not_know_is_not_recomputed_as_one_it_knows(method):
    from types import SimpleNamespace

    ctx = _observation_ctx({"observations": [ROW]})
    ctx.spec = {"decision_rule": {"method": method}}
    ctx.plan = SimpleNamespace(role_to_arm={}, selection=None, decision={}, vocabulary="three_way", training_runs=[])
    assert decision._recompute(ctx) == (None, f"unknown decision method {method!r}")
    ctx.result = {}  # no decision object: only best_lr_threshold derives its rows
    assert decision_rows.observation_rows(ctx) == (None, "no observations")


def test_best_lr_recomputation_selects_each_arms_run_by_the_first_criterions_metric():
    """Two arms; in arm A the lowest nll (the first criterion's metric) is a1, the lowest time a2: the
    grader must select a1, so c1 = 1 * nll(a1) - 1 * nll(b1) = 1 - 3 and c2 = time(a1) = 5."""
    ctx = _two_arm_best_lr_ctx()
    recomputed, why = decision._recompute(ctx)
    assert why == "" and recomputed["per_arm"]["A"]["selected_run"] == "a1"
    assert [(c["id"], c["effect"], c["met"]) for c in recomputed["criteria"]] == [("c1", -2.0, False), ("c2", 5.0, True)]
    # a criterion weighting an arm no run trains cannot be recomputed: said, not raised
    ctx.spec["verdict_rule"]["criteria"] = [{"id": "c1", "metric": "nll", "weights": {"C": 1}, "margin": 0.0}]
    assert decision._recompute(ctx) == (None, "criterion c1: no runs of arm 'C'")


@pytest.mark.parametrize("result, measured, status", [
    ({"verdict": "supported"}, True, "unverified"),  # a verdict posted from a measured run, with no decision object
    ({"verdict": "supported"}, False, "unknown"),  # not measured: the comparison was not decided
    ({}, True, "unknown"),  # measured, but no verdict posted
    ({"decision": {}}, True, None),
])
def test_a_missing_decision_object_is_unverified_only_when_a_measured_run_posted_a_verdict(result, measured, status):
    from types import SimpleNamespace

    issues = decision.DEC_1(SimpleNamespace(result=result, measured=measured))
    assert [issue.status for issue in issues] == ([status] if status else [])


BOTH_OR_NEITHER = "decision carries both or neither of observations and observations_file"


@pytest.mark.parametrize("decision_object, flagged", [
    ({"observations": [ROW]}, False), ({"observations_file": {"name": "o.jsonl", "sha256": "s"}}, False),
    ({}, True), ({"observations": [ROW], "observations_file": {"name": "o.jsonl", "sha256": "s"}}, True)])
def test_a_decision_carries_exactly_one_of_observations_and_observations_file(decision_object, flagged):
    from types import SimpleNamespace

    messages = [issue.message for issue in decision.DEC_2(SimpleNamespace(result={"decision": decision_object}))]
    assert (BOTH_OR_NEITHER in messages) is flagged


@pytest.mark.parametrize("version, messages", [
    (True, ["decision.version: true is not the number 1"]),  # the model takes true for 1 (Python's True == 1)
    (False, ["decision.version: Input should be 1"]), (1, [])])
def test_a_decisions_version_is_the_number_one_never_true(version, messages):
    from types import SimpleNamespace

    ctx = SimpleNamespace(result={"decision": {"version": version, "observations": [ROW]}})
    assert [issue.message for issue in decision.DEC_2(ctx)] == messages


@pytest.mark.parametrize("name, flagged", [("o.jsonl", False), ("runs/o.jsonl", True), ("runs\\o.jsonl", True),
                                           ("s3:o.jsonl", False), ("https:x", False), ("s3://b/o", True)])
def test_an_observations_file_named_by_a_path_or_url_is_invalid(name, flagged):
    from types import SimpleNamespace

    ctx = SimpleNamespace(result={"decision": {"observations_file": {"name": name, "sha256": "s"}}})
    assert any("is a path or URL" in issue.message for issue in decision.DEC_2(ctx)) is flagged


def test_an_unreadable_or_unattributed_observation_row_is_invalid():
    from types import SimpleNamespace

    def dec5(rows):
        return [(i.status, i.message) for i in decision.DEC_5(SimpleNamespace(result={"decision": {"observations": rows}},
                                                                              spec={}))]

    assert dec5([{**ROW, "evaluator_id": "e"}]) == []
    assert dec5([{**ROW, "evaluator_id": "e"}, ROW]) == [("invalid", "observation 1 has no evaluator_id")]
    assert dec5([{**ROW, "evaluator_id": "e", "seed": "0"}]) == [("invalid", "observation 0: seed must be an integer")]


@pytest.mark.parametrize("method, plan_given, arms", [
    ("paired_hoeffding", True, ["B", "T"]),  # the weighted roles' arms
    ("a_rank_test", True, ["B", "T"]),
    ("best_lr_threshold", True, ["T-lr1", "T-lr2"]),  # the training runs of the weighted arms
    ("best_lr_threshold", False, ["baseline", "treatment"]),  # no plan: the weights' names as they are
])
def test_the_compared_arms_are_the_weighted_arms_or_for_best_lr_their_training_runs(method, plan_given, arms):
    from types import SimpleNamespace

    plan = SimpleNamespace(role_to_arm={"treatment": {"arm": "T"}, "baseline": {"arm": "B"}}, selection=None,
                           training_runs=[SimpleNamespace(name="T-lr2", arm="T"), SimpleNamespace(name="T-lr1", arm="T"),
                                          SimpleNamespace(name="X-lr1", arm="X")])
    ctx = SimpleNamespace(spec={"decision_rule": {"method": method, "criteria": [{"weights": {"treatment": 1, "baseline": -1}}]}},
                          plan=plan if plan_given else None, result={})
    assert decision._compared_arms(ctx) == arms


def test_a_rule_without_seeds_schedules_seed_0_only():
    assert decision.DEC_6(_observation_ctx({"observations": [ROW]})) == []
    issues = decision.DEC_6(_observation_ctx({"observations": [ROW, {**ROW, "seed": 1}]}))
    assert [(i.status, i.message) for i in issues] == [("invalid", "observations use unscheduled seed(s) [1] (scheduled [0])")]


@pytest.mark.parametrize("method", ["paired_hoeffding", "a_rank_test"])
def test_each_criterion_is_complete_over_its_own_metrics_rows_and_their_evaluators_items(method):
    """Per criterion: its metric's rows only, over the items of the evaluator those rows name (not the items
    the rows happen to have), for every compared arm and scheduled seed. Missing, in arm, item, seed order:
    accuracy (B, i2); f1 (B, i1), which accuracy's rows have but f1's do not; em, one row, evaluator e3
    listing i1 and i3: (B, i1), (B, i3), (T, i3)."""
    from types import SimpleNamespace

    def row(arm, item, metric, evaluator):
        return {"item_id": item, "arm": arm, "seed": 0, "metric": metric, "value": 1.0, "evaluator_id": evaluator}

    rows = [row("T", "i1", "accuracy", "e1"), row("B", "i1", "accuracy", "e1"), row("T", "i2", "accuracy", "e1"),
            row("T", "i1", "f1", "e2"), row("T", "i2", "f1", "e2"), row("B", "i2", "f1", "e2"),
            row("T", "i1", "em", "e3")]
    weights = {"T": 1, "B": -1}
    ctx = SimpleNamespace(
        result={"decision": {"observations": rows}, "evaluation": {"evaluators": {
            "e1": {"items": {"ids": ["i1", "i2"]}}, "e2": {"items": {"ids": ["i1", "i2"]}},
            "e3": {"items": {"ids": ["i1", "i3"]}}}}},
        spec={"decision_rule": {"method": method, "seeds": [0], "criteria": [
            {"id": c, "metric": c, "weights": weights} for c in ("accuracy", "f1", "em")]}},
        plan=SimpleNamespace(role_to_arm={}, selection=None, training_runs=[]))
    assert [issue.message for issue in decision.DEC_6(ctx)] == [
        "criterion accuracy: 1 observations missing (first: B, i2, seed 0)",
        "criterion f1: 1 observations missing (first: B, i1, seed 0)",
        "criterion em: 3 observations missing (first: B, i1, seed 0)"]


def test_adaptive_completeness_with_items_that_cannot_be_split_checks_every_item_and_leaves_the_why_to_dec13(monkeypatch):
    """One evaluated item cannot be split (selection needs at least 2): DEC-6 then checks all the evaluator's
    items (here complete) instead of failing; DEC-13 says why the split is impossible."""
    from types import SimpleNamespace

    rows = [{"item_id": "i1", "arm": arm, "seed": 0, "metric": "accuracy", "value": 1.0, "evaluator_id": "e1"}
            for arm in ("T", "B")]
    ctx = SimpleNamespace(
        result={"decision": {"observations": rows}, "evaluation": {"evaluators": {"e1": {"items": {"ids": ["i1"]}}}}},
        spec={"decision_rule": {"method": "paired_hoeffding", "seeds": [0], "criteria": [
            {"id": "accuracy", "metric": "accuracy", "weights": {"T": 1, "B": -1}}]}},
        plan=SimpleNamespace(role_to_arm={}, selection={"role": "treatment", "candidates": ["T"], "criterion": "accuracy"},
                             training_runs=[]))
    monkeypatch.setattr(decision, "_recomputed_selection", lambda ctx: (None, "no split"))  # no recomputed choice
    assert decision.DEC_6(ctx) == []


def test_adaptive_completeness_goes_on_to_the_next_criterion_after_one_whose_items_cannot_be_split(monkeypatch):
    """The first criterion's evaluator lists one item (no split: DEC-13's finding); the second's lists ten, split into
    selection and confirmation items, and arm B has none of its confirmation observations: that is still found."""
    from types import SimpleNamespace

    def row(arm, item, metric, evaluator):
        return {"item_id": item, "arm": arm, "seed": 0, "metric": metric, "value": 1.0, "evaluator_id": evaluator}

    items = [f"i{n}" for n in range(10)]
    rows = [row(arm, "i0", "accuracy", "e1") for arm in ("T", "B")] + [row("T", item, "f1", "e2") for item in items]
    ctx = SimpleNamespace(
        result={"decision": {"observations": rows}, "evaluation": {"evaluators": {
            "e1": {"items": {"ids": ["i0"]}}, "e2": {"items": {"ids": items}}}}},
        spec={"decision_rule": {"method": "paired_hoeffding", "seeds": [0], "criteria": [
            {"id": c, "metric": c, "weights": {"T": 1, "B": -1}} for c in ("accuracy", "f1")]}},
        plan=SimpleNamespace(role_to_arm={}, selection={"role": "treatment", "candidates": ["T"], "criterion": "f1"},
                             training_runs=[]))
    monkeypatch.setattr(decision, "_recomputed_selection", lambda ctx: (None, "no split"))  # no recomputed choice
    messages = [issue.message for issue in decision.DEC_6(ctx)]
    assert len(messages) == 1 and messages[0].startswith("criterion f1: "), messages


def test_observations_of_items_the_evaluator_does_not_list_are_counted_and_the_first_in_order_named():
    from types import SimpleNamespace

    rows = [{"item_id": item, "arm": arm, "seed": 0, "metric": "accuracy", "value": 1.0, "evaluator_id": "e1"}
            for arm in ("T", "B") for item in ("i1", "x2", "x1")]
    ctx = SimpleNamespace(result={"decision": {"observations": rows},
                                  "evaluation": {"evaluators": {"e1": {"items": {"ids": ["i1"]}}}}},
                          spec={"decision_rule": {"method": "paired_hoeffding", "seeds": [0], "criteria": [
                              {"id": "accuracy", "metric": "accuracy", "weights": {"T": 1, "B": -1}}]}},
                          plan=SimpleNamespace(role_to_arm={}, selection=None, training_runs=[]))
    assert [i.message for i in decision.DEC_6(ctx)] == [
        "criterion accuracy: observations of 2 item(s) the evaluator does not list (first: 'x1')"]


def test_best_lr_completeness_is_one_observation_per_planned_run_and_metric_at_the_runs_seed():
    """best_lr_threshold: each planned training run of a compared arm owes one row per criterion's metric (item
    best_lr_threshold) at its own scheduled seed, not at every seed of the rule."""
    ctx = _two_arm_best_lr_ctx()
    rows = ctx.result["decision"]["observations"]
    ctx.result["decision"]["observations"] = [r for r in rows if not (r["arm"] == "b1" and r["metric"] == "nll")]
    assert [i.message for i in decision.DEC_6(ctx)] == [
        "criterion c1: 1 observations missing (first: b1, best_lr_threshold, seed 0)"]
    ctx = _two_arm_best_lr_ctx()
    ctx.spec["verdict_rule"]["seeds"] = [0, 3]
    ctx.plan.training_runs[2].seed = 3  # b1 runs at seed 3 and its rows say so; the others at seed 0 only
    for row in ctx.result["decision"]["observations"]:
        row["seed"] = 3 if row["arm"] == "b1" else row["seed"]
    assert decision.DEC_6(ctx) == []


def test_a_criterion_whose_evaluator_lists_no_items_is_complete_over_the_items_its_rows_have():
    from types import SimpleNamespace

    rows = [{"item_id": item, "arm": arm, "seed": 0, "metric": "accuracy", "value": 1.0, "evaluator_id": "eX"}
            for arm, item in (("T", "i1"), ("B", "i1"), ("T", "i2"))]
    ctx = SimpleNamespace(result={"decision": {"observations": rows}, "evaluation": {"evaluators": {}}},
                          spec={"decision_rule": {"method": "paired_hoeffding", "seeds": [0], "criteria": [
                              {"id": "accuracy", "metric": "accuracy", "weights": {"T": 1, "B": -1}}]}},
                          plan=SimpleNamespace(role_to_arm={}, selection=None, training_runs=[]))
    assert [i.message for i in decision.DEC_6(ctx)] == ["criterion accuracy: 1 observations missing (first: B, i2, seed 0)"]


def test_observations_naming_an_evaluator_the_record_lacks_are_invalid_and_named_by_12_characters():
    from types import SimpleNamespace

    known, unknown = "a" * 64, "0123456789abcdef" * 4
    rows = [{**ROW, "evaluator_id": known}, {**ROW, "item_id": "i2", "evaluator_id": unknown}]
    ctx = SimpleNamespace(result={"decision": {"observations": rows}, "evaluation": {"evaluators": {known: {}}}},
                          spec={"decision_rule": {"method": "best_lr_threshold"}})
    assert [(i.status, i.message) for i in decision.DEC_7(ctx)] == [
        ("invalid", "observations name evaluator(s) the evaluation record lacks: 0123456789ab")]


PREDICTIONS = {"pa.jsonl": [{"arm": "T", "item_id": "i1", "seed": 0, "correct": True},
                            {"arm": "T", "item_id": "i2", "correct": False}],  # no seed: seed 0
               "pb.jsonl": [{"arm": "B", "item_id": "i1", "seed": 0, "value": 0.5, "metric": "accuracy"},
                            {"arm": "B", "item_id": "i2", "seed": 0}]}  # neither value nor correct: no value


def _dec7(observations, files, method="paired_hoeffding"):
    from types import SimpleNamespace

    rows = [{"item_id": item, "arm": arm, "seed": 0, "metric": "accuracy", "value": value, "evaluator_id": "e"}
            for arm, item, value in observations]
    ctx = SimpleNamespace(result={"decision": {"observations": rows}, "evaluation": {
        "evaluators": {"e": {}}, "scores": [{"predictions_ref": name, "metric": "accuracy"} for name in PREDICTIONS]}},
        spec={"decision_rule": {"method": method}}, evidence=_Files(files))
    return [(i.status, i.message) for i in decision.DEC_7(ctx)]


def test_observations_equal_the_retained_prediction_rows_correct_scored_1_wrong_0():
    assert _dec7([("T", "i1", 1.0), ("T", "i2", 0.0), ("B", "i1", 0.5)], PREDICTIONS) == []
    assert _dec7([("T", "i1", 1.0), ("B", "i1", 0.25), ("T", "i2", 1.0)], PREDICTIONS) == [
        ("invalid", "2 observation(s) differ from the retained predictions (first: B/i1 0.25)")]
    assert _dec7([("T", "i1", 1.0), ("B", "i2", 1.0), ("X", "i1", 1.0)], PREDICTIONS) == [
        ("invalid", "2 observation(s) have no retained prediction row")]


def test_observations_are_not_held_against_predictions_that_are_not_all_retained():
    partly = {"pa.jsonl": PREDICTIONS["pa.jsonl"]}
    assert _dec7([("T", "i1", 1.0), ("B", "i1", 0.5)], partly) == []  # B's file is not inline: not "absent"
    assert _dec7([("T", "i1", 0.0)], partly) == [
        ("invalid", "1 observation(s) differ from the retained predictions (first: T/i1 0.0)")]
    assert _dec7([("T", "i1", 1.0)], {}) == [
        ("unverified", "the predictions behind the observations are not inline, so the observations cannot be "
                       "checked against them")]


def test_every_method_but_best_lr_has_its_observations_checked_against_the_predictions():
    differing = [("invalid", "1 observation(s) differ from the retained predictions (first: B/i1 0.25)")]
    assert _dec7([("B", "i1", 0.25)], PREDICTIONS, method="a_rank_test") == differing
    assert _dec7([("B", "i1", 0.25)], PREDICTIONS, method="best_lr_threshold") == []  # recomputed from predictions


def test_a_predictions_file_not_retained_does_not_stop_the_next_from_being_read():
    assert _dec7([("B", "i1", 0.25)], {"pb.jsonl": PREDICTIONS["pb.jsonl"]}) == [
        ("invalid", "1 observation(s) differ from the retained predictions (first: B/i1 0.25)")]


def test_best_lr_criteria_are_compared_on_their_effect_only_point_estimates_have_no_bounds():
    """A best_lr record's criterion with bounds besides its effect: only the effect (1 - 3 = -2) is compared."""
    ctx = _two_arm_best_lr_ctx(vocabulary="three_way")
    ctx.result["decision"]["criteria"] = [{"id": "c1", "effect": -2.0, "lower": -9.0, "upper": 9.0},
                                          {"id": "c2", "effect": 5.0}]
    assert decision.DEC_8(ctx) == []
    ctx.result["decision"]["criteria"][1]["effect"] = 4.0
    assert [i.message for i in decision.DEC_8(ctx)] == ["criterion c2: recorded effect 4.0 is not the recomputed 5.0"]


def test_a_recomputed_criterion_the_decision_object_lacks_is_invalid_and_the_others_still_checked():
    ctx = _two_arm_best_lr_ctx(vocabulary="three_way")
    ctx.result["decision"]["criteria"] = [{"id": "c2", "effect": 4.0}]
    assert [(i.status, i.message) for i in decision.DEC_8(ctx)] == [
        ("invalid", "criterion c1 is not in the decision object"),
        ("invalid", "criterion c2: recorded effect 4.0 is not the recomputed 5.0")]


def test_a_recorded_met_flag_that_is_not_the_recomputed_one_is_invalid_either_way():
    """c1 = -2 against margin 0: not met; c2 = 5: met."""
    ctx = _two_arm_best_lr_ctx(vocabulary="three_way")
    ctx.result["decision"]["criteria"] = [{"id": "c1", "effect": -2.0, "met": False}, {"id": "c2", "effect": 5.0, "met": True}]
    assert decision.DEC_8(ctx) == []
    ctx.result["decision"]["criteria"] = [{"id": "c1", "effect": -2.0, "met": True}, {"id": "c2", "effect": 5.0, "met": False}]
    assert [i.message for i in decision.DEC_8(ctx)] == ["criterion c1: recorded met True is not the recomputed False",
                                                        "criterion c2: recorded met False is not the recomputed True"]


def test_a_paired_rule_whose_plan_has_no_decision_section_is_recomputed_without_adjustment():
    """A spec with a verdict_rule and no decision_rule has no plan.decision: one criterion, nothing to adjust.
    T scores 1, 1, 1, 0 and B 0, 1, 0, 0 on four items: effect = mean(T - B) = (1 + 0 + 1 + 0) / 4."""
    from types import SimpleNamespace

    values = {"T": [1.0, 1.0, 1.0, 0.0], "B": [0.0, 1.0, 0.0, 0.0]}
    rows = [{"item_id": f"i{k}", "arm": arm, "seed": 0, "metric": "accuracy", "value": v, "evaluator_id": "e"}
            for arm, vs in values.items() for k, v in enumerate(vs)]
    ctx = _observation_ctx({"observations": rows})
    ctx.spec = {"verdict_rule": {"method": "paired_hoeffding", "alpha": 0.05, "seeds": [0], "criteria": [
        {"id": "c", "metric": "accuracy", "weights": {"T": 1, "B": -1}, "margin": 0.0, "bounds": [0.0, 1.0]}]}}
    ctx.result["evaluation"] = {"evaluators": {"e": {"items": {"ids": ["i0", "i1", "i2", "i3"]}}}}
    ctx.plan = SimpleNamespace(role_to_arm={}, selection=None, decision=None, vocabulary="three_way", training_runs=[])
    recomputed, why = decision._recompute(ctx)
    assert why == "" and recomputed["criteria"][0]["effect"] == 0.5


def test_a_held_out_nll_observation_is_its_rows_totals_not_the_value_the_row_states():
    """An SFT paired decision observes each conversation's NLL: the row's nll_sum / n_tokens, recomputed. A row and
    an observation that restate one another (both 0.5) but not the totals (6 nats over 3 tokens: 2.0) are invalid;
    the grader before this rule compared the stated value only and let them pass."""
    row = {"arm": "B", "item_id": "i1", "seed": 0, "metric": "accuracy", "value": 0.5,
           "prediction": {"nll_sum": 6.0, "n_tokens": 3}}
    files = {"pa.jsonl": [], "pb.jsonl": [row]}
    assert _dec7([("B", "i1", 0.5)], files) == [
        ("invalid", "1 observation(s) differ from the retained predictions (first: B/i1 0.5)")]
    assert _dec7([("B", "i1", 2.0)], {"pa.jsonl": [], "pb.jsonl": [{**row, "value": 2.0}]}) == []


def _observation_file_ctx(entry):
    """A record whose decision names obs.jsonl under sha256 "a" * 64, retained as `entry` (real EvidenceAccess)."""
    from types import SimpleNamespace

    from experiment.grading.evidence import EvidenceAccess

    result = {"decision": {"observations_file": {"name": "obs.jsonl", "sha256": "a" * 64}},
              "evidence": {"files": [{"name": "obs.jsonl", "kind": "metrics", "sha256": "a" * 64, **entry}]}}
    return SimpleNamespace(result=result, spec={"decision_rule": {"method": "paired_hoeffding"}},
                           evidence=EvidenceAccess(result))


def test_observations_retained_by_hash_only_are_unretained_and_bytes_off_their_hash_are_the_sha256_part():
    """DEC-3's parts: a file kept by name and hash only (no inline content) is not retained; content that does not hash
    to the sha256 the decision names is the sha256 part."""
    partial = _observation_file_ctx({})
    assert decision_rows.observation_rows(partial)[0] is None
    assert decision_rows.unread_part(partial) == decision_rows.RETAINED
    assert decision.DEC_3_retained(partial) and not decision.DEC_3_sha256(partial)
    corrupt = _observation_file_ctx({"content": '{"item_id": "1"}\n'})
    assert decision_rows.observation_rows(corrupt)[0] is None
    assert decision_rows.unread_part(corrupt) == decision_rows.SHA256
    assert decision.DEC_3_sha256(corrupt) and not decision.DEC_3_retained(corrupt)


def test_prediction_observations_skip_other_arms_scores_wherever_they_stand():
    from types import SimpleNamespace

    rows = {"a.jsonl": [{"item_id": "1", "arm": "A", "seed": 0, "value": 1.0, "evaluator_id": "e"}],
            "b.jsonl": [{"item_id": "1", "arm": "B", "seed": 0, "correct": False, "evaluator_id": "e"}]}
    scores = [{"arm": "A", "metric": "accuracy", "predictions_ref": "a.jsonl"},
              {"arm": "B", "metric": "accuracy", "predictions_ref": "b.jsonl"}]
    ctx = SimpleNamespace(result={"evaluation": {"scores": scores}}, evidence=SimpleNamespace(jsonl=rows.get))
    observations = decision_rows.prediction_observations(ctx, {"B"})
    assert [(o.arm, o.value) for o in observations] == [("B", 0.0)]
