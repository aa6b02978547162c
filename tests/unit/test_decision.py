"""Tests of the paired Hoeffding decision and the verdict vocabularies (experiment/stats/decision.py)."""

import hashlib
import json
import math

import numpy as np
import pytest

from experiment.stats.decision import (
    DecisionError,
    Observation,
    decision_record,
    decision_summary,
    direction_confidence_verdict,
    paired_hoeffding,
    read_observations_jsonl,
    three_way_verdict,
    write_observations_jsonl,
)

GS1_CRITERIA = [{"id": "primary", "metric": "accuracy", "weights": {"treatment": 1, "baseline": -1},
                 "margin": -0.03, "bounds": [0, 1]}]
GS1_ROLES = {"treatment": "gs1_kernel", "baseline": "grpo_gs8"}
SELFGEN_CRITERIA = [
    {"id": "noninferiority_vs_gsm8k_rl", "metric": "accuracy", "weights": {"rl_selfgen": 1, "rl_gsm8k": -1},
     "margin": -0.03, "bounds": [0, 1]},
    {"id": "recovered_half_gain", "metric": "accuracy",
     "weights": {"rl_selfgen": 1, "rl_gsm8k": -0.5, "base": -0.5}, "margin": 0.0, "bounds": [0, 1]},
]


def _observations(values_by_arm, seed=0, evaluator_id="e" * 64, metric="accuracy"):
    return [Observation(item_id=f"test-{k}", arm=arm, seed=seed, metric=metric, value=float(v),
                        evaluator_id=evaluator_id)
            for arm, values in values_by_arm.items() for k, v in enumerate(values)]


def _correct_answers(rng, n, accuracy):
    return (rng.random(n) < accuracy).astype(float)


def test_gs1_rule_effect_bounds_and_role_mapping_follow_the_definition():
    rng = np.random.default_rng(0)
    n = 1319
    treatment, baseline = _correct_answers(rng, n, 0.62), _correct_answers(rng, n, 0.6)
    result = paired_hoeffding(_observations({"gs1_kernel": treatment, "grpo_gs8": baseline}),
                              GS1_CRITERIA, 0.05, role_to_arm=GS1_ROLES)
    criterion = result.criteria[0]
    expected_effect = float(np.mean(treatment - baseline))
    expected_half_width = 2.0 * math.sqrt(math.log(1 / 0.05) / (2 * n))
    assert criterion.n == n
    assert criterion.effect == pytest.approx(expected_effect, abs=1e-14)
    assert criterion.range == 2.0
    assert criterion.half_width == pytest.approx(expected_half_width, rel=1e-14)
    assert criterion.lower == pytest.approx(expected_effect - expected_half_width, abs=1e-14)
    assert criterion.upper == pytest.approx(expected_effect + expected_half_width, abs=1e-14)
    assert criterion.per_arm_means == {"gs1_kernel": pytest.approx(treatment.mean(), abs=1e-15),
                                       "grpo_gs8": pytest.approx(baseline.mean(), abs=1e-15)}
    assert criterion.arm_weights == {"gs1_kernel": 1.0, "grpo_gs8": -1.0}
    assert result.role_to_arm == GS1_ROLES
    assert result.adjustment == "none" and criterion.alpha == 0.05


