"""Activation gate (ACT-1, ACT-2), graded from the bare record: findings go to `problems`.

The exchange has no activation category, but a record whose full run went ahead on an activation
gate it did not pass (or whose posted values the pilot does not give) cannot be trusted. ACT-1:
when the plan applies the gate and arms were trained, `activation_calibration.values` holds every
check of the spec with a value inside its range (`experiment.stats.activation.check_range`, the
gate's own comparison). ACT-2: those values are what the last retained pilot log
(`activation-pilot-*.jsonl`, its step rows and held-out means) gives when recomputed with the
gate's own functions (`gs1_activation_values`; for the self-generated spec the checks the log
determines). ACT-3: every retained pilot log is what the pilot does (its steps, prompts in the arm's
training order, counts, and advantages recomputed with the run's own estimator).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from experiment.grading.common import (
    ABS_TOL, INVALID, UNVERIFIED, GradeContext, Issue, as_dict, as_list, close, equal_json, is_number, short,
)
from experiment.contract.generation import generation_settings
from experiment.contract.support import GROUP_MEAN_ADVANTAGE, KERNEL_ADVANTAGE
from experiment.grading.kernel_baseline import (BANDWIDTH, MIN_KERNEL_MASS, WINDOW_SIZE, KernelHistory,
                                                group_mean_advantages)
from experiment.data import DataError, gsm8k_item_ids, load_task_file, resolve_data_path, seeded_shuffle
from experiment.grading.registry import implements, rule
from experiment.stats.activation import PILOT_STEPS, check_range, fraction_nonzero, gs1_activation_values

PILOT_LOG_PREFIX = "activation-pilot-"
# the self-generated spec's checks the pilot log determines (the fractions with the generated tasks and the
# training data, where they can be read)
SELFGEN_FROM_LOG = ("selfgen_frac_groups_nonzero_reward_variance_pilot", "selfgen_mean_train_reward_pilot",
                    "treatment_fraction_batches_from_generated_set", "baseline_fraction_batches_from_gsm8k_train")


def _checks(ctx: GradeContext) -> list[dict[str, Any]]:
    if ctx.plan is None:
        return []
    try:
        gate = ctx.plan.gate("activation_gate")
    except KeyError:
        return []
    if gate.applicable is not True:
        return []
    return [as_dict(c) for c in as_list(as_dict(gate.details).get("checks")) if as_dict(c).get("metric")]


def _values(ctx: GradeContext) -> dict[str, Any] | None:
    values = as_dict(ctx.result.get("activation_calibration")).get("values")
    return values if isinstance(values, dict) else None


@rule("ACT-1", "record", "invalid", "every activation check measured and in range before full training")
def ACT_1(ctx: GradeContext) -> list[Issue]:
    checks = _checks(ctx)
    if not checks or not ctx.trained:
        return []
    values = _values(ctx)
    if values is None:
        return [Issue("ACT-1", INVALID, "arms were trained but activation_calibration.values is missing")]
    metrics = as_dict(ctx.result.get("metrics"))
    issues = [Issue("ACT-1", INVALID, f"{check['metric']} is in metrics; activation values belong only in "
                                      "activation_calibration") for check in checks if check["metric"] in metrics]
    for check in checks:
        value = values.get(check["metric"])
        if not is_number(value):
            issues.append(Issue("ACT-1", INVALID, f"{check['metric']}: no measured value, yet arms were trained"))
            continue
        outcome = check_range(check, float(value))
        if not outcome.passed:
            issues.append(Issue("ACT-1", INVALID, f"{outcome.reason}, yet arms were trained"))
    return issues


def _step(row: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(item_ids=as_list(row.get("item_ids")), rewards=as_list(row.get("rewards")),
                           advantages=as_list(row.get("advantages")), baseline_values=as_list(row.get("baseline_values")),
                           effective_neighbors=as_list(row.get("effective_neighbors")),
                           executed_group_size=row.get("executed_group_size"))


def _recomputed(ctx: GradeContext, rows: list[dict[str, Any]], metrics: set[str]) -> dict[str, float | None]:
    steps = [row for row in rows if "arm" in row and "rewards" in row]
    heldout = next((as_dict(row["heldout_mean_reward"]) for row in rows if "heldout_mean_reward" in row), {})
    if not steps:
        return {}
    treatment_arm = steps[0]["arm"]
    treatment = [_step(row) for row in steps if row["arm"] == treatment_arm]
    baseline = [_step(row) for row in steps if row["arm"] != treatment_arm]
    if "pilot_mean_reward" in metrics:
        return gs1_activation_values(treatment, baseline, heldout, treatment[0])
    values: dict[str, float | None] = {}
    groups, rewards = [], []
    for step in treatment:
        size = len(step.rewards) // len(step.item_ids) if step.item_ids else 0
        groups += [step.rewards[k * size:(k + 1) * size] for k in range(len(step.item_ids))] if size else []
        rewards += list(step.rewards)
    if groups:
        values[SELFGEN_FROM_LOG[0]] = sum(1 for g in groups if max(g) != min(g)) / len(groups)
    if rewards:
        values[SELFGEN_FROM_LOG[1]] = math.fsum(rewards) / len(rewards)
    baseline_ids = [str(i) for step in baseline for i in step.item_ids]
    for metric, ids, known in ((SELFGEN_FROM_LOG[2], [str(i) for step in treatment for i in step.item_ids],
                                _generated_order(ctx)), (SELFGEN_FROM_LOG[3], baseline_ids, _dataset_order(ctx))):
        if ids and known is not None:
            values[metric] = sum(i in set(known) for i in ids) / len(ids)
    return values


@rule("ACT-2", "record", "invalid|unverified", "only the pre-registered calibration; values recompute from the last pilot log")
def ACT_2(ctx: GradeContext) -> list[Issue]:
    checks = _checks(ctx)
    values = _values(ctx)
    if not checks or values is None:
        return []
    logs = [e.get("name") for e in ctx.evidence.entries if str(e.get("name", "")).startswith(PILOT_LOG_PREFIX)]
    if not logs:
        return [Issue("ACT-2", UNVERIFIED, "no pilot log (activation-pilot-*.jsonl) is retained, so the activation "
                                           "values cannot be recomputed")]
    rows = ctx.evidence.jsonl(logs[-1])
    if rows is None:
        return [Issue("ACT-2", UNVERIFIED, f"{logs[-1]}: {ctx.evidence.why(logs[-1]) or 'not JSONL'}")]
    metrics = {check["metric"] for check in checks}
    try:
        expected = _recomputed(ctx, rows, metrics)
    except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError) as err:
        return [Issue("ACT-2", INVALID, f"{logs[-1]} cannot be recomputed ({type(err).__name__}: {err})")]
    wrong = []
    for metric in sorted(metrics & set(expected)):
        mine, theirs = expected[metric], values.get(metric)
        same = (mine is None or (isinstance(mine, float) and not math.isfinite(mine))) and theirs is None
        if not same and not (is_number(mine) and is_number(theirs)
                             and math.isclose(float(mine), float(theirs), rel_tol=1e-9, abs_tol=1e-12)):
            wrong.append(f"{metric} {short(theirs)} (recomputed {short(mine)})")
    if not expected:
        return [Issue("ACT-2", UNVERIFIED, f"{logs[-1]} holds no pilot steps to recompute the values from")]
    return [Issue("ACT-2", INVALID, f"activation values do not recompute from {logs[-1]}: {'; '.join(wrong)}")] if wrong else []



# ---- ACT-3: every retained pilot log is what the pilot's own arithmetic gives ----

KERNEL_KEYS = ("baseline_values", "effective_neighbors", "prompt_features", "kernel_fallbacks")
_TRAINING_ORDERS: dict[str, list[str]] = {}  # data file -> item ids of its seed-0 training order (read once)


@dataclass(frozen=True)
class _ArmLoop:
    """What the pilot's arithmetic needs of a trained arm (experiment.rl.loop.RLArmSettings' fields; the
    grader loads no SDK): from the plan, the spec's `arms[].advantage` and the estimator's defaults."""

    name: str
    advantage: str
    group_size: int
    groups_per_batch: int
    kernel_bandwidth: float
    kernel_window: int = WINDOW_SIZE
    kernel_min_mass: float = MIN_KERNEL_MASS


def _arm_settings(ctx: GradeContext, bandwidth: float | None) -> dict[str, _ArmLoop]:
    raw = {str(as_dict(a).get("name")): as_dict(a) for a in as_list((ctx.spec or {}).get("arms"))}
    return {arm.name: _ArmLoop(arm.name, str(raw.get(arm.name, {}).get("advantage") or GROUP_MEAN_ADVANTAGE),
                               int(arm.group_size), int(arm.groups_per_batch),
                               bandwidth if bandwidth is not None else BANDWIDTH)
            for arm in ctx.plan.trained_arms if arm.group_size and arm.groups_per_batch}


def _bandwidth(name: str) -> float | None:
    try:
        return float(name[len(PILOT_LOG_PREFIX) + 2:].removesuffix(".jsonl"))
    except ValueError:
        return None  # e.g. activation-pilot-bwselfgen.jsonl: no kernel


def _generated_order(ctx: GradeContext) -> list[str] | None:
    """The generated training tasks' ids in the order an arm on generated data trains on them (the first
    n_accept accepted candidates of the audit's dataset file, in a seed-0 shuffle), None when not retained."""
    rows = ctx.evidence.jsonl(as_dict(ctx.result.get("generation_audit")).get("dataset_file"))
    if rows is None or ctx.spec_model is None:
        return None
    try:
        n_accept = generation_settings(ctx.spec_model).n_accept
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    accepted = [str(row.get("item_id")) for row in rows if row.get("disposition") == "accepted"][:n_accept]
    return seeded_shuffle(accepted, seed=0)


