"""Paired Hoeffding decision (DEC-8, DEC-9): expected numbers are literals or are computed
here with the contract's formulas, never taken from experiment.stats.decision."""

from __future__ import annotations

import hashlib
import json
import math

import pytest

from experiment.stats.decision import (
    CriterionResult,
    DecisionError,
    DecisionResult,
    Observation,
    best_lr_threshold,
    bytes_sha256,
    decision_record,
    decision_summary,
    direction_confidence_verdict,
    observation_from_row,
    observations_jsonl_bytes,
    paired_hoeffding,
    read_observations_jsonl,
    three_way_verdict,
    write_observations_jsonl,
)


def _obs(values: dict, metric="accuracy", seed=0, evaluator_id=None):
    """values: {arm: [v_item0, v_item1, ...]}"""
    return [Observation(item_id=f"i{index}", arm=arm, seed=seed, metric=metric, value=float(v),
                        evaluator_id=evaluator_id)
            for arm, row in values.items() for index, v in enumerate(row)]


def _criterion(cid="c", metric="accuracy", margin=0.0, weights=None, bounds=(0.0, 1.0)):
    return {"id": cid, "metric": metric, "margin": margin,
            "weights": weights or {"t": 1.0, "b": -1.0}, "bounds": list(bounds)}


def _hoeffding(range_, alpha, n):
    return range_ * math.sqrt(math.log(1.0 / alpha) / (2.0 * n))


# ---- the statistic, by hand

def test_effect_range_and_half_width_match_the_contract_formula():
    obs = _obs({"t": [1, 1, 0, 1], "b": [0, 1, 0, 0]})
    result = paired_hoeffding(obs, [_criterion()], alpha=0.05)
    c = result.criteria[0]
    assert c.n == 4
    assert c.effect == pytest.approx(0.5, abs=1e-15)  # (1 + 0 + 0 + 1) / 4
    assert c.range == 2.0  # (|1| + |-1|) * (1 - 0)
    assert c.half_width == pytest.approx(_hoeffding(2.0, 0.05, 4), rel=1e-12)
    assert c.lower == pytest.approx(0.5 - _hoeffding(2.0, 0.05, 4), rel=1e-12)
    assert c.upper == pytest.approx(0.5 + _hoeffding(2.0, 0.05, 4), rel=1e-12)
    assert c.per_arm_means == {"t": 0.75, "b": 0.25}
    assert c.alpha == 0.05 and result.adjustment == "none" and result.seeds == [0]


def test_range_uses_absolute_weights_and_the_bounds_width():
    obs = _obs({"t": [2, 3], "b": [1, 1]})
    result = paired_hoeffding(obs, [_criterion(weights={"t": 0.5, "b": -2.0}, bounds=(-1.0, 3.0))], alpha=0.1)
    c = result.criteria[0]
    assert c.range == pytest.approx(2.5 * 4.0)
    # per-item statistic 0.5*t - 2*b: (1 - 2, 1.5 - 2) -> mean -0.75
    assert c.effect == pytest.approx(-0.75, abs=1e-15)


def test_seed_average_then_item_mean():
    obs = (_obs({"t": [1, 0], "b": [0, 0]}, seed=1) + _obs({"t": [1, 1], "b": [0, 1]}, seed=2))
    c = paired_hoeffding(obs, [_criterion()], alpha=0.05, seeds=[1, 2]).criteria[0]
    # item0: t=(1+1)/2, b=0 -> 1 ; item1: t=(0+1)/2=0.5, b=0.5 -> 0 ; effect 0.5
    assert c.effect == pytest.approx(0.5, abs=1e-15)
    assert c.n == 2
    assert c.per_arm_means == {"t": 0.75, "b": 0.25}
    assert c.per_arm_seed_means == {"t": {"1": 0.5, "2": 1.0}, "b": {"1": 0.0, "2": 0.5}}


# ---- Bonferroni with k >= 3 criteria

@pytest.mark.parametrize("k", [3, 4])
def test_bonferroni_splits_alpha_over_k_criteria(k):
    obs = _obs({"t": [1, 1, 1, 0, 1, 1], "b": [0, 1, 0, 0, 0, 1]})
    criteria = [_criterion(cid=f"c{j}") for j in range(k)]
    result = paired_hoeffding(obs, criteria, alpha=0.06, simultaneous=True)
    assert result.adjustment == "bonferroni" and result.alpha == 0.06
    for c in result.criteria:
        assert c.alpha == pytest.approx(0.06 / k, rel=1e-15)
        assert c.half_width == pytest.approx(_hoeffding(2.0, 0.06 / k, 6), rel=1e-12)


def test_no_adjustment_without_simultaneous_or_with_one_criterion():
    obs = _obs({"t": [1, 0], "b": [0, 0]})
    three = [_criterion(cid=f"c{j}") for j in range(3)]
    result = paired_hoeffding(obs, three, alpha=0.05, simultaneous=False)
    assert result.adjustment == "none" and [c.alpha for c in result.criteria] == [0.05] * 3
    one = paired_hoeffding(obs, [_criterion()], alpha=0.05, simultaneous=True)
    assert one.adjustment == "none" and one.criteria[0].alpha == 0.05 and one.simultaneous is True


