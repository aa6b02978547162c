"""The RL recipe of a spec: rollout settings, per-arm loop settings, prompt order, eval items.

Derived from the spec (and its plan) in one place so every gate uses the same numbers:
the probe, the pilots and the full arms must run "the exact full-run regime".
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Coroutine, TypeVar

from experiment.contract.optimizer_defaults import step_defaults
from experiment.contract.plan import ExecutionPlan
from experiment.contract.rollout import rollout_settings
from experiment.contract.spec import Spec
from experiment.data import TaskItem, load_gsm8k, load_task_file, resolve_data_path, seeded_shuffle

if TYPE_CHECKING:  # rl_loop imports torch; rollout_settings (used when a spec is loaded) must not
    from experiment.rl.loop import RLArmSettings
    from experiment.run.state import RunState

T = TypeVar("T")

ADAMW_DEFAULTS = step_defaults("adamw")


def requested_optimizers(plan: ExecutionPlan) -> dict[str, tuple[str, dict[str, Any]]]:
    """arm -> (spec optimizer name, optimizer_config) from restoration_preflight groups."""
    groups = plan.gate("restoration_preflight").details.get("groups", [])
    return {
        arm["name"]: (arm.get("optimizer", "adam"), dict(arm.get("optimizer_config", {})))
        for group in groups
        for arm in group.get("arms", [])
    }


def rl_arm_settings(spec: Spec, plan: ExecutionPlan, kernel_bandwidth: float | None = None) -> dict[str, RLArmSettings]:
    """Loop settings of every trained arm (the same rollout regime for all of them)."""
    from experiment.rl.loop import RLArmSettings

    rollout = rollout_settings(spec)
    optimizers = requested_optimizers(plan)
    raw_arms = {a["name"]: a for a in spec.to_dict().get("arms", [])}
    settings = {}
    for arm in plan.trained_arms:
        raw = raw_arms.get(arm.name, {})
        config = optimizers.get(arm.name, ("adam", {}))[1]
        group_size, groups_per_batch = spec.rollout_shape(arm.name)
        settings[arm.name] = RLArmSettings(
            name=arm.name,
            advantage=raw.get("advantage", "group_mean"),
            group_size=group_size,
            groups_per_batch=groups_per_batch,
            learning_rate=float(arm.lr if arm.lr is not None else spec.section("optimizer")["lr"]),
            max_tokens=rollout.max_tokens,
            temperature=rollout.temperature,
            seed=int(arm.seed if arm.seed is not None else plan.seeds[0]),
            kernel_bandwidth=kernel_bandwidth if kernel_bandwidth is not None else 0.5,
            adam_beta1=float(config.get("beta1", ADAMW_DEFAULTS["beta1"])),
            adam_beta2=float(config.get("beta2", ADAMW_DEFAULTS["beta2"])),
            adam_eps=float(config.get("eps", ADAMW_DEFAULTS["eps"])),  # a bare name: the SDK's documented defaults
            renderer_name=rollout.renderer_name,
            few_shot=rollout.few_shot,
        )
    return settings


def rl_replica_settings(spec: Spec, plan: ExecutionPlan, kernel_bandwidth: float | None = None
                        ) -> dict[str, RLArmSettings]:
    """Loop settings of every trained arm at every scheduled seed, keyed by replica label (plan.Replica):
    the arm's settings with the replica's seed (LoRA initialization and rollout seeds)."""
    arms = rl_arm_settings(spec, plan, kernel_bandwidth=kernel_bandwidth)
    return {replica.label: replace(arms[replica.arm], name=replica.label, seed=replica.seed, arm_name=replica.arm)
            for replica in plan.replicas if replica.trained}


def training_items(spec: Spec) -> list[TaskItem]:
    """All training problems in the shared seed-0 order (every arm draws from this order)."""
    dataset = spec.to_dict().get("dataset", {})
    items = load_task_file(resolve_data_path(dataset["path"])) if dataset.get("path") else load_gsm8k("train")
    return seeded_shuffle(items, seed=0)


def eval_items(spec: Spec) -> list[TaskItem]:
    """Exactly the spec's eval.n_examples held-out items, in file order (never floor-divided)."""
    evaluation = spec.to_dict().get("eval", {})
    items = load_task_file(resolve_data_path(evaluation["path"])) if evaluation.get("path") else load_gsm8k("test")
    n = int(evaluation.get("n_examples") or len(items))
    if n > len(items):
        raise ValueError(f"eval.n_examples is {n} but the held-out set has {len(items)} items")
    return items[:n]


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, also when a loop already runs here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}
    context = contextvars.copy_context()  # the caller's context (the run's answer watch) goes with the coroutine

    def target() -> None:
        try:
            box["value"] = context.run(asyncio.run, coro)
        except BaseException as err:  # re-raised in the caller's thread
            box["error"] = err

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def renderer_for(training_client: Any, renderer_name: str) -> Any:
    """The cookbook renderer over the model's own tokenizer (a local dir on the embedded backend)."""
    from tinker_cookbook import renderers

    return renderers.get_renderer(renderer_name, training_client.get_tokenizer())


def renderer_named(tokenizer_id: str, renderer_name: str) -> Any:
    """The same renderer from a tokenizer id a training client reported (get_info.model_data.tokenizer_id).

    Sampling clients only know the base model's name, which is no tokenizer id offline; the probe
    records the training client's tokenizer id so later gates can rebuild the renderer."""
    from tinker_cookbook import renderers
    from tinker_cookbook.tokenizer_utils import get_tokenizer

    return renderers.get_renderer(renderer_name, get_tokenizer(tokenizer_id))


def uses_generated_tasks(spec: Spec, arm_name: str) -> bool:
    """An arm trained on the audited self-generated tasks: the spec's `arms[].data`, mapped by the
    revision file's `arm_data` (Spec.data_source)."""
    return spec.data_source(arm_name) == "generated_tasks"


def arm_training_order(spec: Spec, state: RunState, arm_name: str) -> list[TaskItem]:
    """The prompt order one arm trains on.

    Arms on the spec's dataset take its seed-0 shuffle, first `dataset.n_examples` (GS1: the shared
    order; selfgen baseline: "the first 640 after a fixed seed-0 shuffle"). An arm on generated data
    takes the audited accepted tasks (first N in generation order) in a seed-0 shuffle; those exist
    only after the generation audit passed, so no update on generated data can come before it.
    """
    if uses_generated_tasks(spec, arm_name):
        tasks = state.generated_tasks()
        if not tasks:
            raise ValueError(f"arm {arm_name} trains on generated tasks but no audited task set exists")
        return seeded_shuffle(tasks, seed=0)
    order = training_items(spec)
    n = spec.to_dict().get("dataset", {}).get("n_examples")
    return order[: int(n)] if n else order