def _dataset_order(ctx: GradeContext) -> list[str] | None:
    """The spec's training items' ids in the order an arm on the spec's dataset trains on them
    (experiment.rl.recipe.arm_training_order: the file's seed-0 shuffle, first dataset.n_examples), read
    from the project's data directories; None where the data cannot be read here (the order is then not
    checked)."""
    dataset = as_dict((ctx.spec or {}).get("dataset"))
    key = json.dumps([dataset.get("path"), dataset.get("hf_path")], default=str)
    if key not in _TRAINING_ORDERS:
        try:
            ids = ([item.id for item in load_task_file(resolve_data_path(dataset["path"]))] if dataset.get("path")
                   else gsm8k_item_ids("train"))
        except (DataError, OSError, ValueError, KeyError, TypeError):
            ids = []
        _TRAINING_ORDERS[key] = seeded_shuffle(ids, seed=0)
    order = _TRAINING_ORDERS[key]
    n = dataset.get("n_examples")
    return (order[: int(n)] if isinstance(n, int) else order) or None


def _expected_advantages(settings: _ArmLoop, rows: list[dict[str, Any]]) -> list[dict[str, list[float]]]:
    """Per step of one arm: the advantages (and for the kernel baseline its baselines and effective
    neighbours, and the fallback count) the estimator's definition gives from the logged rewards and prompt
    features (experiment.grading.kernel_baseline, not the loop's code), the kernel window carried from step to
    step as the loop carries it."""
    expected = []
    window = KernelHistory()
    for row in rows:
        rewards, ids = [float(r) for r in row["rewards"]], row["item_ids"]
        size = len(rewards) // len(ids)
        groups = [rewards[k * size:(k + 1) * size] for k in range(len(ids))]
        if settings.advantage != KERNEL_ADVANTAGE:
            expected.append({"advantages": group_mean_advantages(groups)})
            continue
        features = [as_list(f) for f in row["prompt_features"]]
        if len(features) != len(ids) or any(len(f) != 2 for f in features):
            raise ValueError("prompt_features are not one (length, mean logprob) pair per prompt")
        lengths = [float(f[0]) for f in features for _ in range(size)]
        logprobs = [float(f[1]) for f in features for _ in range(size)]
        expected.append(window.kernel_step(rewards, lengths, logprobs, bandwidth=settings.kernel_bandwidth,
                                           window_size=settings.kernel_window, min_kernel_mass=settings.kernel_min_mass))
    return expected