# ---- the strict rule: a bound exactly equal to the margin settles nothing

def _status_with_margin(obs, margin):
    return paired_hoeffding(obs, [_criterion(margin=margin)], alpha=0.05).criteria[0].status


def test_lower_bound_exactly_equal_to_the_margin_does_not_pass():
    obs = _obs({"t": [1] * 40, "b": [0] * 40})
    lower = paired_hoeffding(obs, [_criterion()], alpha=0.05).criteria[0].lower
    assert lower > 0  # the interval is clear of 0 ...
    assert _status_with_margin(obs, lower) == "unsettled"  # ... but lower == margin is not "exceeds"
    assert _status_with_margin(obs, math.nextafter(lower, -math.inf)) == "passes"


def test_upper_bound_exactly_equal_to_the_margin_does_not_fail():
    obs = _obs({"t": [0] * 40, "b": [1] * 40})
    upper = paired_hoeffding(obs, [_criterion()], alpha=0.05).criteria[0].upper
    assert upper < 0
    assert _status_with_margin(obs, upper) == "unsettled"
    assert _status_with_margin(obs, math.nextafter(upper, math.inf)) == "fails"


def test_status_against_margins_far_from_the_interval():
    obs = _obs({"t": [1] * 40, "b": [0] * 40})  # effect 1, half-width ~0.387
    assert _status_with_margin(obs, 0.0) == "passes"
    assert _status_with_margin(obs, 2.0) == "fails"
    assert _status_with_margin(obs, 1.0) == "unsettled"


# ---- bad observations raise

def test_observations_from_unscheduled_seeds_raise():
    obs = _obs({"t": [1, 0], "b": [0, 0]}, seed=0) + _obs({"t": [1, 0], "b": [0, 0]}, seed=7)
    with pytest.raises(DecisionError, match="unscheduled seed 7"):
        paired_hoeffding(obs, [_criterion()], alpha=0.05, seeds=[0])


def test_missing_duplicate_out_of_bounds_and_extra_items_raise():
    good = _obs({"t": [1, 0], "b": [0, 0]})
    with pytest.raises(DecisionError, match="missing observations"):
        paired_hoeffding(good[:-1], [_criterion()], alpha=0.05)
    with pytest.raises(DecisionError, match="duplicate observation"):
        paired_hoeffding(good + good[:1], [_criterion()], alpha=0.05)
    with pytest.raises(DecisionError, match=r"value 1.5 of arm 't' item 'i1' is outside the bounds \[0.0, 1.0\]"):
        paired_hoeffding(_obs({"t": [0, 1.5], "b": [0, 0]}), [_criterion()], alpha=0.05)
    with pytest.raises(DecisionError, match="outside the bounds"):
        paired_hoeffding(_obs({"t": [-0.1, 0], "b": [0, 0]}), [_criterion()], alpha=0.05)
    with pytest.raises(DecisionError, match="items outside"):
        paired_hoeffding(good, [_criterion()], alpha=0.05, item_ids=["i0"])
    with pytest.raises(DecisionError, match="missing observations"):
        paired_hoeffding(good, [_criterion()], alpha=0.05, item_ids=["i0", "i1", "i2"])
    with pytest.raises(DecisionError, match="no observations for metric"):
        paired_hoeffding(good, [_criterion(metric="other")], alpha=0.05)


def test_values_on_the_bounds_are_accepted():
    c = paired_hoeffding(_obs({"t": [1.0, 0.0], "b": [0.0, 1.0]}), [_criterion()], alpha=0.05).criteria[0]
    assert c.effect == 0.0


def test_explicit_item_list_is_the_evaluated_set():
    obs = _obs({"t": [1, 0, 1], "b": [0, 0, 1]})
    c = paired_hoeffding(obs[0:2] + obs[3:5], [_criterion()], alpha=0.05, item_ids=["i0", "i1"]).criteria[0]
    assert c.n == 2 and c.effect == pytest.approx(0.5)


def test_items_scored_only_for_another_metric_are_not_evaluated_items():
    # metric names on either side of "accuracy" in string order, with their own items
    other = [Observation(f"x{j}", arm, 0, metric, 1.0) for j in range(3) for arm in ("t", "b")
             for metric in ("aaa", "zzz")]
    c = paired_hoeffding(_obs({"t": [1, 0], "b": [0, 0]}) + other, [_criterion()], alpha=0.05).criteria[0]
    assert c.n == 2 and c.effect == pytest.approx(0.5)


def test_observations_of_unweighted_arms_and_other_metrics_are_ignored():
    obs = _obs({"t": [1, 0], "b": [0, 0], "x": [1, 1]}) + _obs({"t": [0, 0], "b": [1, 1]}, metric="other")
    c = paired_hoeffding(obs, [_criterion()], alpha=0.05).criteria[0]
    assert c.effect == pytest.approx(0.5) and set(c.per_arm_means) == {"t", "b"}