def test_status_passes_fails_and_unsettled():
    n = 400
    half_width = 2.0 * math.sqrt(math.log(20) / (2 * n))
    good, bad = np.ones(n), np.zeros(n)
    half = np.array([1.0, 0.0] * (n // 2))
    cases = {"passes": (good, half), "fails": (bad, half), "unsettled": (half, half)}
    for status, (treatment, baseline) in cases.items():
        result = paired_hoeffding(_observations({"gs1_kernel": treatment, "grpo_gs8": baseline}),
                                  GS1_CRITERIA, 0.05, role_to_arm=GS1_ROLES)
        effect = treatment.mean() - baseline.mean()
        expected = ("passes" if effect - half_width > -0.03
                    else "fails" if effect + half_width < -0.03 else "unsettled")
        assert expected == status
        assert result.criteria[0].status == status


def test_simultaneous_intervals_use_bonferroni_and_record_it():
    rng = np.random.default_rng(1)
    n = 1319
    arms = {"rl_selfgen": _correct_answers(rng, n, 0.7), "rl_gsm8k": _correct_answers(rng, n, 0.68),
            "base": _correct_answers(rng, n, 0.5)}
    result = paired_hoeffding(_observations(arms), SELFGEN_CRITERIA, 0.05, simultaneous=True)
    assert result.adjustment == "bonferroni" and result.simultaneous
    recovered = result.criteria[1]
    assert recovered.alpha == 0.025
    assert recovered.range == 2.0  # (1 + 0.5 + 0.5) * (1 - 0)
    assert recovered.half_width == pytest.approx(2.0 * math.sqrt(math.log(1 / 0.025) / (2 * n)), rel=1e-14)
    expected_effect = np.mean(arms["rl_selfgen"] - 0.5 * arms["rl_gsm8k"] - 0.5 * arms["base"])
    assert recovered.effect == pytest.approx(expected_effect, abs=1e-14)
    assert result.role_to_arm == {}
    single = paired_hoeffding(_observations(arms), SELFGEN_CRITERIA[:1], 0.05, simultaneous=True)
    assert single.adjustment == "none" and single.criteria[0].alpha == 0.05


def test_several_seeds_average_per_item_and_report_per_seed_means():
    rng = np.random.default_rng(2)
    n = 50
    values = {(arm, seed): _correct_answers(rng, n, 0.5) for arm in ("gs1_kernel", "grpo_gs8") for seed in (0, 1)}
    observations = []
    for (arm, seed), row in values.items():
        observations += _observations({arm: row}, seed=seed)
    result = paired_hoeffding(observations, GS1_CRITERIA, 0.05, role_to_arm=GS1_ROLES, seeds=[0, 1])
    criterion = result.criteria[0]
    per_item = ((values[("gs1_kernel", 0)] + values[("gs1_kernel", 1)]) / 2
                - (values[("grpo_gs8", 0)] + values[("grpo_gs8", 1)]) / 2)
    assert criterion.n == n
    assert criterion.effect == pytest.approx(per_item.mean(), abs=1e-14)
    assert criterion.per_arm_seed_means["gs1_kernel"]["1"] == pytest.approx(values[("gs1_kernel", 1)].mean())


@pytest.mark.parametrize("defect,message", [
    ("missing_row", "missing observations"),
    ("missing_seed", "missing observations"),
    ("duplicate", "duplicate observation"),
    ("out_of_bounds", "outside the bounds"),
    ("nan", "not finite"),
    ("two_evaluators", "several evaluators"),
])
def test_incomplete_or_invalid_observations_are_errors(defect, message):
    observations = _observations({"gs1_kernel": np.ones(10), "grpo_gs8": np.zeros(10)})
    seeds = None
    if defect == "missing_row":
        observations = observations[1:]
    elif defect == "missing_seed":
        seeds = [0, 1]
    elif defect == "duplicate":
        observations.append(observations[0])
    elif defect == "out_of_bounds":
        observations[0] = Observation("test-0", "gs1_kernel", 0, "accuracy", 1.5, "e" * 64)
    elif defect == "nan":
        observations[0] = Observation("test-0", "gs1_kernel", 0, "accuracy", float("nan"), "e" * 64)
    elif defect == "two_evaluators":
        observations[0] = Observation("test-0", "gs1_kernel", 0, "accuracy", 1.0, "f" * 64)
    with pytest.raises(DecisionError, match=message):
        paired_hoeffding(observations, GS1_CRITERIA, 0.05, role_to_arm=GS1_ROLES, seeds=seeds)


def test_unmapped_role_is_a_missing_arm():
    observations = _observations({"gs1_kernel": np.ones(10), "grpo_gs8": np.zeros(10)})
    with pytest.raises(DecisionError, match="missing observations"):
        paired_hoeffding(observations, GS1_CRITERIA, 0.05)  # no role_to_arm: arms 'treatment'/'baseline'


def _result_with(statuses):
    """A DecisionResult whose criteria have the given statuses (built from real data)."""
    n = 400
    half = np.array([1.0, 0.0] * (n // 2))
    pick = {"passes": (np.ones(n), half), "fails": (np.zeros(n), half), "unsettled": (half, half)}
    result = None
    for index, status in enumerate(statuses):
        treatment, baseline = pick[status]
        one = paired_hoeffding(_observations({"gs1_kernel": treatment, "grpo_gs8": baseline}),
                               [dict(GS1_CRITERIA[0], id=f"c{index}")], 0.05, role_to_arm=GS1_ROLES)
        assert one.criteria[0].status == status
        if result is None:
            result = one
        else:
            result.criteria += one.criteria
    return result


def test_direction_confidence_vocabulary():
    assert direction_confidence_verdict(_result_with(["passes"])) == {
        "verdict": "supported", "confidence": "strong", "limits": []}
    straddling = direction_confidence_verdict(_result_with(["unsettled"]))
    assert straddling["verdict"] == "refuted" and straddling["confidence"] == "weak"
    assert "straddles" in straddling["limits"][0]
    limited = direction_confidence_verdict(_result_with(["passes"]), limits=["one training seed"])
    assert limited == {"verdict": "supported", "confidence": "weak", "limits": ["one training seed"]}
    mixed = direction_confidence_verdict(_result_with(["passes", "fails"]))
    assert mixed == {"verdict": "refuted", "confidence": "strong", "limits": []}


@pytest.mark.parametrize("statuses,verdict,reason", [
    (["passes", "passes"], "supported", "supported"),
    (["fails", "fails"], "refuted", "refuted"),
    (["passes", "fails"], "inconclusive", "mixed_criteria"),
    (["passes", "unsettled"], "inconclusive", "insufficient_evidence"),
    (["fails", "unsettled"], "inconclusive", "insufficient_evidence"),
])
def test_three_way_vocabulary(statuses, verdict, reason):
    outcome = three_way_verdict(_result_with(statuses))
    assert (outcome["verdict"], outcome["outcome_reason"]) == (verdict, reason)


def test_three_way_incomplete_execution_and_blocking_limits():
    result = _result_with(["passes", "passes"])
    assert three_way_verdict(result, every_arm_ran=False)["outcome_reason"] == "incomplete_execution"
    blocked = three_way_verdict(result, blocking_limits=["grid-edge LR"])
    assert blocked["verdict"] == "inconclusive" and blocked["limits"] == ["grid-edge LR"]


def test_observations_jsonl_round_trip_and_sha256(tmp_path):
    observations = _observations({"gs1_kernel": [1, 0, 1], "grpo_gs8": [0, 0, 1]})
    observations.append(Observation("test-9", "base", 0, "accuracy", 0.0))  # no evaluator id
    path = tmp_path / "scored-observations.jsonl"
    digest = write_observations_jsonl(path, observations)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert read_observations_jsonl(path) == observations
    first = json.loads(path.read_text().splitlines()[0])
    assert first == {"item_id": "test-0", "arm": "gs1_kernel", "seed": 0, "metric": "accuracy",
                     "value": 1.0, "evaluator_id": "e" * 64}


@pytest.mark.parametrize("line,message", [
    ('{"item_id": "a", "arm": "x", "seed": 0, "metric": "accuracy"}', "missing field"),
    ('{"item_id": 3, "arm": "x", "seed": 0, "metric": "accuracy", "value": 1}', "item_id"),
    ('{"item_id": "a", "arm": "x", "seed": 0, "metric": "accuracy", "value": NaN}', "not finite"),
    ('{"item_id": "a", "arm": "x", "seed": true, "metric": "accuracy", "value": 1}', "seed"),
    ("not json", "not valid JSON"),
])
def test_bad_observation_rows_are_rejected(tmp_path, line, message):
    path = tmp_path / "obs.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(DecisionError, match=message):
        read_observations_jsonl(path)


def test_decision_summary_gives_both_vocabularies():
    rule = {"version": 1, "method": "paired_hoeffding", "alpha": 0.05, "seeds": [0], "criteria": GS1_CRITERIA}
    observations = _observations({"gs1_kernel": np.ones(100), "grpo_gs8": np.zeros(100)})
    summary = decision_summary(rule, observations, "direction_confidence", role_to_arm=GS1_ROLES)
    json.dumps(summary, allow_nan=False)
    assert summary["verdict"] == "supported" and summary["confidence"] == "strong"
    assert summary["criteria"][0]["effect"] == 1.0 and summary["role_to_arm"] == GS1_ROLES
    three_way = decision_summary(rule, observations, "three_way", role_to_arm=GS1_ROLES)
    assert three_way["verdict"] == "supported" and three_way["outcome_reason"] == "supported"
    with pytest.raises(DecisionError, match="vocabulary"):
        decision_summary(rule, observations, "other", role_to_arm=GS1_ROLES)


def test_decision_record_references_the_retained_file(tmp_path):
    rule = {"version": 1, "method": "paired_hoeffding", "alpha": 0.05, "seeds": [0], "criteria": GS1_CRITERIA}
    observations = _observations({"gs1_kernel": np.ones(50), "grpo_gs8": np.zeros(50)})
    path = tmp_path / "scored-observations.jsonl"
    digest = write_observations_jsonl(path, observations)
    summary = decision_summary(rule, observations, "direction_confidence", role_to_arm=GS1_ROLES)
    record = decision_record(summary, path.name, digest)
    assert record["version"] == 1
    assert record["observations_file"] == {"name": "scored-observations.jsonl",
                                           "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    assert "observations" not in record and "verdict" not in record
    assert record["role_to_arm"] == GS1_ROLES and record["criteria"][0]["n"] == 50
    with pytest.raises(DecisionError, match="path"):
        decision_record(summary, str(path), digest)


def _two_seed_observations(effects_by_seed: dict[int, float], n: int = 40) -> list[Observation]:
    """Treatment and baseline at two seeds; at each seed the treatment loses `-effect * n` items the baseline gets."""
    observations = []
    for seed, effect in effects_by_seed.items():
        losses = round(-effect * n)
        treatment = [0.0 if k < losses else 1.0 for k in range(n)]
        observations += _observations({"gs1_kernel": treatment, "grpo_gs8": [1.0] * n}, seed=seed)
    return observations


def test_two_seeds_below_the_margin_settle_a_straddling_interval_for_confidence():
    """GEN-3: "every criterion's interval (or >= 2 seeds) settles its margin". 40 items: the interval is
    +-0.39 wide, so it straddles the -0.03 margin; both seeds' own effects below it settle the refutation."""
    below = paired_hoeffding(_two_seed_observations({0: -0.1, 1: -0.2}), GS1_CRITERIA, 0.05, role_to_arm=GS1_ROLES,
                             seeds=[0, 1])
    criterion = below.criteria[0]
    assert criterion.status == "unsettled" and criterion.per_seed_effects == pytest.approx({"0": -0.1, "1": -0.2})
    assert direction_confidence_verdict(below) == {"verdict": "refuted", "confidence": "strong", "limits": []}
    # seeds that disagree, or a single seed, leave the straddling interval a limit
    mixed = paired_hoeffding(_two_seed_observations({0: -0.1, 1: 0.0}), GS1_CRITERIA, 0.05, role_to_arm=GS1_ROLES,
                             seeds=[0, 1])
    one = paired_hoeffding(_two_seed_observations({0: -0.2}), GS1_CRITERIA, 0.05, role_to_arm=GS1_ROLES, seeds=[0])
    for result in (mixed, one):
        verdict = direction_confidence_verdict(result)
        assert verdict["confidence"] == "weak" and "straddles the margin" in verdict["limits"][0]
    # seeds above the margin cannot turn a straddling interval into support: still refuted, still weak
    above = paired_hoeffding(_two_seed_observations({0: 0.0, 1: 0.0}), GS1_CRITERIA, 0.05, role_to_arm=GS1_ROLES,
                             seeds=[0, 1])
    assert direction_confidence_verdict(above)["verdict"] == "refuted"
    assert direction_confidence_verdict(above)["confidence"] == "weak"