def _same_numbers(mine: Any, theirs: Any) -> bool:
    if isinstance(mine, list):
        return isinstance(theirs, list) and len(mine) == len(theirs) and all(
            _same_numbers(a, b) for a, b in zip(mine, theirs))
    return close(mine, theirs, abs_tol=ABS_TOL)


def _step_problems(row: dict[str, Any], settings: _ArmLoop, order: list[str] | None) -> list[str]:
    """One pilot step against its arm: distinct prompts in the arm's training order at this step, the plan's
    group size of rewards each, and the counts and means its rewards and advantages give."""
    ids, rewards, advantages = as_list(row.get("item_ids")), as_list(row.get("rewards")), as_list(row.get("advantages"))
    if not ids or len(set(map(str, ids))) != len(ids) or len(ids) != settings.groups_per_batch:
        return [f"item_ids are not {settings.groups_per_batch} distinct prompts"]
    if not rewards or not all(is_number(r) for r in rewards) or len(rewards) != len(ids) * settings.group_size:
        return [f"rewards are not {settings.group_size} numbers per prompt"]
    problems = []
    if not (equal_json(row.get("executed_group_size"), len(rewards) / len(ids))
            and equal_json(row.get("n_rollouts"), len(rewards))):
        problems.append("executed_group_size or n_rollouts is not what its rewards give")
    if not _same_numbers(row.get("mean_reward"), math.fsum(map(float, rewards)) / len(rewards)):
        problems.append("mean_reward is not the mean of its rewards")
    if len(advantages) != len(rewards) or not _same_numbers(row.get("frac_nonzero_advantage"),
                                                              fraction_nonzero(advantages)):
        problems.append("frac_nonzero_advantage is not what its advantages give")
    step = row["step"]
    if order and list(map(str, ids)) != order[step * len(ids):(step + 1) * len(ids)]:
        problems.append("item_ids are not the arm's training order at this step")
    return problems


