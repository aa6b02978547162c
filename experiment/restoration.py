"""Restoration preflight (contract section 5): every arm starts from one proven state.

The proof, per arm, is built from server responses only:

- a shared initialization checkpoint saved once (`save_state`), every arm's client created
  from it, and the adapter sha256 the server reports for each client (get_info, fetched by
  the SDK right after the load) equal to the checkpoint's own (weights_info);
- an optimizer check after creation (``after_restore: 0``) and after every restore,
  comparing the requested family/config with what the server reports;
- ``initial_output``: sha256 of all full-precision logprobs the server returns for one
  fixed tokenized batch, before the first update, compared across the group.

A create-save-restore fixed-gradient update is checked against an uninterrupted client.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Sequence

import numpy as np
import tinker
from tinker.types.optimizer import OptimizerConfigBase
from tinker_cookbook import renderers
from tinker_cookbook.renderers import TrainOnWhat
from tinker_cookbook.supervised.data import conversation_to_datum

from experiment.data import TaskItem
from experiment.rl_loop import make_env

# Spec optimizer names -> the family a server reports (contract-details Part C: adam == adamw).
FAMILY_ALIASES = {"adam": "adamw", "adamw": "adamw", "dimuon": "dimuon", "trimuon": "trimuon"}
# Spec config keys -> the AdamParams / OptimParams field names (spec 000 says `lr`).
CONFIG_ALIASES = {"lr": "learning_rate"}
# Keys of a restoration group's optimizer_config that describe the model, not the optimizer.
MODEL_KEYS = ("lora_rank", "seed")
# The LoRA init seed is no optimizer setting and no service reports it: equal adapter hashes of
# the shared initialization checkpoint prove it instead.
PROVEN_BY_INITIALIZATION = ("seed",)
# Fields the embedded backend adds to optimizer_config that describe state, not configuration.
SERVER_STATE_KEYS = ("adapter_sha256", "optimizer_step", "last_optim_params")


def canonical_sha256(value: Any) -> str:
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(data.encode()).hexdigest()


def optimizer_family(name: str) -> str:
    family = name.split()[0].lower()  # "trimuon (fork)" -> "trimuon"
    return FAMILY_ALIASES.get(family, family)


def requested_optimizer(optimizer: str, optimizer_config: dict[str, Any]) -> dict[str, Any]:
    """Normalize a spec's requested optimizer to {family, <optimizer fields>, <model fields>}."""
    config = {CONFIG_ALIASES.get(k, k): v for k, v in optimizer_config.items()}
    return {"family": optimizer_family(optimizer), **config}


def creation_optimizer_config(requested: dict[str, Any]) -> OptimizerConfigBase:
    """The optimizer config sent at model creation: family plus its hyperparameters.

    Sending the hyperparameters lets a server that records them report them back, so the
    optimizer check compares real values; a server that ignores them reports only the family
    (then the check lists those keys as not exposed, never as verified).
    """
    fields = {k: v for k, v in requested.items() if k not in ("family", *MODEL_KEYS)}
    return OptimizerConfigBase(type=requested["family"], **fields)