def test_several_evaluators_raise_and_one_is_recorded():
    obs = _obs({"t": [1, 0]}, evaluator_id="e1") + _obs({"b": [0, 0]}, evaluator_id="e2")
    with pytest.raises(DecisionError, match="several evaluators"):
        paired_hoeffding(obs, [_criterion()], alpha=0.05)
    one = _obs({"t": [1, 0], "b": [0, 0]}, evaluator_id="e1")
    assert paired_hoeffding(one, [_criterion()], alpha=0.05).criteria[0].evaluator_ids == ["e1"]
    assert paired_hoeffding(_obs({"t": [1, 0], "b": [0, 0]}), [_criterion()], alpha=0.05).criteria[0].evaluator_ids == []


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, 1.5, math.nan, True, "0.05"])
def test_alpha_must_be_a_number_in_the_open_unit_interval(alpha):
    with pytest.raises(DecisionError):
        paired_hoeffding(_obs({"t": [1], "b": [0]}), [_criterion()], alpha=alpha)


def test_rule_errors():
    obs = _obs({"t": [1], "b": [0]})
    with pytest.raises(DecisionError, match="no criteria"):
        paired_hoeffding(obs, [], alpha=0.05)
    with pytest.raises(DecisionError, match="no scheduled seeds"):
        paired_hoeffding(obs, [_criterion()], alpha=0.05, seeds=[])
    with pytest.raises(DecisionError, match="no scheduled seeds"):
        paired_hoeffding([], [_criterion()], alpha=0.05)
    for bounds in ([1.0, 1.0], [1.0, 0.0]):
        with pytest.raises(DecisionError, match="lo < hi"):
            paired_hoeffding(obs, [_criterion(bounds=bounds)], alpha=0.05)
    for bounds in (None, [0.0], [0.0, 1.0, 2.0], "01"):
        with pytest.raises(DecisionError, match="bounds must be"):
            paired_hoeffding(obs, [{**_criterion(), "bounds": bounds}], alpha=0.05)
    with pytest.raises(DecisionError, match="margin"):
        paired_hoeffding(obs, [_criterion(margin=math.inf)], alpha=0.05)
    with pytest.raises(DecisionError, match="weight"):
        paired_hoeffding(obs, [_criterion(weights={"t": True, "b": -1})], alpha=0.05)
    with pytest.raises(DecisionError, match="not finite"):
        paired_hoeffding(obs[:1] + [Observation("i0", "b", 0, "accuracy", math.nan)], [_criterion()], alpha=0.05)


def test_role_weights_map_to_arms_and_are_recorded():
    obs = _obs({"armA": [1, 1], "armB": [0, 1]})
    result = paired_hoeffding(obs, [_criterion(weights={"treatment": 1, "baseline": -1})], alpha=0.05,
                              role_to_arm={"treatment": "armA", "baseline": "armB"})
    assert result.role_to_arm == {"treatment": "armA", "baseline": "armB"}
    assert result.criteria[0].arm_weights == {"armA": 1.0, "armB": -1.0}
    assert result.criteria[0].weights == {"treatment": 1, "baseline": -1}
    assert result.criteria[0].effect == pytest.approx(0.5)
    with pytest.raises(DecisionError, match="weighted twice"):
        paired_hoeffding(obs, [_criterion(weights={"treatment": 1, "armA": -1})], alpha=0.05,
                         role_to_arm={"treatment": "armA"})
    plain = paired_hoeffding(_obs({"t": [1], "b": [0]}), [_criterion()], alpha=0.05, role_to_arm={"x": "y"})
    assert plain.role_to_arm == {}


# ---- verdict vocabularies (GEN-3, GEN-4)

def _result_with(statuses):
    obs = _obs({"t": [1] * 40, "b": [0] * 40})
    margins = {"passes": 0.0, "fails": 2.0, "unsettled": 1.0}
    return paired_hoeffding(obs, [_criterion(cid=f"c{j}", margin=margins[s]) for j, s in enumerate(statuses)],
                            alpha=0.05)


def test_direction_confidence_verdict():
    assert direction_confidence_verdict(_result_with(["passes", "passes"])) == {
        "verdict": "supported", "confidence": "strong", "limits": []}
    weak = direction_confidence_verdict(_result_with(["passes"]), limits=["one seed"])
    assert weak == {"verdict": "supported", "confidence": "weak", "limits": ["one seed"]}
    mixed = direction_confidence_verdict(_result_with(["passes", "fails"]))
    assert mixed["verdict"] == "refuted" and mixed["confidence"] == "strong"
    straddle = direction_confidence_verdict(_result_with(["passes", "unsettled"]))
    assert straddle["verdict"] == "refuted" and straddle["confidence"] == "weak"
    assert len(straddle["limits"]) == 1 and "criterion c1" in straddle["limits"][0]
    assert "straddles the margin 1" in straddle["limits"][0]
    empty = _result_with(["passes"])
    empty.criteria = []
    assert direction_confidence_verdict(empty)["verdict"] == "refuted"