def _advantage_problems(arm: str, settings: _ArmLoop, rows: list[dict[str, Any]]) -> list[str]:
    """An arm's pilot steps whose advantages (kernel arm: baselines, neighbours, fallbacks) do not recompute."""
    try:
        expected = _expected_advantages(settings, rows)
    except (TypeError, ValueError, IndexError) as err:
        return [f"{arm}: the advantages cannot be recomputed ({type(err).__name__}: {short(str(err), 80)})"]
    kernel = settings.advantage == KERNEL_ADVANTAGE
    problems = []
    for row, wants in zip(rows, expected):
        wrong = [key for key, value in wants.items() if not (
            equal_json(row.get(key), value) if key == "kernel_fallbacks" else _same_numbers(value, row.get(key)))]
        if not kernel and not equal_json([row.get(k) for k in KERNEL_KEYS], [[], [], [], 0]):
            wrong.append("kernel diagnostics of a group-mean arm (none: empty lists and no fallbacks)")
        if wrong:
            problems.append(f"{arm} step {row['step']}: {', '.join(wrong)} do not recompute from its rewards"
                            + (" and prompt features" if kernel else ""))
    return problems


def _log_problems(ctx: GradeContext, name: str, rows: list[dict[str, Any]]) -> list[str]:
    roles = {role: entry.get("arm") for role, entry in ctx.plan.role_to_arm.items()}
    treatment, baseline = roles.get("treatment"), roles.get("baseline")
    settings = _arm_settings(ctx, _bandwidth(name))
    if treatment not in settings or baseline not in settings:
        return []
    steps, tail = rows[:-1], rows[-1:]
    problems = []
    if not (tail and set(tail[0]) == {"heldout_mean_reward"} and isinstance(tail[0]["heldout_mean_reward"], dict)):
        problems.append("its last row is not the held-out means ({\"heldout_mean_reward\": {...}})")
    shape = [(row.get("arm"), row.get("step")) for row in steps]
    wanted = [(treatment, s) for s in range(PILOT_STEPS)] + [(baseline, 0)]
    if shape != wanted:
        return problems + [f"its steps are {shape}, the pilot runs {wanted} (arm, step)"]
    orders = {arm: (_generated_order(ctx) if _trains_on_generated(ctx, arm)
                    else _dataset_order(ctx)) for arm in (treatment, baseline)}
    for arm in (treatment, baseline):
        mine = [row for row in steps if row["arm"] == arm]
        arm_settings = settings[arm]
        for row in mine:
            problems += [f"{arm} step {row['step']}: {problem}" for problem in _step_problems(row, arm_settings, orders[arm])]
        if not problems:
            problems += _advantage_problems(arm, arm_settings, mine)
    heldout = as_dict(tail[0].get("heldout_mean_reward")) if tail else {}
    first = [str(i) for i in as_list(steps[0].get("item_ids"))] if steps else []
    if heldout and (sorted(heldout) != sorted(first) or not all(is_number(v) for v in heldout.values())):
        problems.append("the held-out means are not one number per prompt of the treatment's first step")
    return problems


