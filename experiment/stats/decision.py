"""Paired Hoeffding decision over item-level observations (DEC-5..DEC-10).

Input: one ``Observation`` per (arm, item, scheduled seed, metric), failures scored 0
(a missing row is an error, never a zero).  For each criterion of a spec's
``decision_rule``:

* weights are keyed by arm names or by role labels (``treatment``, ``baseline``);
  role labels are mapped to arm names through ``role_to_arm`` and the mapping is
  recorded in the result;
* value_arm(item) is the arm's value on that item, averaged over the scheduled seeds
  (with the usual single seed it is just that seed's value);
* the per-item statistic is sum_arm w_arm * value_arm(item), n = number of items;
* effect = mean of the statistic over items;
* range = sum |w| * (hi - lo) from the criterion's ``bounds``; values outside the
  bounds are an error (never clipped);
* one-sided Hoeffding half-width = range * sqrt(ln(1 / alpha_c) / (2 n)), where
  alpha_c = alpha, or alpha / k (Bonferroni over k criteria) when simultaneous
  intervals are asked for; the adjustment is recorded;
* lower = effect - half-width, upper = effect + half-width;
* status: ``passes`` when lower > margin, ``fails`` when upper < margin, else
  ``unsettled``.

Verdicts: ``direction_confidence_verdict`` and ``three_way_verdict`` implement the two
vocabularies of GEN-3 and GEN-4; ``decision_summary`` runs the whole computation
(flow and ``python -m flows.decide`` both call it) and ``decision_record`` shapes the
RESULT ``decision`` object.  Observation files: ``write_observations_jsonl``,
``read_observations_jsonl``, ``bytes_sha256``.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

OBSERVATIONS_FILE_NAME = "scored-observations.jsonl"


class DecisionError(ValueError):
    """Observations or a decision rule that cannot give a decision."""


@dataclass(frozen=True)
class Observation:
    item_id: str
    arm: str
    seed: int
    metric: str
    value: float
    evaluator_id: str | None = None

    def as_row(self) -> dict:
        row = asdict(self)
        if row["evaluator_id"] is None:
            del row["evaluator_id"]
        return row


@dataclass
class CriterionResult:
    id: str
    metric: str
    weights: dict  # as written in the spec
    arm_weights: dict  # keyed by arm name after role mapping
    margin: float
    bounds: list
    n: int
    effect: float
    range: float
    alpha: float  # alpha used for this criterion's interval (after any adjustment)
    half_width: float
    lower: float
    upper: float
    per_arm_means: dict  # arm -> unrounded mean over items and seeds
    per_arm_seed_means: dict  # arm -> {seed (as str): mean over items}
    evaluator_ids: list
    status: str  # passes | fails | unsettled
    per_seed_effects: dict = field(default_factory=dict)  # seed (as str) -> the effect at that seed alone


@dataclass
class DecisionResult:
    method: str
    alpha: float
    simultaneous: bool
    adjustment: str  # "none" or "bonferroni"
    role_to_arm: dict  # the mapping used for role-keyed weights ({} when none was needed)
    seeds: list
    criteria: list[CriterionResult] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _finite_number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DecisionError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise DecisionError(f"{what} is not finite: {value!r}")
    return float(value)


# The contract's decision compares arms on paired items: "the server recomputes paired effects" of "fixed
# checkpoint items" (contract-source §7 and the specs' estimands, "paired difference"), with the per-item statistic
# sum_arm w_arm * value_arm(item) and its range sum |w| * (hi - lo) (exchange-contract §7). A criterion's weights are
# therefore a contrast of the arms: finite numbers, not all zero, summing to zero (treatment 1, baseline -1;
# rl_selfgen 1, rl_gsm8k -0.5, base -0.5). Any other vector is one the contract does not define.
CONTRAST_REASON = ("the contract's decision is a paired effect between arms: the per-item statistic sum w*value, "
                   "with range sum|w|*(hi-lo), needs weights that form a contrast (finite, not all zero, summing to "
                   "0, e.g. treatment 1, baseline -1)")


def zero_range_problem(weights) -> str | None:
    """Why these weights give no interval at all (none, a weight that is no finite number, or every weight zero:
    the statistic is 0 on every item and its range sum|w|*(hi-lo) is 0, so any negative margin would 'pass'),
    or None. Every decision computed here refuses them."""
    if not isinstance(weights, dict) or not weights:
        return f"weights {weights!r} name no arm; {CONTRAST_REASON}"
    for key, weight in weights.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight):
            return f"weight {key!r} is {weight!r}, not a finite number; {CONTRAST_REASON}"
    if all(weight == 0 for weight in weights.values()):
        return (f"every weight is 0 ({weights!r}): the statistic is 0 on every item and its range is 0, so the "
                f"criterion compares nothing; {CONTRAST_REASON}")
    return None


def weights_problem(weights) -> str | None:
    """Why a criterion's weights are not a contrast the contract defines (zero_range_problem, or weights that do
    not sum to 0: they would measure the arms' level, not their paired difference), or None. Spec intake and
    `python -m flows.decide` refuse them."""
    problem = zero_range_problem(weights)
    if problem is None and not math.isclose(sum(weights.values()), 0.0, abs_tol=1e-9 * sum(map(abs, weights.values()))):
        problem = f"weights {weights!r} sum to {sum(weights.values())!r}, not 0; {CONTRAST_REASON}"
    return problem


def _arm_weights(weights: dict, role_to_arm: dict | None, criterion_id: str) -> tuple[dict, dict]:
    """Weights keyed by arm name, and the role -> arm pairs that were used."""
    problem = zero_range_problem(weights)
    if problem is not None:
        raise DecisionError(f"criterion {criterion_id}: {problem}")
    arm_weights: dict[str, float] = {}
    used_roles: dict[str, str] = {}
    for key, weight in weights.items():
        arm = key
        if role_to_arm and key in role_to_arm:
            arm = role_to_arm[key]
            used_roles[key] = arm
        if arm in arm_weights:
            raise DecisionError(f"criterion {criterion_id}: arm {arm!r} is weighted twice")
        arm_weights[arm] = _finite_number(weight, f"criterion {criterion_id} weight {key!r}")
    return arm_weights, used_roles


def paired_hoeffding(
    observations: list[Observation],
    criteria: list[dict],
    alpha: float,
    role_to_arm: dict | None = None,
    simultaneous: bool = False,
    seeds: list[int] | None = None,
    item_ids: list[str] | None = None,
) -> DecisionResult:
    """Per-criterion effect and one-sided Hoeffding bounds (see the module docstring).

    ``seeds``: the scheduled seeds (``decision_rule.seeds``); every arm x item x seed
    must be present.  Default: the seeds that occur in the observations.
    ``item_ids``: the evaluated items; default: every item that occurs for the
    criterion's metric (in any arm).  Observations of arms no criterion weights are ignored.

    Long because: the contract's decision is one computation, per criterion from observations to paired effects,
    bounds, adjustment, seeds and verdict, in the order section 7 gives; the grader and flows.decide re-run it line by
    line against that text.
    """
    alpha = _finite_number(alpha, "alpha")
    if not 0 < alpha < 1:
        raise DecisionError(f"alpha must be in (0, 1), got {alpha}")
    if not criteria:
        raise DecisionError("decision_rule has no criteria")
    for observation in observations:
        _finite_number(observation.value, f"value of {observation.arm}/{observation.item_id}")
    if seeds is None:
        seeds = sorted({observation.seed for observation in observations})
    seeds = list(seeds)
    if not seeds:
        raise DecisionError("no scheduled seeds")

    adjust = simultaneous and len(criteria) > 1
    alpha_per_criterion = alpha / len(criteria) if adjust else alpha
    result = DecisionResult(
        method="paired_hoeffding",
        alpha=alpha,
        simultaneous=simultaneous,
        adjustment="bonferroni" if adjust else "none",
        role_to_arm={},
        seeds=seeds,
    )
    for criterion in criteria:
        criterion_id = str(criterion.get("id", ""))
        metric = criterion["metric"]
        margin = _finite_number(criterion["margin"], f"criterion {criterion_id} margin")
        bounds = criterion.get("bounds")
        if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
            raise DecisionError(f"criterion {criterion_id}: bounds must be [lo, hi], got {bounds!r}")
        low, high = (_finite_number(b, f"criterion {criterion_id} bounds") for b in bounds)
        if not high > low:
            raise DecisionError(f"criterion {criterion_id}: bounds must satisfy lo < hi")
        arm_weights, used_roles = _arm_weights(criterion["weights"], role_to_arm, criterion_id)
        result.role_to_arm.update(used_roles)

        table: dict[tuple[str, str, int], float] = {}
        evaluator_ids = set()
        for observation in observations:
            if observation.metric != metric or observation.arm not in arm_weights:
                continue
            key = (observation.arm, observation.item_id, observation.seed)
            if key in table:
                raise DecisionError(f"duplicate observation for arm {key[0]!r}, item "
                                    f"{key[1]!r}, seed {key[2]}, metric {metric!r}")
            if not low <= observation.value <= high:
                raise DecisionError(f"value {observation.value} of arm {key[0]!r} item {key[1]!r} "
                                    f"is outside the bounds [{low}, {high}]")
            if observation.seed not in seeds:
                raise DecisionError(f"observation with unscheduled seed {observation.seed}")
            table[key] = observation.value
            evaluator_ids.add(observation.evaluator_id)
        if len(evaluator_ids) > 1:
            raise DecisionError(f"criterion {criterion_id}: observations come from several "
                                f"evaluators {sorted(map(str, evaluator_ids))}")

        if item_ids is not None:
            items = list(item_ids)
        else:  # every item scored for this metric, by any arm
            items = sorted({o.item_id for o in observations if o.metric == metric})
        if not items:
            raise DecisionError(f"criterion {criterion_id}: no observations for metric {metric!r}")
        missing = [(arm, item, seed) for arm in arm_weights for item in items for seed in seeds
                   if (arm, item, seed) not in table]
        if missing:
            arm, item, seed = missing[0]
            raise DecisionError(f"criterion {criterion_id}: {len(missing)} missing observations "
                                f"(first: arm {arm!r}, item {item!r}, seed {seed}); "
                                "every arm, item and scheduled seed must be scored")
        extra = {key[1] for key in table} - set(items)
        if extra:
            raise DecisionError(f"criterion {criterion_id}: observations for items outside "
                                f"the evaluated list, e.g. {sorted(extra)[0]!r}")

        n = len(items)
        statistic_sum = 0.0
        for item in items:
            statistic = 0.0
            for arm, weight in arm_weights.items():
                value = sum(table[(arm, item, seed)] for seed in seeds) / len(seeds)
                statistic += weight * value
            statistic_sum += statistic
        effect = statistic_sum / n
        value_range = sum(abs(weight) for weight in arm_weights.values()) * (high - low)
        half_width = value_range * math.sqrt(math.log(1.0 / alpha_per_criterion) / (2.0 * n))
        lower, upper = effect - half_width, effect + half_width
        if lower > margin:
            status = "passes"
        elif upper < margin:
            status = "fails"
        else:
            status = "unsettled"

        per_seed_effects = {
            str(seed): sum(weight * table[(arm, item, seed)] for item in items for arm, weight in arm_weights.items()) / n
            for seed in seeds
        }
        per_arm_means = {}
        per_arm_seed_means = {}
        for arm in arm_weights:
            per_arm_means[arm] = sum(table[(arm, item, seed)] for item in items for seed in seeds) / (n * len(seeds))
            per_arm_seed_means[arm] = {
                str(seed): sum(table[(arm, item, seed)] for item in items) / n for seed in seeds
            }
        result.criteria.append(CriterionResult(
            id=criterion_id, metric=metric, weights=dict(criterion["weights"]),
            arm_weights=arm_weights, margin=margin, bounds=[low, high], n=n, effect=effect,
            range=value_range, alpha=alpha_per_criterion, half_width=half_width,
            lower=lower, upper=upper, per_arm_means=per_arm_means,
            per_arm_seed_means=per_arm_seed_means,
            evaluator_ids=sorted(map(str, evaluator_ids - {None})), status=status,
            per_seed_effects=per_seed_effects,
        ))
    return result


def direction_confidence_verdict(result: DecisionResult, limits: list[str] = ()) -> dict:
    """Direction+confidence vocabulary.

    verdict: ``supported`` iff every criterion passes, else ``refuted`` (ties, mixed
    criteria and straddling intervals included).  confidence: ``strong`` only when
    every criterion's interval settles its margin (passes or fails) and ``limits``
    (other things that limit the result, e.g. "grid-edge LR") is empty; else ``weak``,
    with every limit listed.  Two or more seeds can settle a margin (GEN-3: "every
    criterion's interval (or >= 2 seeds) settles its margin"): a criterion whose interval
    straddles is settled when every scheduled seed's own effect is below the margin, which
    agrees with its ``refuted`` verdict (seeds all above the margin cannot make a
    straddling interval pass, so that stays a limit).
    """
    limits = list(limits)
    for criterion in result.criteria:
        if criterion.status == "unsettled" and not settled_by_seeds(criterion):
            limits.append(f"criterion {criterion.id}: interval [{criterion.lower:.6g}, "
                          f"{criterion.upper:.6g}] straddles the margin {criterion.margin:g}")
    supported = bool(result.criteria) and all(c.status == "passes" for c in result.criteria)
    return {
        "verdict": "supported" if supported else "refuted",
        "confidence": "weak" if limits else "strong",
        "limits": limits,
    }


def settled_by_seeds(criterion: CriterionResult) -> bool:
    """Two or more scheduled seeds whose own effects all fall below the criterion's margin."""
    effects = list(criterion.per_seed_effects.values())
    return len(effects) >= 2 and all(effect < criterion.margin for effect in effects)


def three_way_verdict(result: DecisionResult, every_arm_ran: bool = True,
                      blocking_limits: list[str] = ()) -> dict:
    """Three-way vocabulary: verdict in supported | refuted | inconclusive + outcome_reason.

    - an arm did not run: inconclusive / incomplete_execution
    - a blocking limit (grid-edge LR, failed activation gate, pending re-evaluation ...):
      inconclusive / insufficient_evidence
    - every criterion settled: all pass -> supported, all fail -> refuted,
      otherwise inconclusive / mixed_criteria
    - some criterion unsettled: inconclusive / mixed_criteria when others both pass
      and fail, else inconclusive / insufficient_evidence
    (The decision rules have no tie band, so ``tie`` is never produced here.)
    """
    statuses = [criterion.status for criterion in result.criteria]
    if not every_arm_ran or not statuses:
        return {"verdict": "inconclusive", "outcome_reason": "incomplete_execution", "limits": list(blocking_limits)}
    if blocking_limits:
        return {"verdict": "inconclusive", "outcome_reason": "insufficient_evidence", "limits": list(blocking_limits)}
    if all(status == "passes" for status in statuses):
        return {"verdict": "supported", "outcome_reason": "supported", "limits": []}
    if all(status == "fails" for status in statuses):
        return {"verdict": "refuted", "outcome_reason": "refuted", "limits": []}
    if "passes" in statuses and "fails" in statuses:
        return {"verdict": "inconclusive", "outcome_reason": "mixed_criteria", "limits": []}
    return {"verdict": "inconclusive", "outcome_reason": "insufficient_evidence", "limits": []}


def decision_summary(decision_rule: dict, observations: list[Observation], vocabulary: str,
                     role_to_arm: dict | None = None, simultaneous: bool = False,
                     limits: list[str] = (), every_arm_ran: bool = True) -> dict:
    """Decision plus verdict, as plain JSON-ready data (used by the flow and the CLI).

    ``vocabulary`` is ``direction_confidence`` or ``three_way``.  ``limits`` are the
    things besides the intervals that limit the result (direction+confidence: they
    make confidence weak; three-way: they make the verdict inconclusive).
    """
    if decision_rule.get("method", "paired_hoeffding") != "paired_hoeffding":
        raise DecisionError(f"unsupported decision method {decision_rule.get('method')!r}")
    if decision_rule.get("alpha") is None:
        raise DecisionError("decision_rule has no alpha")
    result = paired_hoeffding(
        observations, decision_rule.get("criteria") or [], decision_rule["alpha"],
        role_to_arm=role_to_arm, simultaneous=simultaneous, seeds=decision_rule.get("seeds"),
    )
    summary = {"vocabulary": vocabulary, **result.as_dict()}
    if vocabulary == "direction_confidence":
        summary.update(direction_confidence_verdict(result, limits))
    elif vocabulary == "three_way":
        summary.update(three_way_verdict(result, every_arm_ran, limits))
    else:
        raise DecisionError(f"unknown verdict vocabulary {vocabulary!r}")
    return summary


def decision_record(summary: dict, observations_file_name: str, observations_sha256: str,
                    selection: dict | None = None) -> dict:
    """The RESULT ``decision`` object: the retained observations file by name and sha256
    (never a path or URL) plus the recorded computation (adjustment, role mapping,
    per-criterion bounds and per-arm means), from a ``decision_summary``; with adaptive
    selection, its frozen ``selection`` record (experiment.stats.selection)."""
    if "/" in observations_file_name or "\\" in observations_file_name:
        raise DecisionError("observations_file name must be a retained file name, not a path")
    if len(observations_sha256) != 64:
        raise DecisionError("observations sha256 must be 64 hex characters")
    keep = ("method", "alpha", "simultaneous", "adjustment", "role_to_arm", "seeds", "criteria")
    record = {
        "version": 1,
        "observations_file": {"name": observations_file_name, "sha256": observations_sha256},
        **{key: summary[key] for key in keep},
    }
    if selection is not None:
        record["selection"] = selection
    return record


def observation_from_row(row: dict, where: str = "row") -> Observation:
    """Validate one JSON row {item_id, arm, seed, metric, value[, evaluator_id]}."""
    if not isinstance(row, dict):
        raise DecisionError(f"{where}: expected a JSON object")
    missing = [key for key in ("item_id", "arm", "seed", "metric", "value") if key not in row]
    if missing:
        raise DecisionError(f"{where}: missing field(s) {', '.join(missing)}")
    for key in ("item_id", "arm", "metric"):
        if not isinstance(row[key], str) or not row[key]:
            raise DecisionError(f"{where}: {key} must be a non-empty string")
    seed = row["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise DecisionError(f"{where}: seed must be an integer")
    evaluator_id = row.get("evaluator_id")
    if evaluator_id is not None and not isinstance(evaluator_id, str):
        raise DecisionError(f"{where}: evaluator_id must be a string")
    return Observation(
        item_id=row["item_id"], arm=row["arm"], seed=seed, metric=row["metric"],
        value=_finite_number(row["value"], f"{where}: value"), evaluator_id=evaluator_id,
    )


def observations_jsonl_bytes(observations: list[Observation]) -> bytes:
    """UTF-8 JSONL, one sorted-key compact JSON object per line, in the given order."""
    lines = [json.dumps(o.as_row(), sort_keys=True, separators=(",", ":"), allow_nan=False)
             for o in observations]
    return "".join(line + "\n" for line in lines).encode("utf-8")


def write_observations_jsonl(path, observations: list[Observation]) -> str:
    """Write the observations file and return the sha256 of its bytes."""
    data = observations_jsonl_bytes(observations)
    Path(path).write_bytes(data)
    return bytes_sha256(data)


def read_observations_jsonl(path) -> list[Observation]:
    """Read and validate an observations JSONL file (blank lines are skipped)."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise DecisionError(f"{path}: not UTF-8 ({error})") from None
    observations = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise DecisionError(f"{path}:{number}: not valid JSON ({error.msg})") from None
        observations.append(observation_from_row(row, f"{path}:{number}"))
    if not observations:
        raise DecisionError(f"{path}: no observations")
    return observations


def bytes_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def best_lr_threshold(run_values: dict, run_arm: dict, run_lr: dict, criteria: list[dict],
                      select_metric: str, run_seed: dict | None = None) -> dict:
    """The ``best_lr_threshold`` method (TriMuon recorded revision; docs/contract-rules.md DEC-8).

    ``run_values``: {run name: {metric: value}} (one value per training run of an LR grid);
    ``run_arm`` / ``run_lr`` / ``run_seed``: each run's arm, learning rate and scheduled seed (default: one
    seed, 0). A grid point is an arm at one learning rate; its value of each metric is the mean over the
    scheduled seeds of its runs' values (every point must have run at every seed). Per arm, the point with
    the lowest ``select_metric`` is selected; an edge of the arm's grid sets ``grid_edge``. Each criterion's
    effect is ``sum_arm w_arm * value(selected point of arm)`` and is met when it is at least the margin
    (``comparison: at_least``, the default) or exceeds it. No interval: point estimates. With two or more
    seeds each criterion also has its effect at each seed alone (the selected points fixed), and is
    ``settled_by_seeds`` when every seed's effect is met, or missed, as the mean's is (the contract's
    ">= 2 seeds settle the margin", GEN-3). The verdict (direction vocabulary) is ``supported`` iff every
    criterion is met.
    """
    run_seed = run_seed or {}
    seeds = sorted({int(run_seed.get(run, 0)) for run in run_arm if run in run_values})
    per_arm = {arm: _best_lr_point(arm, run_values, run_arm, run_lr, run_seed, seeds, select_metric)
               for arm in sorted(set(run_arm.values()))}
    results = []
    for criterion in criteria:
        metric = criterion["metric"]
        problem = zero_range_problem(criterion["weights"])
        if problem is not None:
            raise DecisionError(f"criterion {criterion.get('id')}: {problem}")
        for arm in criterion["weights"]:
            if arm not in per_arm:
                raise DecisionError(f"criterion {criterion.get('id')}: no runs of arm {arm!r}")

        def effect_of(values_of) -> float:
            return sum(_finite_number(weight, "weight") * _finite_number(
                values_of(arm).get(metric), f"{metric} of {per_arm[arm]['selected_run']}")
                for arm, weight in criterion["weights"].items())

        margin = _finite_number(criterion["margin"], f"criterion {criterion.get('id')} margin")
        at_least = criterion.get("comparison", "at_least") == "at_least"

        def meets(effect: float) -> bool:
            return effect >= margin if at_least else effect > margin

        effect = effect_of(lambda arm: per_arm[arm]["values"])
        met = meets(effect)
        entry = {"id": criterion.get("id"), "metric": metric, "effect": effect, "margin": margin, "met": met}
        if len(seeds) > 1:
            per_seed = {str(seed): effect_of(lambda arm, seed=seed: per_arm[arm]["per_seed_values"][str(seed)])
                        for seed in seeds}
            entry["per_seed_effects"] = per_seed
            entry["settled_by_seeds"] = all(meets(value) == met for value in per_seed.values())
        results.append(entry)
    return {"method": "best_lr_threshold", "seeds": seeds, "per_arm": per_arm, "criteria": results,
            "grid_edge": any(entry["grid_edge"] for entry in per_arm.values()),
            "settled_by_seeds": len(seeds) > 1 and bool(results) and all(c["settled_by_seeds"] for c in results),
            "verdict": "supported" if results and all(c["met"] for c in results) else "refuted"}


def _best_lr_point(arm: str, run_values: dict, run_arm: dict, run_lr: dict, run_seed: dict, seeds: list[int],
                   select_metric: str) -> dict:
    """One arm of best_lr_threshold: its grid points (an LR at every scheduled seed), the one with the lowest mean
    `select_metric` selected, with its values (the seeds' means) and, at several seeds, each seed's own."""
    runs = [run for run, owner in run_arm.items() if owner == arm and run in run_values]
    if not runs:
        raise DecisionError(f"no values for any run of arm {arm!r}")
    points: dict = {}  # learning rate -> {seed: run}
    for run in runs:
        _finite_number(run_values[run].get(select_metric), f"{select_metric} of {run}")
        at_seed = points.setdefault(run_lr[run], {})
        seed = int(run_seed.get(run, 0))
        if seed in at_seed:
            raise DecisionError(f"arm {arm!r}: runs {at_seed[seed]!r} and {run!r} are the same LR at seed {seed}")
        at_seed[seed] = run
    for lr, at_seed in points.items():
        if sorted(at_seed) != seeds:
            raise DecisionError(f"arm {arm!r} at LR {lr:g}: runs at seeds {sorted(at_seed)}, not at every "
                                f"scheduled seed {seeds}")

    def mean(lr, metric, points=points):
        return sum(_finite_number(run_values[run].get(metric), f"{metric} of {run}")
                   for run in points[lr].values()) / len(points[lr])

    grid = sorted(points)
    best = min(grid, key=lambda lr: mean(lr, select_metric))
    selected = [points[best][seed] for seed in seeds]
    metrics = sorted({metric for run in selected for metric in run_values[run]})
    entry = {"selected_run": selected[0], "selected_lr": best, "lr_grid": grid,
             "grid_edge": len(grid) > 1 and best in (grid[0], grid[-1]),
             "values": {metric: mean(best, metric) for metric in metrics
                        if all(metric in run_values[run] for run in selected)}}
    if len(seeds) > 1:
        entry["selected_runs"] = selected
        entry["per_seed_values"] = {str(seed): dict(run_values[points[best][seed]]) for seed in seeds}
    return entry