@pytest.mark.parametrize("statuses, every_arm_ran, limits, expected", [
    (["passes", "passes"], True, [], ("supported", "supported")),
    (["fails", "fails"], True, [], ("refuted", "refuted")),
    (["passes", "fails"], True, [], ("inconclusive", "mixed_criteria")),
    (["passes", "fails", "unsettled"], True, [], ("inconclusive", "mixed_criteria")),
    (["passes", "unsettled"], True, [], ("inconclusive", "insufficient_evidence")),
    (["fails", "unsettled"], True, [], ("inconclusive", "insufficient_evidence")),
    (["unsettled"], True, [], ("inconclusive", "insufficient_evidence")),
    (["passes"], True, ["grid-edge LR"], ("inconclusive", "insufficient_evidence")),
    (["passes"], False, [], ("inconclusive", "incomplete_execution")),
    (["passes"], False, ["grid-edge LR"], ("inconclusive", "incomplete_execution")),
])
def test_three_way_verdict_table(statuses, every_arm_ran, limits, expected):
    verdict = three_way_verdict(_result_with(statuses), every_arm_ran, limits)
    assert (verdict["verdict"], verdict["outcome_reason"]) == expected
    assert verdict["limits"] == (list(limits) if expected[0] == "inconclusive" and expected[1] != "mixed_criteria"
                                 and (limits or not every_arm_ran) else [])


def test_three_way_without_criteria_is_incomplete():
    result = _result_with(["passes"])
    result.criteria = []
    assert three_way_verdict(result)["outcome_reason"] == "incomplete_execution"


# ---- summary and record

def _rule(**extra):
    return {"method": "paired_hoeffding", "alpha": 0.05, "criteria": [_criterion()], **extra}


def test_decision_summary_vocabularies_and_errors():
    obs = _obs({"t": [1] * 40, "b": [0] * 40})
    dc = decision_summary(_rule(), obs, "direction_confidence", limits=["one seed"])
    assert dc["vocabulary"] == "direction_confidence" and dc["verdict"] == "supported" and dc["confidence"] == "weak"
    tw = decision_summary(_rule(), obs, "three_way", limits=["pending"])
    assert tw["verdict"] == "inconclusive" and tw["outcome_reason"] == "insufficient_evidence"
    assert decision_summary(_rule(), obs, "three_way", every_arm_ran=False)["outcome_reason"] == "incomplete_execution"
    assert decision_summary({"alpha": 0.05, "criteria": [_criterion()]}, obs, "three_way")["verdict"] == "supported"
    assert decision_summary(_rule(seeds=[0]), obs, "three_way")["seeds"] == [0]
    with pytest.raises(DecisionError, match="unscheduled"):
        decision_summary(_rule(seeds=[1]), obs, "three_way")
    with pytest.raises(DecisionError, match="unsupported decision method"):
        decision_summary(_rule(method="bootstrap"), obs, "three_way")
    with pytest.raises(DecisionError, match="no alpha"):
        decision_summary({"criteria": [_criterion()]}, obs, "three_way")
    with pytest.raises(DecisionError, match="unknown verdict vocabulary"):
        decision_summary(_rule(), obs, "two_way")
    with pytest.raises(DecisionError, match="no criteria"):
        decision_summary({"alpha": 0.05}, obs, "three_way")
    simultaneous = decision_summary(_rule(criteria=[_criterion("a"), _criterion("b"), _criterion("c")]), obs,
                                    "three_way", simultaneous=True)
    assert simultaneous["adjustment"] == "bonferroni"


def test_decision_record_shape():
    obs = _obs({"t": [1] * 4, "b": [0] * 4})
    summary = decision_summary(_rule(), obs, "three_way")
    record = decision_record(summary, "scored-observations.jsonl", "a" * 64)
    assert record["version"] == 1
    assert record["observations_file"] == {"name": "scored-observations.jsonl", "sha256": "a" * 64}
    assert set(record) == {"version", "observations_file", "method", "alpha", "simultaneous", "adjustment",
                           "role_to_arm", "seeds", "criteria"}
    for bad in ("runs/x.jsonl", "a\\b.jsonl"):
        with pytest.raises(DecisionError, match="not a path"):
            decision_record(summary, bad, "a" * 64)
    for sha in ("a" * 63, "a" * 65):
        with pytest.raises(DecisionError, match="64 hex"):
            decision_record(summary, "scored-observations.jsonl", sha)


# ---- observation files