def _trains_on_generated(ctx: GradeContext, arm: str) -> bool:
    try:
        return ctx.spec_model.data_source(arm) == "generated_tasks"  # an arm on the audited self-generated tasks
    except (KeyError, TypeError, ValueError):
        return False


@implements("ACT-2")
def ACT_2_calibration(ctx: GradeContext) -> list[Issue]:
    """ACT-2, the calibration *(project reading)*: a pilot log before the last is a candidate the calibration
    tried and rejected, so its recomputed values fail some check (else the first candidate would have run)."""
    checks, values = _checks(ctx), _values(ctx)
    if not checks or values is None:
        return []
    logs = [e.get("name") for e in ctx.evidence.entries if str(e.get("name", "")).startswith(PILOT_LOG_PREFIX)]
    metrics = {check["metric"] for check in checks}
    issues = []
    for name in logs[:-1]:
        rows = ctx.evidence.jsonl(name)
        try:
            recomputed = _recomputed(ctx, rows, metrics) if rows is not None else {}
        except (TypeError, ValueError, KeyError, IndexError, ZeroDivisionError):
            continue  # ACT-3 says why the log does not recompute
        if recomputed and all(check_range(check, recomputed.get(check["metric"])).passed for check in checks):
            issues.append(Issue("ACT-2", INVALID, f"{name}: a rejected calibration candidate whose recomputed values "
                                                  "pass every check"))
    return issues


@rule("ACT-3", "record", "invalid", "every retained pilot log is what the pilot does")
def ACT_3(ctx: GradeContext) -> list[Issue]:
    """*(project reading)* Every retained pilot log holds the pilot's steps as the gate runs them (the
    treatment's PILOT_STEPS steps, then one baseline step, then the held-out means), each step on its arm's
    training order, its counts and means what its rewards give, and its advantages (GS1: baselines,
    effective neighbours and fallbacks too) what the loop's own estimator gives from its rewards."""
    if not _checks(ctx) or ctx.spec_model is None:
        return []
    issues = []
    for name in [e.get("name") for e in ctx.evidence.entries if str(e.get("name", "")).startswith(PILOT_LOG_PREFIX)]:
        rows = ctx.evidence.jsonl(name)
        if rows is None:
            continue  # ACT-2 says so for the log it reads
        issues += [Issue("ACT-3", INVALID, f"{name}: {problem}") for problem in _log_problems(ctx, name, rows)]
    return issues


CHECKS = [ACT_1, ACT_2, ACT_2_calibration, ACT_3]
