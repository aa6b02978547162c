"""Reading a record's initialization provenance as the restoration rules (experiment.grading.restoration) read it:
its arms' entries (an LR grid's runs as arms), their optimizer checks and the learning rates each may request,
the spec's optimizer names as a server reports them, the service's responses (get_info, the restoration evidence
file of an arm) as the run reads them, and the initial output hash. Helpers only: the findings are restoration's.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from experiment.contract.spec import OPTIMIZER_CONFIG_ALIASES as CONFIG_ALIASES, SERVER_STATE_KEYS, optimizer_family
from experiment.grading.common import GradeContext, as_dict, as_list, short

# Keys of a group's optimizer_config that describe the model; the seed is proven by the shared
# initialization (equal adapter hashes), never by an optimizer response (project reading).
NOT_OPTIMIZER_KEYS = ("seed",)


def family_of(name: Any) -> str:
    """The spec's optimizer name as a server reports it (`adam` is `adamw`; REST-5)."""
    return optimizer_family(str(name)) if name else ""


def provenance_arms(ctx: GradeContext) -> dict[str, dict[str, Any]]:
    """arm -> its provenance entry, and for an arm of an LR grid each run's own entry as "<arm> run <lr>"
    (each run is created and checked like an arm)."""
    arms = {k: v for k, v in as_dict(as_dict(ctx.result.get("initialization_provenance")).get("arms")).items()
            if isinstance(v, dict)}
    runs = {f"{arm} run {label}": run for arm, entry in arms.items()
            for label, run in as_dict(entry.get("runs")).items() if isinstance(run, dict)}
    return {**arms, **runs}


def output_sha256_of(logprobs: list[Any]) -> str:
    """experiment.rl.restoration.output_sha256 of retained logprobs: per datum its length (int64 LE),
    then its values as float32 LE (rewritten here: the grader loads no training code)."""
    digest = hashlib.sha256()
    for values in logprobs:
        array = np.asarray(values, dtype=np.float64).reshape(-1)
        digest.update(np.int64(array.size).astype("<i8").tobytes())
        digest.update(array.astype("<f4").tobytes())
    return digest.hexdigest()


def as_requested(check: dict[str, Any]) -> dict[str, Any]:
    """An optimizer check's `requested` with the spec's key aliases read as the config's names (`lr` is
    `learning_rate`, as the spec's own restoration groups write it; REST-5)."""
    return {CONFIG_ALIASES.get(k, k): v for k, v in as_dict(check.get("requested")).items()}


def planned_lrs(ctx: GradeContext) -> dict[str, list[float]]:
    """arm -> the learning rates the plan trains it at (one per run of an LR grid)."""
    lrs: dict[str, list[float]] = {}
    for run in (ctx.plan.training_runs if ctx.plan is not None else []):
        if run.lr is not None:
            lrs.setdefault(run.arm, []).append(float(run.lr))
    return lrs


def optimizer_check_entries(ctx: GradeContext, planned: dict[str, list[float]] | None = None
                   ) -> list[tuple[str, str, dict[str, Any], list[float] | None]]:
    """(where, arm, optimizer check, the learning rates it may request) for every optimizer check:
    the arm's own and, for an arm of several runs (an LR grid), each run's under `runs.<label>`
    (a run's label is its learning rate)."""
    planned = planned or {}
    found = []
    for arm, entry in provenance_arms(ctx).items():
        for check in as_list(entry.get("optimizer_checks")):
            found.append((f"arm {arm}", arm, as_dict(check), planned.get(arm)))
        for label, run in as_dict(entry.get("runs")).items():
            try:  # a run's label is its learning rate, with -seed<s> at a further scheduled seed
                lr = [float(label.split("-seed")[0])]
            except ValueError:
                lr = planned.get(arm)
            for check in as_list(as_dict(run).get("optimizer_checks")):
                found.append((f"arm {arm} run {label}", arm, as_dict(check), lr))
    return found


def server_optimizer(value: Any) -> dict[str, Any] | None:
    """The optimizer config of the retained server response after creation (`get_info_after_creation`,
    else `get_info`), else the first `optimizer_config` / `optimizer` the file holds."""
    if isinstance(value, dict):
        for key in ("get_info_after_creation", "get_info"):
            found = server_optimizer(value.get(key)) if isinstance(value.get(key), dict) else None
            if found is not None:
                return found
        for key in ("optimizer_config", "optimizer"):
            if isinstance(value.get(key), dict):
                return value[key]
        for inner in value.values():
            found = server_optimizer(inner)
            if found is not None:
                return found
    elif isinstance(value, list):
        for inner in value:
            found = server_optimizer(inner)
            if found is not None:
                return found
    return None


def reported_optimizer(value: Any) -> tuple[Any, dict[str, Any]] | None:
    """(family, config) the retained get_info response reports, read as the run reads it
    (experiment.rl.restoration.optimizer_check): the optimizer config's `type`, its settings without the
    server's state, and the model's lora_rank; None without a response."""
    data = as_dict(value)
    info = next((data[k] for k in ("get_info_after_restore", "get_info_after_creation", "get_info")
                 if isinstance(data.get(k), dict)), None)
    if info is None:
        return None
    optimizer = as_dict(info.get("optimizer_config") or info.get("optimizer"))
    config = {k: v for k, v in optimizer.items() if k not in ("type", "family", *SERVER_STATE_KEYS)}
    if "lora_rank" in info:
        config.setdefault("lora_rank", info["lora_rank"])
    return optimizer.get("type", optimizer.get("family")), config


# What the run's restoration evidence file of an arm holds (experiment.rl.restoration.restore_member): a file that
# holds any of these is that file and holds them all.
RUN_FILE_KEYS = ("loaded_from", "load_method", "loaded_at", "get_info_after_creation", "load_response",
                 "checkpoint_weights_info", "initial_output_logprobs")


def fresh_optimizer_problems(optimizer: dict[str, Any]) -> list[str]:
    """A state before any update: the service's optimizer step (where reported) is 0, no last step's params."""
    wrong = []
    if "optimizer_step" in optimizer and optimizer["optimizer_step"] != 0:
        wrong.append(f"optimizer_step {short(optimizer['optimizer_step'])}")
    if optimizer.get("last_optim_params") is not None:
        wrong.append("last_optim_params")
    return wrong


def evidence_info(ctx: GradeContext, ref: Any) -> dict[str, Any]:
    """The service's get_info a restoration evidence file retains (after the restore, after creation, or plain)."""
    data = as_dict(ctx.evidence.json(ref)) if ctx.evidence.usable(ref) else {}
    return as_dict(data.get("get_info_after_restore") or data.get("get_info_after_creation") or data.get("get_info"))


def evidence_load(ctx: GradeContext, ref: Any) -> tuple[Any, Any]:
    """(client, checkpoint) a restoration evidence file names: the model_id of the service's get_info, and
    the path the service's load response names, else the path the run recorded loading (None when absent)."""
    data = as_dict(ctx.evidence.json(ref)) if ctx.evidence.usable(ref) else {}
    info = evidence_info(ctx, ref)
    loaded = as_dict(data.get("load_response")).get("path") or data.get("loaded_from") or data.get("restored_from")
    return info.get("model_id"), loaded