def test_observation_rows_validate():
    row = {"item_id": "i", "arm": "a", "seed": 3, "metric": "m", "value": 1}
    assert observation_from_row(row) == Observation("i", "a", 3, "m", 1.0, None)
    assert observation_from_row({**row, "evaluator_id": "e"}).evaluator_id == "e"
    with pytest.raises(DecisionError, match="expected a JSON object"):
        observation_from_row([1])
    with pytest.raises(DecisionError, match="missing field"):
        observation_from_row({k: v for k, v in row.items() if k != "value"})
    for key in ("item_id", "arm", "metric"):
        for bad in ("", 5):
            with pytest.raises(DecisionError, match=f"{key} must be a non-empty string"):
                observation_from_row({**row, key: bad})
    for bad in (True, 1.0, "1"):
        with pytest.raises(DecisionError, match="seed must be an integer"):
            observation_from_row({**row, "seed": bad})
    with pytest.raises(DecisionError, match="evaluator_id must be a string"):
        observation_from_row({**row, "evaluator_id": 3})
    with pytest.raises(DecisionError, match="value"):
        observation_from_row({**row, "value": "1"})


def test_observations_jsonl_bytes_are_sorted_compact_lines(tmp_path):
    obs = [Observation("i1", "a", 0, "m", 1.0), Observation("i0", "b", 1, "m", 0.5, "e")]
    expected = ('{"arm":"a","item_id":"i1","metric":"m","seed":0,"value":1.0}\n'
                '{"arm":"b","evaluator_id":"e","item_id":"i0","metric":"m","seed":1,"value":0.5}\n').encode()
    assert observations_jsonl_bytes(obs) == expected
    path = tmp_path / "o.jsonl"
    assert write_observations_jsonl(path, obs) == hashlib.sha256(expected).hexdigest()
    assert path.read_bytes() == expected
    assert read_observations_jsonl(path) == obs
    assert bytes_sha256(b"abc") == hashlib.sha256(b"abc").hexdigest()


def test_reading_bad_observation_files(tmp_path):
    path = tmp_path / "o.jsonl"
    path.write_text('\n{"item_id":"i","arm":"a","seed":0,"metric":"m","value":1}\n\n')
    assert len(read_observations_jsonl(path)) == 1
    path.write_text("\n \n")
    with pytest.raises(DecisionError, match="no observations"):
        read_observations_jsonl(path)
    path.write_text('{"item_id":"i","arm":"a","seed":0,"metric":"m","value":1}\nnot json\n')
    with pytest.raises(DecisionError, match=r":2: not valid JSON"):
        read_observations_jsonl(path)
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(DecisionError, match="not UTF-8"):
        read_observations_jsonl(path)
    path.write_text(json.dumps({"item_id": "i", "arm": "a", "seed": 0, "metric": "m", "value": math.inf}))
    with pytest.raises(DecisionError):
        read_observations_jsonl(path)


def test_per_arm_means_divide_by_items_times_seeds():
    # 3 items x 2 seeds: t = 1 on every cell of seed 1 and item i0 of seed 2 -> 4 / 6
    obs = _obs({"t": [1, 1, 1], "b": [0, 0, 0]}, seed=1) + _obs({"t": [1, 0, 0], "b": [0, 0, 1]}, seed=2)
    c = paired_hoeffding(obs, [_criterion()], alpha=0.05, seeds=[1, 2]).criteria[0]
    assert c.per_arm_means["t"] == pytest.approx(4 / 6, abs=1e-15)
    assert c.per_arm_means["b"] == pytest.approx(1 / 6, abs=1e-15)
    assert c.per_arm_seed_means["t"] == {"1": 1.0, "2": pytest.approx(1 / 3)}


# ---- best_lr_threshold: the grid edge (DEC-8)

def _grid_run(best_lr):
    """One arm with a three-point LR grid (1e-4, 3e-4, 1e-3); the run at `best_lr` has the lowest loss."""
    lrs = {"r_low": 1e-4, "r_mid": 3e-4, "r_high": 1e-3}
    values = {run: {"loss": 0.1 if lr == best_lr else 0.9, "acc": 0.5} for run, lr in lrs.items()}
    from experiment.stats.decision import best_lr_threshold

    criteria = [{"id": "c1", "metric": "acc", "weights": {"a": 1.0}, "margin": 0.0}]
    return best_lr_threshold(values, {run: "a" for run in lrs}, lrs, criteria, "loss")


@pytest.mark.parametrize("best_lr, edge", [(1e-4, True), (3e-4, False), (1e-3, True)])
def test_the_grid_edge_is_the_lowest_or_highest_learning_rate_only(best_lr, edge):
    result = _grid_run(best_lr)
    assert result["per_arm"]["a"]["selected_lr"] == best_lr
    assert result["per_arm"]["a"]["lr_grid"] == [1e-4, 3e-4, 1e-3]
    assert result["per_arm"]["a"]["grid_edge"] is edge and result["grid_edge"] is edge


def test_extra_items_error_names_the_first_extra_item_in_sorted_order():
    obs = _obs({"t": [1, 0, 1], "b": [0, 0, 1]})  # items i0, i1, i2; only i0 is evaluated
    with pytest.raises(DecisionError, match=r"outside the evaluated list, e\.g\. 'i1'$"):
        paired_hoeffding(obs, [_criterion()], alpha=0.05, item_ids=["i0"])


