"""TRACE-*: the record's own leaves against the traces that produced them (issue 45 item 6).

A record restates what its run did: per-arm training numbers, final checkpoints, restores, the batches
each run consumed, where every arm ran, the re-solver's code, its own grade. Each such leaf is compared
here with the evidence it was made from, never with another copy of itself:

- the training log: sft-steps.jsonl (retained in a bare record) and, in a run directory, the
  `training_step`, `checkpoint`, `service_routing` and `gate` events of events.jsonl;
- the plan built from the spec (steps, learning rates, grids, where each arm is served);
- the restoration evidence (which client loaded which state, when) and the retained pipeline code;
- a fresh grade of the record.

One implementation serves the bare record and the run directory: the checks read `ctx.events` where the
grader was given a run directory, and only the record's own evidence otherwise. Findings are
record-level (`Grade.problems`), invalid: a leaf that says what its trace does not.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from datetime import datetime, timezone
from typing import Any

from experiment.grading.common import (
    INVALID, UNVERIFIED, GradeContext, Issue, as_dict, as_list, close, equal_json, is_integer, is_number, short, run_label, run_seed,
)
from experiment.grading.registry import implements, rule

SFT_STEPS = "sft-steps.jsonl"
SERVICE_ROUTING = "service-routing.json"
PIPELINE_CODE = "pipeline-code.json"
ADAPTATION_PAIR = "lr_grid_comparison"  # the one pair of an SFT LR-grid comparison (experiment.sft.steps.arm_training)
_BATCH_ID = re.compile(r"^step(\d{4})-[0-9a-f]+$")


def _succeeded(ctx: GradeContext) -> bool:
    return ctx.result.get("status") == "succeeded"


def _event_rows(ctx: GradeContext, event: str) -> list[dict[str, Any]] | None:
    """The run directory's events of one kind (None for a bare record, where there are none to read)."""
    if ctx.run_dir is None or ctx.events is None:
        return None
    return [e for e in ctx.events if isinstance(e, dict) and e.get("event") == event]