def optimizer_check(info: Any, requested: dict[str, Any], after_restore: int,
                    evidence_ref: str) -> dict[str, Any]:
    """One optimizer_checks entry from a get_info response (before the next update)."""
    reported = info.optimizer_config.model_dump() if info.optimizer_config is not None else {}
    actual_family = reported.get("type")
    actual_config = {k: v for k, v in reported.items() if k not in ("type", *SERVER_STATE_KEYS)}
    if getattr(info, "lora_rank", None) is not None:
        actual_config["lora_rank"] = info.lora_rank
    compared, mismatched, not_exposed = [], [], []
    for key, want in requested.items():
        if key in ("family", *PROVEN_BY_INITIALIZATION):
            continue
        if key not in actual_config:
            not_exposed.append(key)
        elif _same(actual_config[key], want):
            compared.append(key)
        else:
            mismatched.append(f"{key}: requested {want!r}, server reports {actual_config[key]!r}")
    if actual_family != requested["family"]:
        mismatched.insert(0, f"family: requested {requested['family']!r}, server reports {actual_family!r}")
    return {
        "after_restore": after_restore,
        "before_next_update": True,
        "requested": requested,
        "actual_family": actual_family,
        "actual_config": actual_config or None,
        "source": "server_response",
        "evidence_ref": evidence_ref,
        "verified_keys": compared,
        "proven_by_initialization": [k for k in PROVEN_BY_INITIALIZATION if k in requested],
        "not_exposed_keys": not_exposed,
        "mismatches": mismatched,
        "matches": not mismatched,
    }


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def fixed_batch(problems: Sequence[TaskItem], renderer: renderers.Renderer, few_shot: bool,
                max_length: int | None = None) -> list[tinker.Datum]:
    """One fixed tokenized batch: each problem's env prompt plus its reference answer.

    0/1 weights on the assistant tokens (reduction "none"); the logprobs of every token are
    what initial_output hashes, so the weights only document which tokens are the answer.
    """
    datums = []
    for problem in problems:
        env = make_env(problem, renderer, few_shot)
        conversation = env.convo_prefix + [
            {"role": "user", "content": env.get_question()},
            {"role": "assistant", "content": f"\\boxed{{{problem.answer}}}"},
        ]
        datums.append(conversation_to_datum(conversation, renderer, max_length,
                                            TrainOnWhat.LAST_ASSISTANT_MESSAGE, reduction="none"))
    return datums


def batch_json(datums: Sequence[tinker.Datum]) -> list[dict[str, Any]]:
    """Token ids, targets and weights of a batch as plain JSON (what batch_sha256 covers)."""
    rows = []
    for datum in datums:
        rows.append({
            "tokens": datum.model_input.to_ints(),
            "loss_fn_inputs": {
                name: tensor.to_numpy().tolist() for name, tensor in sorted(datum.loss_fn_inputs.items())
            },
        })
    return rows


def batch_sha256(datums: Sequence[tinker.Datum]) -> str:
    return canonical_sha256(batch_json(datums))


def logprobs_arrays(output: Any) -> list[np.ndarray]:
    """Per-datum logprobs exactly as the server returned them (float32, no rounding)."""
    return [np.asarray(o["logprobs"].to_numpy(), dtype=np.float32) for o in output.loss_fn_outputs]


def output_sha256(output: Any) -> str:
    """sha256 over every datum's logprobs: per datum its length (int64 LE) then float32 LE bytes."""
    digest = hashlib.sha256()
    for array in logprobs_arrays(output):
        digest.update(np.int64(array.size).astype("<i8").tobytes())
        digest.update(array.astype("<f4").tobytes())
    return digest.hexdigest()


def adapter_sha256_from_info(info: Any) -> str | None:
    """The adapter hash a server reports in get_info, if it reports one (embedded backend does)."""
    for holder in (getattr(info, "optimizer_config", None), getattr(info, "model_data", None), info):
        extra = getattr(holder, "model_extra", None) or {}
        if isinstance(extra.get("adapter_sha256"), str):
            return extra["adapter_sha256"]
    return None


def group_consistency(entries: dict[str, dict[str, Any]]) -> list[str]:
    """Problems across one initialization group: every hash and URI identity must agree."""
    problems = []
    for field_path in (("initialization", "checkpoint_uri"),
                       ("initialization", "adapter_sha256"),
                       ("initial_output", "batch_sha256"),
                       ("initial_output", "output_sha256")):
        values = {arm: e[field_path[0]].get(field_path[1]) for arm, e in entries.items()}
        present = {v for v in values.values() if v is not None}
        if len(present) > 1:
            problems.append(f"{'.'.join(field_path)} differs across arms: {values}")
        if field_path[1] in ("checkpoint_uri", "adapter_sha256", "output_sha256") and None in values.values():
            problems.append(f"{'.'.join(field_path)} missing for {[a for a, v in values.items() if v is None]}")
    return problems


def max_abs_difference(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> float:
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b)):
        return float("inf")
    return max((float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) for x, y in zip(a, b)),
               default=0.0)