def test_duplicate_observation_error_names_arm_item_seed_and_metric():
    good = _obs({"t": [1, 0], "b": [0, 0]})
    with pytest.raises(DecisionError, match=r"duplicate observation for arm 't', item 'i0', seed 0, "
                                            r"metric 'accuracy'$"):
        paired_hoeffding(good + good[:1], [_criterion()], alpha=0.05)


# ---------------------------------------------------------------- best LR, defaults and refusals
# experiment.stats.decision beyond the tests above (issue 28 item 7, the complete mutation run's
# survivors): the best-LR threshold rule (DEC-8 of the TriMuon recorded revision), the defaults of the
# simultaneous adjustment, which observation a missing-observation error names, the seed rule of
# direction+confidence, and the refusals of unknown methods and vocabularies. Expected values are
# literals or the contract's formulas, never taken from the code under test.


# ---- best_lr_threshold

# three arms, so a run of a neighbouring arm (alphabetically before or after) is never taken for its own
RUN_ARM = {"a1": "a", "a2": "a", "a3": "a", "b1": "b", "b2": "b", "c1": "c", "c2": "c"}
RUN_LR = {"a1": 1e-4, "a2": 2e-4, "a3": 4e-4, "b1": 1e-4, "b2": 2e-4, "c1": 1e-4, "c2": 2e-4}
RUN_VALUES = {
    "a1": {"loss": 2.0, "acc": 0.10}, "a2": {"loss": 1.5, "acc": 0.75}, "a3": {"loss": 1.8, "acc": 0.20},
    "b1": {"loss": 1.0, "acc": 0.25}, "b2": {"loss": 0.5, "acc": 0.50},   # b's losses are the lowest of all
    "c1": {"loss": 1.2, "acc": 0.30}, "c2": {"loss": 1.4, "acc": 0.40},
}


def _best(criteria, values=RUN_VALUES, run_arm=RUN_ARM, run_lr=RUN_LR):
    return best_lr_threshold(values, run_arm, run_lr, criteria, "loss")


def test_each_arm_selects_its_own_lowest_loss_run():
    result = _best([])
    assert {arm: entry["selected_run"] for arm, entry in result["per_arm"].items()} == {"a": "a2", "b": "b2", "c": "c1"}
    assert result["per_arm"]["a"]["selected_lr"] == 2e-4
    assert result["per_arm"]["a"]["lr_grid"] == [1e-4, 2e-4, 4e-4]
    assert result["per_arm"]["a"]["values"] == {"loss": 1.5, "acc": 0.75}


def test_a_run_without_values_is_left_out_and_an_arm_without_any_is_refused():
    run_arm = {**RUN_ARM, "a4": "a"}
    result = _best([], run_arm=run_arm, run_lr={**RUN_LR, "a4": 8e-4})
    assert result["per_arm"]["a"]["lr_grid"] == [1e-4, 2e-4, 4e-4]
    with pytest.raises(DecisionError, match="no values for any run of arm 'd'"):
        _best([], run_arm={**RUN_ARM, "d1": "d"}, run_lr={**RUN_LR, "d1": 1e-4})


@pytest.mark.parametrize("bad", [math.nan, math.inf, "1.0", None])
def test_a_selection_metric_that_is_not_a_finite_number_is_refused(bad):
    values = {**RUN_VALUES, "a3": {"loss": bad, "acc": 0.2}}
    with pytest.raises(DecisionError, match="loss of a3"):
        _best([], values=values)


def test_grid_edge_is_set_only_when_the_selected_lr_is_an_edge_of_a_grid_of_two_or_more():
    result = _best([])
    # a: middle of three; b: the top of two; c: the bottom of two
    assert [result["per_arm"][arm]["grid_edge"] for arm in "abc"] == [False, True, True]
    assert result["grid_edge"] is True
    single = _best([], values={"a1": {"loss": 1.0}}, run_arm={"a1": "a"}, run_lr={"a1": 1e-4})
    assert single["per_arm"]["a"]["grid_edge"] is False and single["grid_edge"] is False
    middle = _best([], values={r: RUN_VALUES[r] for r in ("a1", "a2", "a3")},
                   run_arm={r: "a" for r in ("a1", "a2", "a3")}, run_lr=RUN_LR)
    assert middle["grid_edge"] is False


def test_the_effect_is_the_weighted_sum_of_the_selected_runs_values():
    # 2 * acc(a2) - 1 * acc(b2) = 2 * 0.75 - 0.5 = 1.0
    criterion = {"id": "c1", "metric": "acc", "weights": {"a": 2.0, "b": -1.0}, "margin": 0.0}
    result = _best([criterion])
    assert result["criteria"] == [{"id": "c1", "metric": "acc", "effect": 1.0, "margin": 0.0, "met": True}]