def _by_step(rows: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    """owner -> its rows in step order, the last row of a step kept (a redone step logs again)."""
    steps: dict[str, dict[int, dict[str, Any]]] = {}
    for row in rows:
        owner, step = row.get(key), row.get("step")
        if isinstance(owner, str) and is_integer(step):
            steps.setdefault(owner, {})[step] = row
    return {owner: [found[s] for s in sorted(found)] for owner, found in steps.items()}


def _sft_rows(ctx: GradeContext) -> dict[str, list[dict[str, Any]]] | None:
    rows = ctx.evidence.jsonl(SFT_STEPS) if ctx.evidence.usable(SFT_STEPS) else None
    return None if rows is None else _by_step(rows, "run")


def _same(a: Any, b: Any) -> bool:
    """Two record numbers are the same measurement (float noise aside); anything else must be equal JSON."""
    if is_number(a) and is_number(b):
        return close(a, b)
    return equal_json(a, b)


def _compare(where: str, metrics: dict[str, Any], expected: dict[str, Any], source: str) -> list[str]:
    return [f"{where}.{key} {short(metrics[key])} is not {short(value)} ({source})"
            for key, value in expected.items() if key in metrics and value is not None and not _same(metrics[key], value)]


# ---------------------------------------------------------------------------- TRACE-1: training metrics


def _rl_expected(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rewards = [row.get("mean_reward") for row in rows]
    optim = [row.get("optim_seconds") for row in rows]
    if not rows or not all(is_number(v) for v in rewards + optim):
        return {}
    return {"first_step_mean_reward": rewards[0], "final_step_mean_reward": rewards[-1],
            "mean_train_reward": statistics.fmean(rewards), "median_optimizer_step_seconds": statistics.median(optim)}


def _sft_expected(rows: list[dict[str, Any]]) -> dict[str, Any]:
    optim = [row.get("optim_seconds") for row in rows]
    nll = [row.get("train_nll_token_mean") for row in rows]
    if not rows or not all(is_number(v) for v in optim + nll):
        return {}
    return {"median_optim_step_seconds": statistics.median(optim), "mean_optim_step_seconds": statistics.fmean(optim),
            "first_step_train_nll_token_mean": nll[0], "last_step_train_nll_token_mean": nll[-1]}


def _sft_log_order(ctx: GradeContext) -> list[str]:
    """*(issue 45)* sft-steps.jsonl is a log, written as the steps ran: each run's rows come in step order within an
    attempt, and an attempt's rows after the earlier attempt's."""
    last: dict[str, tuple[Any, Any]] = {}
    for row in ctx.evidence.jsonl(SFT_STEPS) or []:
        key = (row.get("attempt") or 1, row.get("step"))
        if not all(is_integer(k) for k in key):
            continue
        run = str(row.get("run"))
        if run in last and key < last[run]:
            return [f"{SFT_STEPS}: {short(run, 30)}'s rows are not in the order its steps ran (attempt {key[0]} step "
                    f"{key[1]} after attempt {last[run][0]} step {last[run][1]})"]
        last[run] = key
    return []


def _sft_row_problems(rows: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Each step's training NLL is its loss over its tokens (experiment.sft.loop: loss_sum / n_tokens)."""
    problems = []
    for run, steps in rows.items():
        for row in steps:
            loss, tokens, nll = row.get("loss_sum"), row.get("n_tokens"), row.get("train_nll_token_mean")
            if "train_nll_token_mean" in row and not (is_number(loss) and is_integer(tokens) and tokens > 0):
                problems.append(f"{SFT_STEPS}: {run} step {row.get('step')}: a train NLL without the loss_sum and "
                                "n_tokens it is computed from")
            elif is_number(loss) and is_integer(tokens) and tokens > 0 and not close(nll, loss / tokens):
                problems.append(f"{SFT_STEPS}: {run} step {row.get('step')}: train_nll_token_mean {short(nll)} is not "
                                f"loss_sum / n_tokens ({loss / tokens:.12g})")
    return problems


def _sft_log_against_events(ctx: GradeContext, rows: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Run directory: every step row of sft-steps.jsonl is the one its training_step event logged."""
    events = _event_rows(ctx, "training_step")
    if events is None:
        return []
    logged = _by_step([e for e in events if "run" in e], "run")
    problems = []
    for run in sorted(set(rows) | set(logged)):
        mine, theirs = rows.get(run, []), logged.get(run, [])
        if len(mine) != len(theirs):
            problems.append(f"{SFT_STEPS}: {run} has {len(mine)} step rows, events.jsonl logged {len(theirs)} steps")
            continue
        for row, event in zip(mine, theirs):
            wrong = sorted(k for k in row if k in event and k not in ("ts", "event") and not _same(row[k], event[k]))
            if wrong:
                problems.append(f"{SFT_STEPS}: {run} step {row.get('step')}: {', '.join(wrong)} differ from its "
                                "training_step event")
    return problems


@rule("TRACE-1", "record", "invalid", "per-arm training metrics are the plan's and recompute from the training log")
def TRACE_1(ctx: GradeContext) -> list[Issue]:
    """Per-arm (per-run) training numbers are the plan's and restate the training log."""
    if ctx.plan is None:
        return []
    arms = as_dict(as_dict(ctx.result.get("metrics")).get("arms"))
    planned_arms = {arm.name: arm for arm in ctx.plan.trained_arms}
    runs_of: dict[str, list[Any]] = {}
    for run in ctx.plan.training_runs:
        runs_of.setdefault(run.arm, []).append(run)
    events = _event_rows(ctx, "training_step")
    rl_log = _by_step([e for e in events or [] if "arm" in e and "run" not in e], "arm") if events is not None else None
    sft = _sft_rows(ctx)
    problems: list[str] = []
    if sft is not None:
        problems += _sft_row_problems(sft) + _sft_log_against_events(ctx, sft) + _sft_log_order(ctx)
    completed = set(as_list(ctx.result.get("completed_arms")))
    for name, arm in planned_arms.items():
        metrics = as_dict(arms.get(name))
        runs = as_dict(metrics.get("runs"))
        if runs or any(run.lr is not None and run.name != name for run in runs_of.get(name, [])):
            problems += _sft_arm(ctx, name, metrics, runs_of.get(name, []), sft, name in completed)
            continue
        if "seeds" in metrics:  # several seeds: each seed's numbers under the arm (steps and LR per seed)
            entries = [(f"metrics.arms.{name}.seeds.{s}", as_dict(m), None) for s, m in as_dict(metrics["seeds"]).items()]
        else:
            entries = [(f"metrics.arms.{name}", metrics, None if rl_log is None else rl_log.get(name, []))]
        for where, entry, rows in entries:
            if not entry:
                continue
            expected = {"learning_rate": arm.lr}
            if _succeeded(ctx) and name in completed:
                expected["steps_completed"] = arm.steps
            problems += _compare(where, entry, expected, "the plan")
            if "steps_completed" in entry and not is_integer(entry["steps_completed"]):
                problems.append(f"{where}.steps_completed {short(entry['steps_completed'])} is no step count")
            if rows is not None:
                problems += _rl_log_problems(where, entry, rows)
            problems += _bandwidth_problems(ctx, where, entry)
    return [Issue("TRACE-1", INVALID, p) for p in problems]


def _rl_log_problems(where: str, entry: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """Run directory: the arm's numbers recompute from its training_step events, one per step."""
    problems = []
    if "steps_completed" in entry and len(rows) != entry["steps_completed"]:
        problems.append(f"{where}.steps_completed {short(entry['steps_completed'])}, but events.jsonl logged "
                        f"{len(rows)} training steps")
    if [row.get("step") for row in rows] != list(range(len(rows))):
        problems.append(f"{where}: the training_step events are not steps 0..{len(rows) - 1}")
    return problems + _compare(where, entry, _rl_expected(rows), "recomputed from the training_step events")


def _bandwidth_problems(ctx: GradeContext, where: str, entry: dict[str, Any]) -> list[str]:
    """A kernel arm's bandwidth is the one the activation gate settled on: that of the last retained pilot log
    (activation-pilot-bw<bandwidth>.jsonl), whose values ACT-2 recomputes."""
    if "kernel_bandwidth" not in entry:
        return []
    logs = [str(e.get("name")) for e in ctx.evidence.entries if str(e.get("name", "")).startswith("activation-pilot-bw")]
    try:
        chosen = float(logs[-1].removeprefix("activation-pilot-bw").removesuffix(".jsonl")) if logs else None
    except ValueError:
        chosen = None
    if chosen is None:
        return [f"{where}.kernel_bandwidth {short(entry['kernel_bandwidth'])}: no activation pilot log names a bandwidth"]
    return _compare(where, entry, {"kernel_bandwidth": chosen}, f"the bandwidth of {logs[-1]}")


def _sft_arm(ctx: GradeContext, name: str, metrics: dict[str, Any], planned: list[Any],
             sft: dict[str, list[dict[str, Any]]] | None, completed: bool) -> list[str]:
    """An arm of an LR grid: each run's numbers restate sft-steps.jsonl; the arm's grid is the plan's."""
    problems = []
    runs = as_dict(metrics.get("runs"))
    grid = sorted({float(run.lr) for run in planned if run.lr is not None})  # each LR once, whatever the seeds
    where = f"metrics.arms.{name}"
    if "lr_grid" in metrics and not (isinstance(metrics["lr_grid"], list) and all(map(is_number, metrics["lr_grid"]))
                                     and equal_json(list(map(float, metrics["lr_grid"])), grid)):
        problems.append(f"{where}.lr_grid {short(metrics['lr_grid'])} is not the plan's grid {grid} (in its order)")
    if "runs_completed" in metrics and not (completed and equal_json(metrics["runs_completed"], len(planned))):
        problems.append(f"{where}.runs_completed {short(metrics['runs_completed'])} is not the {len(planned)} runs "
                        "the plan trains")
    family = _requested_family(ctx, name)
    for run in planned:
        label = run_label(run)
        entry = as_dict(runs.get(label))
        if not entry:
            continue
        at = f"{where}.runs.{label}"
        expected: dict[str, Any] = {"learning_rate": run.lr, "optimizer_family": family, "seed": run.seed}
        if _succeeded(ctx):
            expected["steps_completed"] = run.steps
        problems += _compare(at, entry, expected, "the plan")
        rows = None if sft is None else sft.get(run.name, [])
        if rows is None:
            continue
        if "steps_completed" in entry and len(rows) != entry["steps_completed"]:
            problems.append(f"{at}.steps_completed {short(entry['steps_completed'])}, but {SFT_STEPS} holds "
                            f"{len(rows)} steps of {run.name}")
        problems += _compare(at, entry, _sft_expected(rows), f"recomputed from {SFT_STEPS}")
        problems += _compare(at, entry, _heldout(ctx, name, label), "loss_eval")
    medians = [_sft_expected(sft.get(run.name, [])).get("median_optim_step_seconds") for run in planned] if sft else []
    if medians and all(is_number(m) for m in medians):
        problems += _compare(where, metrics, {"median_optim_step_seconds_all_runs": statistics.median(medians)},
                             f"the median of its runs' medians, recomputed from {SFT_STEPS}")
    return problems


def _heldout(ctx: GradeContext, arm: str, label: str) -> dict[str, Any]:
    arms = as_dict(as_dict(ctx.result.get("loss_eval")).get("arms"))
    entry = as_dict(as_dict(as_dict(arms.get(arm)).get("runs")).get(label))
    return {"heldout_nll_token_mean": entry.get("token_mean"), "heldout_nll_example_mean": entry.get("example_mean"),
            "heldout_n_tokens": entry.get("n_tokens")} if entry else {}


def _requested_family(ctx: GradeContext, arm: str) -> str | None:
    """The optimizer family the arm's runs were created with, as the restoration evidence's creation check
    requested it (REST-5 holds that to the spec)."""
    entry = as_dict(as_dict(as_dict(ctx.result.get("initialization_provenance")).get("arms")).get(arm))
    checks = as_list(entry.get("optimizer_checks"))
    family = as_dict(as_dict(checks[0]).get("requested")).get("family") if checks else None
    return family if isinstance(family, str) else None


# ---------------------------------------------------------------------------- TRACE-2: final checkpoints


def _slug(name: str) -> str:
    return name.replace("@lr=", "-lr")


def _training_client(ctx: GradeContext, owner: str, sft: dict[str, list[dict[str, Any]]] | None) -> str | None:
    """The client that trained an arm (or run): the one its last restore created, or the model_id its SFT
    step rows name."""
    if sft is not None and sft.get(owner):
        model_ids = {row.get("model_id") for row in sft[owner]}
        if len(model_ids) == 1 and isinstance(next(iter(model_ids)), str):
            return next(iter(model_ids))
    arms = as_dict(as_dict(ctx.result.get("initialization_provenance")).get("arms"))
    arm, _, lr = owner.partition("@lr=")
    entry = as_dict(arms.get(arm))
    if lr:
        entry = as_dict(as_dict(entry.get("runs")).get(f"{float(lr):g}")) if _is_float(lr) else {}
    restores = as_list(entry.get("restores"))
    client = as_dict(restores[-1]).get("client") if restores else None
    return client if isinstance(client, str) else None


def _replica_label(ctx: GradeContext, owner: str, seed: Any) -> str:
    """The name an arm trains under at a scheduled seed (the plan's replica label: the arm's own name at the
    first seed, `<arm>-seed<s>` after it), which names its client's final save and its provenance entry."""
    for replica in getattr(ctx.plan, "replicas", None) or []:
        if replica.arm == owner and is_integer(seed) and replica.seed == seed:
            return replica.label
    return owner


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@rule("TRACE-2", "record", "invalid", "one final checkpoint per trained arm or run, saved by its training client, as logged")
def TRACE_2(ctx: GradeContext) -> list[Issue]:
    """Each final checkpoint was saved by its arm's (run's) training client as `<name>-final`; a succeeded run
    lists one per trained arm or run; in a run directory, exactly the checkpoints the events logged."""
    if ctx.plan is None:
        return []
    checkpoints = [as_dict(c) for c in as_list(as_dict(ctx.result.get("evidence")).get("checkpoints"))]
    owners = [run.name for run in ctx.plan.training_runs] if ctx.plan.training_runs else \
        [arm.name for arm in ctx.plan.trained_arms]
    sft = _sft_rows(ctx)
    problems = []
    listed: dict[str, list[dict[str, Any]]] = {}
    for checkpoint in checkpoints:
        listed.setdefault(str(checkpoint.get("arm")), []).append(checkpoint)
    seeds = list(getattr(ctx.plan, "seeds", None) or [0])
    if _succeeded(ctx) and ctx.trained:
        for owner in owners:
            found = listed.get(owner, [])
            wanted = len(seeds) if len(seeds) > 1 and found and all("seed" in c for c in found) else 1
            if len(found) != wanted:
                problems.append(f"evidence.checkpoints lists {len(found)} final checkpoints of {owner}, not {wanted}")
    for owner, found in listed.items():
        for checkpoint in found:
            uri, label = checkpoint.get("uri"), _replica_label(ctx, owner, checkpoint.get("seed"))
            if not isinstance(uri, str):
                continue
            client = _training_client(ctx, label, sft)
            if not uri.endswith(f"/{_slug(label)}-final"):
                problems.append(f"checkpoint {short(uri)} of {label} is not named {_slug(label)}-final")
            if client is not None and not uri.startswith(f"tinker://{client}/"):
                problems.append(f"checkpoint {short(uri)} of {label} was not saved by its training client {short(client)}")
    logged = _event_rows(ctx, "checkpoint")
    if logged is not None:
        mine = sorted(json.dumps(c, sort_keys=True) for c in checkpoints)
        theirs = sorted(json.dumps({k: v for k, v in e.items() if k not in ("ts", "event")}, sort_keys=True)
                        for e in logged)
        if mine != theirs:
            problems.append("evidence.checkpoints are not the checkpoints events.jsonl logged "
                            f"({len(mine)} listed, {len(theirs)} logged, {len(set(mine) ^ set(theirs))} differ)")
    return [Issue("TRACE-2", INVALID, p) for p in problems]


# ---------------------------------------------------------------------------- TRACE-3: restores


def _time(text: Any) -> datetime | None:
    """An ISO time (one without a zone is UTC, as the run writes its times), None where the text is none."""
    try:
        at = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=timezone.utc)


@rule("TRACE-3", "record", "invalid", "restores in order and in time; an LR-grid arm restates its runs' restores")
def TRACE_3(ctx: GradeContext) -> list[Issue]:
    """Restores in order and in time: an entry's restore times never go back (an LR-grid arm's, run by run: it
    restates its runs' restores in plan order, and a run restored mid-run, checkpoint_restore, is restored after the
    next run was created; its runs' first restores, their creations, in plan order); an arm trained as an LR grid restates its runs' restores in plan order (restore_count
    their sum); in a run directory every restore lies within the run, a creation restore before the arm's (last)
    first training step, and the restoration gate's initialization checkpoint and initial outputs are the record's."""
    arms = as_dict(as_dict(ctx.result.get("initialization_provenance")).get("arms"))
    problems: list[str] = []
    for arm, entry in arms.items():
        entry = as_dict(entry)
        entries = [(f"arm {arm}", entry)] + [(f"arm {arm} run {label}", as_dict(run))
                                             for label, run in as_dict(entry.get("runs")).items()]
        for where, own in entries:
            clients: dict[Any, list[Any]] = {}  # an LR-grid arm restates its runs' restores run by run (plan order)
            for restore in as_list(own.get("restores")):
                key = as_dict(restore).get("run") if own is entry and len(entries) > 1 else None
                clients.setdefault(key if isinstance(key, str) else None, []).append(_time(as_dict(restore).get("at")))
            # the runs are started in plan order: their first restores (each run's creation) never go back either
            firsts = [times[0] for key, times in clients.items() if key is not None] if len(clients) > 1 else []
            for times in [*clients.values(), firsts]:
                known = [t for t in times if t is not None]
                if any(later < earlier for earlier, later in zip(known, known[1:])):
                    problems.append(f"{where}: restores are not in the order they happened (a later restore is earlier)")
                    break
        runs = as_dict(entry.get("runs"))
        if runs:
            problems += _grid_restores(ctx, arm, entry, runs)
    problems += _restores_in_run(ctx, arms)
    return [Issue("TRACE-3", INVALID, p) for p in problems]


def _grid_restores(ctx: GradeContext, arm: str, entry: dict[str, Any], runs: dict[str, Any]) -> list[str]:
    names = {run_label(run): run.name for run in (ctx.plan.training_runs if ctx.plan else []) if run.arm == arm and run.lr}
    labels = [label for label in names if label in runs] + [label for label in runs if label not in names]
    expected = []
    for label in labels:
        for restore in as_list(as_dict(runs[label]).get("restores")):
            expected.append({**as_dict(restore), "run": names.get(label, f"{arm}@lr={label}")})
    expected = [{**restore, "restore": number} for number, restore in enumerate(expected, 1)]
    problems = []
    if not equal_json(as_list(entry.get("restores")), expected):
        problems.append(f"arm {arm}: its restores are not its runs' restores in plan order")
    counts = [as_dict(runs[label]).get("restore_count") for label in labels]
    if all(is_integer(c) for c in counts) and not equal_json(entry.get("restore_count"), sum(counts)):
        problems.append(f"arm {arm}: restore_count {short(entry.get('restore_count'))} is not the sum of its runs' "
                        f"({sum(counts)})")
    return problems


def _restores_in_run(ctx: GradeContext, arms: dict[str, Any]) -> list[str]:
    if ctx.run_dir is None or not ctx.events:
        return []
    stamps = [_time(e.get("ts")) for e in ctx.events if isinstance(e, dict)]
    stamps = [t for t in stamps if t is not None]
    if not stamps:
        return []
    start, end = stamps[0], max(stamps)
    started: dict[str, datetime] = {}  # the last start of each arm (run): its last step-0 event (a retry starts over)
    for event in _event_rows(ctx, "training_step") or []:
        owner, at = event.get("run") or event.get("arm"), _time(event.get("ts"))
        if isinstance(owner, str) and at is not None and event.get("step") == 0:
            started[owner] = at
    problems = []
    for arm, entry in arms.items():
        entry = as_dict(entry)
        owned = [(arm, r) for r in as_list(entry.get("restores"))]
        for label, run in as_dict(entry.get("runs")).items():
            owned += [(f"{arm}@lr={label}", r) for r in as_list(as_dict(run).get("restores"))]
        for owner, restore in owned:
            restore, at = as_dict(restore), _time(as_dict(restore).get("at"))
            if at is None:
                continue
            owner = restore.get("run") or owner
            if at.replace(microsecond=0) < start.replace(microsecond=0) or at > end:
                problems.append(f"arm {arm}: restore {short(restore.get('restore'))} at {restore.get('at')} is outside "
                                "the run's events")
            elif restore.get("with_optimizer_state") is False and owner in started and at > started[owner]:
                problems.append(f"arm {arm}: restore {short(restore.get('restore'))} created {owner} at "
                                f"{restore.get('at')}, after its first training step")
    gate = next((e for e in reversed(_event_rows(ctx, "gate") or []) if e.get("gate") == "restoration_preflight"), None)
    measured = as_dict(as_dict(gate).get("measured"))
    for arm, output in as_dict(measured.get("output_sha256")).items():
        entry = as_dict(arms.get(arm))
        if entry and as_dict(entry.get("initial_output")).get("output_sha256") not in (None, output):
            problems.append(f"arm {arm}: initial_output.output_sha256 is not the one the restoration gate logged")
    init = measured.get("init_checkpoint")
    for arm, entry in arms.items():
        uri = as_dict(as_dict(entry).get("initialization")).get("checkpoint_uri")
        seeds = set(as_dict(measured.get("seed_init_checkpoints")).values()) | {init}
        if isinstance(init, str) and isinstance(uri, str) and uri not in seeds:
            problems.append(f"arm {arm}: initialization.checkpoint_uri is not a checkpoint the restoration gate logged")
    return problems


# ---------------------------------------------------------------------------- TRACE-4: adaptation manifests


@rule("TRACE-4", "record", "invalid|unverified", "adaptation manifests restate the batches each run consumed in sft-steps.jsonl")
def TRACE_4(ctx: GradeContext) -> list[Issue]:
    """Each adaptation manifest restates the batches its runs consumed: every run's sft-steps.jsonl rows, in
    step order, carry exactly the manifest's batch ids; the runs are the plan's runs of the arm."""
    manifests = ctx.result.get("adaptation_manifests")
    sft = _sft_rows(ctx)
    planned: dict[str, list[str]] = {}  # "<arm>" (first seed) or "<arm> at seed <s>" -> the plan's runs, in order
    pairs: dict[str, str] = {}  # the same key -> the pair of that seed's runs
    seeds = list(getattr(ctx.plan, "seeds", None) or [0]) if ctx.plan else [0]
    for run in (ctx.plan.training_runs if ctx.plan else []):
        # an SFT comparison's runs (an LR grid's, or an arm's one LR), one pair per scheduled seed
        if "@lr=" in run.name or getattr(ctx.plan, "training_type", None) == "sft":
            first = run_seed(run) == seeds[0]
            key = run.arm if first else f"{run.arm} at seed {run_seed(run)}"
            planned.setdefault(key, []).append(run.name)
            pairs[key] = ADAPTATION_PAIR if first else f"{ADAPTATION_PAIR}-seed{run_seed(run)}"
    if not isinstance(manifests, list):
        if manifests is None and planned and sft and _succeeded(ctx):
            return [Issue("TRACE-4", INVALID, "a succeeded LR-grid comparison retains its step log but no "
                                              "adaptation_manifests")]
        return []
    problems = []
    by_pair = {pair: key for key, pair in pairs.items()}

    def key_of(manifest: dict[str, Any]) -> str:
        pair = manifest.get("pair")
        seed_suffix = pair.removeprefix(ADAPTATION_PAIR) if isinstance(pair, str) else ""
        return str(manifest.get("arm")) + (f" at seed {seed_suffix.removeprefix('-seed')}" if seed_suffix else "")

    arms = sorted(key_of(as_dict(m)) for m in manifests if "runs" in as_dict(m))
    if planned and _succeeded(ctx) and arms != sorted(planned):
        problems.append(f"adaptation_manifests cover arms {arms}, not each of the plan's {sorted(planned)} once")
    for index, manifest in enumerate(manifests):
        manifest = as_dict(manifest)
        arm, ids, runs = manifest.get("arm"), manifest.get("adaptation_batch_ids"), manifest.get("runs")
        where = f"adaptation_manifests[{index}] ({short(arm)})"
        if "runs" not in manifest:
            continue  # an RL pair's manifest: its arms' batches are not logged per step (ADAPT-1 pairs the hashes)
        if manifest.get("pair") not in (by_pair or {ADAPTATION_PAIR: ""}) or not equal_json(manifest.get("warmup_batches"), 0):
            problems.append(f"{where}: an LR-grid comparison's manifest is pair {ADAPTATION_PAIR} (-seed<s> at a "
                            "further scheduled seed) with no warmup batches")
        if ctx.plan is not None and _succeeded(ctx) and runs != planned.get(key_of(manifest)):
            problems.append(f"{where}: runs {short(runs)} are not the plan's runs of {short(arm)}")
        if not isinstance(ids, list):
            continue
        numbered = [_BATCH_ID.match(str(i)) for i in ids]
        if any(m is None or int(m.group(1)) != n for n, m in enumerate(numbered)):
            problems.append(f"{where}: batch ids are not numbered by the step that consumed them")
        if sft is None:
            problems.append(f"{where}: {SFT_STEPS} is not retained, so the consumed batches cannot be read")
            continue
        for run in as_list(runs):
            consumed = [row.get("batch_id") for row in sft.get(str(run), [])]
            if consumed != ids:
                problems.append(f"{where}: {short(run)} consumed {len(consumed)} batches in {SFT_STEPS} that are not "
                                "the manifest's")
    return [Issue("TRACE-4", UNVERIFIED, p) if "not retained" in p else Issue("TRACE-4", INVALID, p) for p in problems]


# ---------------------------------------------------------------------------- TRACE-5: service routing


def expected_routing(ctx: GradeContext, target: dict[str, Any]) -> dict[str, Any]:
    """Where every arm runs (experiment.sft.runs.service_routing's decision, restated from the plan): all on one
    target; the embedded backend and a rehearsal deploy no fork; otherwise the fork as soon as one arm needs it."""
    planned = {arm.name: arm.service for arm in ctx.plan.trained_arms}
    embedded = target.get("kind") == "embedded" or isinstance(ctx.result.get("rehearsal"), dict)
    return {"fork": not embedded and "fork" in planned.values(), "planned_services": planned}


@rule("TRACE-5", "record", "invalid|unverified", "service-routing.json is the plan's routing on the service used, as logged")
def TRACE_5(ctx: GradeContext) -> list[Issue]:
    """service-routing.json is the plan's routing for the service the run used (the correctness probe's
    service where one is recorded) and, in a run directory, what the service_routing event logged."""
    if ctx.plan is None or SERVICE_ROUTING not in ctx.evidence.by_name:
        return []
    routing = ctx.evidence.json(SERVICE_ROUTING) if ctx.evidence.usable(SERVICE_ROUTING) else None
    if not isinstance(routing, dict):
        return [Issue("TRACE-5", UNVERIFIED, f"{SERVICE_ROUTING} is not readable JSON")]
    problems = []
    target = as_dict(routing.get("target"))
    for key, value in expected_routing(ctx, target).items():
        if not equal_json(routing.get(key), value):
            problems.append(f"{SERVICE_ROUTING}: {key} {short(routing.get(key))} is not {short(value)}, what the plan "
                            f"gives on a {short(target.get('kind'))} target")
    for path in as_list(as_dict(ctx.result.get("correctness_preflight")).get("paths")):
        service = as_dict(as_dict(as_dict(path).get("measured_through")).get("service"))
        if service and not equal_json(service, target):
            problems.append(f"{SERVICE_ROUTING}: target is not the service the correctness probe measured through")
    logged = _event_rows(ctx, "service_routing")
    if logged is not None:
        if len(logged) != 1 or not equal_json({k: v for k, v in logged[0].items() if k not in ("ts", "event")}, routing):
            problems.append(f"{SERVICE_ROUTING} is not the routing the service_routing event logged")
    return [Issue("TRACE-5", INVALID, p) for p in problems]


# ---------------------------------------------------------------------------- TRACE-6: the re-solver's code


@rule("TRACE-6", "record", "invalid|unverified", "the re-solver's code_sha256 is the hash of the retained code it names")
def TRACE_6(ctx: GradeContext) -> list[Issue]:
    """A re-solver that is a program names its code and hash: the hash is that of the retained code file."""
    audit = as_dict(ctx.result.get("generation_audit"))
    resolver = as_dict(audit.get("resolver"))
    if "code_sha256" not in resolver and "code" not in resolver:
        return []
    code, digest = resolver.get("code"), resolver.get("code_sha256")
    files = as_dict(as_dict(ctx.evidence.json(PIPELINE_CODE)).get("files")) if ctx.evidence.usable(PIPELINE_CODE) else {}
    retained = as_dict(files.get(code)).get("content")
    if not isinstance(retained, str):
        return [Issue("TRACE-6", UNVERIFIED, f"generation_audit.resolver.code {short(code)} is not retained in "
                                             f"{PIPELINE_CODE}, so its code_sha256 cannot be checked")]
    actual = hashlib.sha256(retained.encode("utf-8")).hexdigest()
    issues = []
    if digest != actual:
        issues.append(Issue("TRACE-6", INVALID, f"generation_audit.resolver.code_sha256 {short(digest)} is not the hash "
                                                f"of the retained {code} ({actual[:12]}...)"))
    named = [as_dict(s).get("resolver_id") for s in as_list(audit.get("samples"))]
    stale = [n for n in named if isinstance(n, str) and "sha256:" in n and f"sha256:{actual[:12]}" not in n]
    if stale:
        issues.append(Issue("TRACE-6", INVALID, f"{len(stale)} audit sample(s) name a re-solver whose code hash is not "
                                                f"the retained {code}'s"))
    return issues


# ---------------------------------------------------------------------------- TRACE-7: unreferenced evidence

# The files a rule reads by name (or by a name it derives), beyond those a field of RESULT names.
READ_BY_RULES = re.compile(
    r"^(spec\.json|spec-revision\.plan\.json|rehearsal-spec\.json|execution-plan\.json|code-revision\.json"
    r"|pipeline-code\.json|service-exposure\.json|service-routing\.json|sft-steps\.jsonl|verdict-criteria\.json"
    r"|scored-observations\.jsonl|restoration-update-check\.json|restoration-fixed-batch\.json"
    r"|correctness-(fixed-batch|fixed-input|preflight)\.json|correctness-start-state\.npz"
    r"|activation-pilot-[\w.\-]+\.jsonl|generated-tasks-v\d+\.jsonl|generation-audit-v\d+\.json"
    r"|generation-evaluation-set\.jsonl|predictions-[\w.\-@=]+\.jsonl|restoration-[\w.\-@=]+\.json"
    r"|script-[\w.\-]+\.py|run\.py|spec-revision-request\.json|adaptive-selection\.json)$")


PREDICTIONS_PREFIX = "predictions-"  # read by name only where a score's predictions_ref names it


def _named_in(value: Any, names: set[str], found: set[str]) -> None:
    if isinstance(value, str):
        if value in names:
            found.add(value)
    elif isinstance(value, dict):
        for inner in value.values():
            _named_in(inner, names, found)
    elif isinstance(value, list):
        for inner in value:
            _named_in(inner, names, found)


@rule("TRACE-7", "record", "invalid", "every evidence file is read by a rule or named by a field of RESULT")
def TRACE_7(ctx: GradeContext) -> list[Issue]:
    """Every evidence file is read by some rule or named by a field of RESULT: a file nothing reads could say
    anything (a contradicting log added beside the record), so an unread file is reported, not ignored."""
    names = {str(e.get("name")) for e in ctx.evidence.entries}
    found: set[str] = set()
    _named_in({k: v for k, v in ctx.result.items() if k != "evidence"}, names, found)
    finished = ctx.result.get("status") == "succeeded"  # every score posted: a predictions file no score names is unread
    unread = sorted(name for name in names - found if not READ_BY_RULES.match(name)
                    or (finished and name.startswith(PREDICTIONS_PREFIX)))
    return [Issue("TRACE-7", INVALID, f"evidence {name} is read by no rule and named by no field of RESULT: "
                                      "an unchecked file") for name in unread]


# ---------------------------------------------------------------------------- TRACE-8: the record's self-check


@rule("TRACE-8", "record", "invalid", "RESULT.grade and RESULT.validation are what checking the record afresh gives")
def TRACE_8_validation(ctx: GradeContext) -> list[Issue]:
    """RESULT.validation (the run-dir checks' summary) says what its own problem list gives: status, count and
    failed checks; a failed validation limits the decision (the run records "validation failed" there)."""
    validation = ctx.result.get("validation")
    if validation is None:
        return []
    validation = as_dict(validation)
    problems = validation.get("problems")
    if not (isinstance(problems, list) and all(isinstance(p, str) for p in problems)):
        return [Issue("TRACE-8", INVALID, "RESULT.validation has no list of problems")]
    expected = {"version": 1, "status": "failed" if problems else "passed", "problem_count": len(problems),
                "failed_checks": sorted({p.split(":", 1)[0] for p in problems})}
    wrong = [f"{key} {short(validation.get(key))} (its problems give {short(value)})"
             for key, value in expected.items() if not equal_json(validation.get(key), value)]
    extra = sorted(set(validation) - set(expected) - {"problems"})
    if extra:
        wrong.append(f"keys {', '.join(extra)} a validation summary does not have")
    return [Issue("TRACE-8", INVALID, f"RESULT.validation: {'; '.join(wrong)}")] if wrong else []


def _rule_ids(findings: Any) -> list[str]:
    """The rule ids of a grade's findings ("CORR-6: ..." -> "CORR-6"), in order: what a finding says is its wording."""
    return [str(text).split(":", 1)[0] for text in as_list(findings)]


@implements("TRACE-8")
def self_grade_problems(stored: Any, fresh: dict[str, Any]) -> list[str]:
    """TRACE-8: RESULT.grade (the run's grade of itself, bare, as posted) against a fresh bare grade of the same
    record (`Grade.record()`): the version, the spec source, every category's status and the rules of its issues,
    the rules of the problems. The wording of a finding is not compared: a grader that words a finding anew must
    not turn an honest older record red."""
    if stored is None:
        return []
    stored = as_dict(stored)
    if not stored.get("categories") and any("grader failed" in str(p) for p in as_list(stored.get("problems"))):
        return ["TRACE-8: RESULT.grade records that the run's grader failed; graded afresh here."]
    differ = [key for key in ("version", "spec_source") if not equal_json(stored.get(key), fresh.get(key))]
    if not isinstance(stored.get("problems"), list) or _rule_ids(stored["problems"]) != _rule_ids(fresh["problems"]):
        differ.append("problems")
    mine, theirs = as_dict(stored.get("categories")), fresh["categories"]
    if set(mine) != set(theirs):
        differ.append("categories")
    for name in sorted(set(mine) & set(theirs)):
        entry = as_dict(mine[name])
        if entry.get("status") != theirs[name]["status"] or not isinstance(entry.get("issues"), list) \
                or _rule_ids(entry["issues"]) != _rule_ids(theirs[name]["issues"]):
            differ.append(f"categories.{name} (stored {short(entry.get('status'))}, afresh {theirs[name]['status']})")
    extra = sorted(set(stored) - {"version", "spec_source", "categories", "problems"})
    differ += [f"key {key}" for key in extra]
    return [f"TRACE-8: RESULT.grade is not what grading the record afresh gives: {', '.join(differ)}."] if differ else []


CHECKS = [TRACE_1, TRACE_2, TRACE_3, TRACE_4, TRACE_5, TRACE_6, TRACE_7, TRACE_8_validation]