@pytest.mark.parametrize("comparison, effect_minus_margin, met", [
    ("at_least", 0.0, True), ("at_least", 0.25, True), ("at_least", -0.25, False),
    ("exceeds", 0.0, False), ("exceeds", 0.25, True), ("exceeds", -0.25, False),
])
def test_a_criterion_is_met_at_its_margin_only_with_at_least(comparison, effect_minus_margin, met):
    # effect = acc(a2) - acc(b2) = 0.25, exactly representable
    criterion = {"id": "c", "metric": "acc", "weights": {"a": 1.0, "b": -1.0},
                 "margin": 0.25 - effect_minus_margin, "comparison": comparison}
    assert _best([criterion])["criteria"][0]["met"] is met


@pytest.mark.parametrize("comparison", ["above", "exceeds", "greater_than"])
def test_any_comparison_but_at_least_is_strict(comparison):
    criterion = {"id": "c", "metric": "acc", "weights": {"a": 1.0, "b": -1.0}, "margin": 0.25, "comparison": comparison}
    assert _best([criterion])["criteria"][0]["met"] is False


def test_at_least_is_the_default_comparison():
    criterion = {"id": "c", "metric": "acc", "weights": {"a": 1.0, "b": -1.0}, "margin": 0.25}
    assert _best([criterion])["criteria"][0]["met"] is True


def test_the_verdict_is_supported_only_when_every_criterion_is_met():
    met = {"id": "m", "metric": "acc", "weights": {"a": 1.0}, "margin": 0.75}
    missed = {"id": "x", "metric": "acc", "weights": {"a": 1.0}, "margin": 0.8}
    assert _best([met])["verdict"] == "supported"
    assert _best([met, missed])["verdict"] == "refuted"
    assert _best([missed, met])["verdict"] == "refuted"
    assert _best([])["verdict"] == "refuted"  # no criterion supports nothing
    assert _best([])["method"] == "best_lr_threshold" and _best([])["criteria"] == []


def test_a_criterion_weighting_an_arm_without_runs_is_refused():
    with pytest.raises(DecisionError, match="no runs of arm 'z'"):
        _best([{"id": "c", "metric": "acc", "weights": {"z": 1.0}, "margin": 0.0}])


# ---- paired Hoeffding: defaults and messages

def test_without_simultaneous_two_criteria_keep_the_full_alpha():
    obs = _obs({"t": [1, 1, 0, 1], "b": [0, 1, 0, 0]})
    result = paired_hoeffding(obs, [_criterion("c1"), _criterion("c2")], alpha=0.1)
    assert result.adjustment == "none" and result.simultaneous is False
    assert [c.alpha for c in result.criteria] == [0.1, 0.1]
    summary = decision_summary({"alpha": 0.1, "criteria": [_criterion("c1"), _criterion("c2")]}, obs, "three_way")
    assert summary["adjustment"] == "none"


def test_observations_of_another_metric_before_the_criterions_are_skipped_not_the_end():
    other = _obs({"t": [0.5, 0.5, 0.5, 0.5], "b": [0.5, 0.5, 0.5, 0.5]}, metric="loss")
    obs = other + _obs({"t": [1, 1, 0, 1], "b": [0, 1, 0, 0]})
    result = paired_hoeffding(obs, [_criterion()], alpha=0.05)
    assert result.criteria[0].effect == pytest.approx(0.5, abs=1e-15)


def test_the_missing_observation_error_names_the_first_missing_one():
    obs = [o for o in _obs({"t": [1, 1, 0, 1], "b": [0, 1, 0, 0]}) if (o.arm, o.item_id) not in {("t", "i1"), ("b", "i3")}]
    with pytest.raises(DecisionError, match=r"2 missing observations \(first: arm 't', item 'i1', seed 0\)"):
        paired_hoeffding(obs, [_criterion()], alpha=0.05)


# ---- direction + confidence: seeds settle a straddling interval only strictly below the margin

def _straddling(per_seed_effects: dict, margin=0.1) -> DecisionResult:
    criterion = CriterionResult(
        id="c", metric="accuracy", weights={}, arm_weights={}, margin=margin, bounds=[0.0, 1.0], n=4, effect=0.05,
        range=2.0, alpha=0.05, half_width=0.2, lower=-0.15, upper=0.25, per_arm_means={}, per_arm_seed_means={},
        evaluator_ids=[], status="unsettled", per_seed_effects=per_seed_effects)
    return DecisionResult(method="paired_hoeffding", alpha=0.05, simultaneous=False, adjustment="none",
                          role_to_arm={}, seeds=[0, 1, 2], criteria=[criterion])


def test_three_seeds_all_below_the_margin_settle_it():
    verdict = direction_confidence_verdict(_straddling({"0": 0.0, "1": 0.05, "2": 0.09}))
    assert verdict == {"verdict": "refuted", "confidence": "strong", "limits": []}


def test_a_seed_exactly_at_the_margin_does_not_settle_it():
    verdict = direction_confidence_verdict(_straddling({"0": 0.0, "1": 0.1}))
    assert verdict["confidence"] == "weak" and "straddles the margin" in verdict["limits"][0]


# ---- refusals

def test_an_unknown_decision_method_is_refused_whatever_its_name():
    obs = _obs({"t": [1, 1, 0, 1], "b": [0, 1, 0, 0]})
    for method in ("best_lr_threshold", "t_test", "wilcoxon"):
        with pytest.raises(DecisionError, match="unsupported decision method"):
            decision_summary({"method": method, "alpha": 0.05, "criteria": [_criterion()]}, obs, "three_way")


def test_an_unknown_vocabulary_is_refused_whatever_its_name():
    obs = _obs({"t": [1, 1, 0, 1], "b": [0, 1, 0, 0]})
    for vocabulary in ("binary", "direction", "yes_no"):
        with pytest.raises(DecisionError, match="unknown verdict vocabulary"):
            decision_summary({"alpha": 0.05, "criteria": [_criterion()]}, obs, vocabulary)


def test_the_observations_file_refuses_a_value_that_is_not_finite():
    with pytest.raises(ValueError):
        observations_jsonl_bytes([Observation(item_id="i0", arm="t", seed=0, metric="accuracy", value=math.nan)])


# ---- best_lr_threshold at several scheduled seeds (issue 46: SFT seeds)

def _two_seed_grid(losses: dict[tuple[str, float, int], float]) -> dict:
    """Arms t and b, each at LRs 1e-4 and 1e-3, at seeds 0 and 1; `losses` (arm, lr, seed) -> held-out loss."""
    values, run_arm, run_lr, run_seed = {}, {}, {}, {}
    for (arm, lr, seed), loss in losses.items():
        name = f"{arm}@lr={lr:g}" + ("" if seed == 0 else f"-seed{seed}")
        values[name], run_arm[name], run_lr[name], run_seed[name] = {"loss": loss}, arm, lr, seed
    criteria = [{"id": "gap", "metric": "loss", "weights": {"b": 1, "t": -1}, "margin": 0.01}]
    return best_lr_threshold(values, run_arm, run_lr, criteria, "loss", run_seed)


def test_seeds_select_the_learning_rate_by_its_mean_over_the_seeds():
    # t at 1e-4: 0.50 and 0.10 (mean 0.30); at 1e-3: 0.35 and 0.35 (mean 0.35). Seed 0 alone would pick 1e-3.
    result = _two_seed_grid({("t", 1e-4, 0): 0.50, ("t", 1e-4, 1): 0.10, ("t", 1e-3, 0): 0.35, ("t", 1e-3, 1): 0.35,
                             ("b", 1e-4, 0): 0.40, ("b", 1e-4, 1): 0.40, ("b", 1e-3, 0): 0.60, ("b", 1e-3, 1): 0.60})
    assert result["seeds"] == [0, 1]
    assert result["per_arm"]["t"]["selected_lr"] == 1e-4 and result["per_arm"]["t"]["selected_run"] == "t@lr=0.0001"
    assert result["per_arm"]["t"]["selected_runs"] == ["t@lr=0.0001", "t@lr=0.0001-seed1"]
    assert result["per_arm"]["t"]["values"]["loss"] == pytest.approx(0.30)
    assert result["per_arm"]["t"]["lr_grid"] == [1e-4, 1e-3]
    gap = result["criteria"][0]
    assert gap["effect"] == pytest.approx(0.40 - 0.30)
    assert gap["per_seed_effects"] == {"0": pytest.approx(0.40 - 0.50), "1": pytest.approx(0.40 - 0.10)}
    assert gap["met"] and not gap["settled_by_seeds"] and not result["settled_by_seeds"]


def test_two_seeds_that_both_meet_the_margin_settle_it():
    result = _two_seed_grid({("t", 1e-4, 0): 0.20, ("t", 1e-4, 1): 0.25, ("t", 1e-3, 0): 0.9, ("t", 1e-3, 1): 0.9,
                             ("b", 1e-4, 0): 0.40, ("b", 1e-4, 1): 0.40, ("b", 1e-3, 0): 0.6, ("b", 1e-3, 1): 0.6})
    assert result["verdict"] == "supported" and result["settled_by_seeds"]


def test_one_seed_never_settles_a_margin_and_records_no_per_seed_effects():
    result = _two_seed_grid({("t", 1e-4, 0): 0.20, ("t", 1e-3, 0): 0.9, ("b", 1e-4, 0): 0.40, ("b", 1e-3, 0): 0.6})
    assert result["seeds"] == [0] and not result["settled_by_seeds"]
    assert "per_seed_effects" not in result["criteria"][0]


def test_a_grid_point_missing_a_seed_is_refused():
    with pytest.raises(DecisionError, match="not at every scheduled seed"):
        _two_seed_grid({("t", 1e-4, 0): 0.2, ("t", 1e-4, 1): 0.2, ("t", 1e-3, 0): 0.9,
                        ("b", 1e-4, 0): 0.4, ("b", 1e-4, 1): 0.4, ("b", 1e-3, 0): 0.6, ("b", 1e-3, 1): 0.6})
