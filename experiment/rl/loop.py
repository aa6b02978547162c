"""RL client loop on the stock tinker SDK and the tinker-cookbook math env.

One step of one arm, top to bottom (spec gs1_kernel_vs_grpo_gsm8k, `command`):

1. ``sampler = training_client.save_weights_and_get_sampling_client()``
2. take this step's prompts from the shared seed-0 order (GRPO: 8 prompts x 8 samples,
   GS1: 64 prompts x 1 sample); GS1 first measures each prompt's features with the sampler
3. sample with the spec's max_tokens and temperature, grade with the cookbook env reward
4. compute advantages (GRPO group mean, or the GS1 kernel baseline)
5. build Datums with the cookbook's assembly (sampling logprobs, advantages, prompt masked)
6. ``forward_backward(datums, "importance_sampling")``
7. ``optim_step(AdamParams(...))`` (timed: the optimizer wall time is a reported metric)

Everything the gates need to inspect (rewards, advantages, kernel diagnostics, executed
group size) comes back in a :class:`StepRecord`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Sequence

import tinker
import torch
from tinker_cookbook import renderers
from tinker_cookbook.completers import StopCondition, TokenCompleter, TokensWithLogprobs
from tinker_cookbook.recipes.math_rl.math_env import MathEnv
from tinker_cookbook.rl.data_processing import assemble_training_data
from tinker_cookbook.rl.problem_env import ProblemGroupBuilder
from tinker_cookbook.rl.rollouts import do_group_rollout
from tinker_cookbook.rl.types import TrajectoryGroup

from experiment.data import TaskItem
from experiment.service.capacity import answered
from experiment.stats.activation import fraction_nonzero
from experiment.rl.advantages import (
    DEFAULT_MIN_KERNEL_MASS,
    DEFAULT_WINDOW_SIZE,
    GROUP_MEAN,
    KERNEL_BASELINE,
    KernelBaselineState,
    append_batch_to_window,
    grpo_group_mean_advantages,
    gs1_kernel_advantages,
)
ADVANTAGE_ESTIMATORS = (GROUP_MEAN, KERNEL_BASELINE)


@dataclass(frozen=True)
class RLArmSettings:
    """Everything one RL arm's loop needs; comes from the spec's arm + top-level fields."""

    name: str
    advantage: str  # GROUP_MEAN or KERNEL_BASELINE
    group_size: int
    groups_per_batch: int
    learning_rate: float
    max_tokens: int
    temperature: float = 1.0
    seed: int = 0
    kernel_bandwidth: float = 0.5
    kernel_window: int = DEFAULT_WINDOW_SIZE
    kernel_min_mass: float = DEFAULT_MIN_KERNEL_MASS
    adam_beta1: float = 0.9
    adam_beta2: float = 0.95
    adam_eps: float = 1e-8
    renderer_name: str = "qwen3_5_disable_thinking"
    few_shot: bool = False  # GSM8K uses the cookbook's one-shot "strawberry" prefix
    arm_name: str | None = None  # the spec's arm when `name` labels one of its seed replicas (plan.Replica)

    @property
    def spec_arm(self) -> str:
        """The spec's arm this loop trains (its name in records), also for a seed replica."""
        return self.arm_name or self.name

    def __post_init__(self) -> None:
        if self.advantage not in ADVANTAGE_ESTIMATORS:
            raise ValueError(
                f"arm {self.name}: unknown advantage estimator {self.advantage!r}; "
                f"expected one of {ADVANTAGE_ESTIMATORS}"
            )

    @property
    def rollouts_per_step(self) -> int:
        return self.group_size * self.groups_per_batch

    def adam_params(self) -> tinker.AdamParams:
        return tinker.AdamParams(
            learning_rate=self.learning_rate,
            beta1=self.adam_beta1,
            beta2=self.adam_beta2,
            eps=self.adam_eps,
        )


@dataclass
class StepRecord:
    """What one training step did, measured (never planned)."""

    arm: str
    step: int
    item_ids: list[str]
    rewards: list[float]  # one per rollout, group-major order
    advantages: list[float]  # one per rollout, same order
    executed_group_size: float  # rollouts per distinct prompt, as executed
    mean_reward: float
    loss_sum: float
    n_datums: int
    n_action_tokens: int
    optim_seconds: float
    step_seconds: float
    baseline_values: list[float] = field(default_factory=list)  # GS1 b_i
    effective_neighbors: list[float] = field(default_factory=list)  # GS1 (sum w)^2 / sum w^2
    kernel_fallbacks: int = 0
    prompt_features: list[tuple[float, float]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "arm": self.arm,
            "step": self.step,
            "mean_reward": self.mean_reward,
            "loss_sum": self.loss_sum,
            "n_rollouts": len(self.rewards),
            "executed_group_size": self.executed_group_size,
            "frac_nonzero_advantage": fraction_nonzero(self.advantages),
            "optim_seconds": self.optim_seconds,
            "step_seconds": self.step_seconds,
            "kernel_fallbacks": self.kernel_fallbacks,
        }


def step_problems(order: Sequence[TaskItem], arm: RLArmSettings, step: int) -> list[TaskItem]:
    """This step's prompts from the shared order: arm-independent start, arm-specific count."""
    start = step * arm.groups_per_batch
    problems = list(order[start : start + arm.groups_per_batch])
    if len(problems) < arm.groups_per_batch:
        raise ValueError(
            f"arm {arm.name}: step {step} needs prompts {start}..{start + arm.groups_per_batch - 1} "
            f"but the prompt order has only {len(order)}"
        )
    return problems


class SeededTokenCompleter(TokenCompleter):
    """Samples one completion per call with a distinct, reproducible seed per call.

    The cookbook's TinkerTokenCompleter sends no seed; a seed per call makes a re-run of
    the same step on the same weights reproduce the same rollouts (resume, fault tests).
    Calls are numbered in the order they start, which asyncio.gather keeps deterministic.

    A cookbook group's envs all ask for the same prompt at once: calls that start together
    with the same prompt and settings go out as one request of n samples with the first
    call's seed, and the service draws sample i from seed + i, which is the seed call i
    would have sent alone. One request instead of group_size saves the SDK's per-request
    work, two HTTP calls each and the service's rate limits (the embedded backend gives
    the same tokens either way). A request goes out when group_size calls are waiting, or
    at the event loop's next turn with whatever is waiting.
    """

    def __init__(self, sampling_client: tinker.SamplingClient, max_tokens: int,
                 temperature: float, base_seed: int, group_size: int = 1):
        self.sampling_client = sampling_client
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.base_seed = base_seed
        self.group_size = group_size
        self._calls = 0
        self._waiting: list[_WaitingCall] = []
        self._requests: set[asyncio.Task] = set()  # held until done (the loop keeps only weak references)

    async def __call__(self, model_input: tinker.ModelInput, stop: StopCondition, *,
                       max_tokens: int | None = None) -> TokensWithLogprobs:
        call = _WaitingCall(model_input, stop, min(self.max_tokens, max_tokens or self.max_tokens),
                            self.base_seed + self._calls, asyncio.get_running_loop().create_future())
        self._calls += 1
        self._waiting.append(call)
        if len(self._waiting) >= self.group_size:
            self._send_waiting()
        elif len(self._waiting) == 1:
            asyncio.get_running_loop().call_soon(self._send_waiting)
        return await call.result

    def _send_waiting(self) -> None:
        waiting, self._waiting = self._waiting, []
        requests: list[list[_WaitingCall]] = []
        for call in waiting:  # consecutive calls (consecutive seeds) with equal settings share a request
            if requests and call.same_request_as(requests[-1][-1]):
                requests[-1].append(call)
            else:
                requests.append([call])
        for calls in requests:
            task = asyncio.ensure_future(self._sample(calls))
            self._requests.add(task)
            task.add_done_callback(self._requests.discard)

    async def _sample(self, calls: list[_WaitingCall]) -> None:
        first = calls[0]
        try:
            result = await answered(self.sampling_client.sample(
                prompt=first.model_input,
                num_samples=len(calls),
                sampling_params=tinker.SamplingParams(
                    stop=first.stop, max_tokens=first.max_tokens, temperature=self.temperature, seed=first.seed,
                ),
            ))
        except BaseException as error:  # noqa: BLE001 - each waiting call raises it
            for call in calls:
                if not call.result.done():
                    call.result.set_exception(error)
            if not isinstance(error, Exception):
                raise
            return
        for call, sequence in zip(calls, result.sequences, strict=True):
            if not call.result.done():
                call.result.set_result(TokensWithLogprobs(
                    tokens=sequence.tokens, maybe_logprobs=sequence.logprobs, stop_reason=sequence.stop_reason,
                ))


@dataclass
class _WaitingCall:
    """One SeededTokenCompleter call waiting for its request to be sent."""

    model_input: tinker.ModelInput
    stop: StopCondition
    max_tokens: int
    seed: int
    result: asyncio.Future

    def same_request_as(self, previous: _WaitingCall) -> bool:
        return (self.seed == previous.seed + 1 and self.max_tokens == previous.max_tokens
                and self.stop == previous.stop and self.model_input == previous.model_input)


def make_env(problem: TaskItem, renderer: renderers.Renderer, few_shot: bool) -> MathEnv:
    prefix = MathEnv.standard_fewshot_prefix() if few_shot else None
    return MathEnv(problem.question, problem.answer, renderer, convo_prefix=prefix)


def prompt_tokens(problem: TaskItem, renderer: renderers.Renderer, few_shot: bool) -> tinker.ModelInput:
    """The exact prompt the env shows the policy (same code path as the env itself)."""
    env = make_env(problem, renderer, few_shot)
    convo = env.convo_prefix + [{"role": "user", "content": env.get_question()}]
    return renderer.build_generation_prompt(convo)


async def prompt_features(
    sampling_client: tinker.SamplingClient,
    renderer: renderers.Renderer,
    problems: Sequence[TaskItem],
    few_shot: bool,
) -> list[tuple[float, float]]:
    """GS1 raw prompt features: (prompt-token length, mean prompt-token logprob).

    phi = (log length, mean logprob), standardized, is built by the kernel baseline itself.
    The logprob is the sampling policy's, computed with the sampler before any rollout.
    The first token has no logprob (nothing conditions it) and is left out of the mean.
    """
    prompts = [prompt_tokens(p, renderer, few_shot) for p in problems]
    logprobs_per_prompt = await asyncio.gather(
        *[answered(sampling_client.compute_logprobs(prompt)) for prompt in prompts]
    )
    features = []
    for prompt, logprobs in zip(prompts, logprobs_per_prompt):
        scored = [lp for lp in logprobs if lp is not None]
        features.append((float(prompt.length), sum(scored) / len(scored)))
    return features


async def collect_rollouts(
    sampling_client: tinker.SamplingClient,
    renderer: renderers.Renderer,
    problems: Sequence[TaskItem],
    arm: RLArmSettings,
    base_seed: int,
    first_index: int = 0,
) -> list[TrajectoryGroup]:
    """One cookbook group rollout per problem, group_size samples each, graded by the env.

    Problem i of a list draws its group from base_seed + i * group_size; `first_index` numbers the
    problems from there, so problems k.. of a list rolled out on their own (first_index=k) get the
    very samples they get in the whole list (the service draws a seed's samples whatever else runs)."""
    groups = []
    for index, problem in enumerate(problems, start=first_index):
        builder = ProblemGroupBuilder(
            env_thunk=partial(make_env, problem, renderer, arm.few_shot),
            num_envs=arm.group_size,
            dataset_name=arm.name,
        )
        policy = SeededTokenCompleter(
            sampling_client, arm.max_tokens, arm.temperature,
            base_seed=base_seed + index * arm.group_size, group_size=arm.group_size,
        )
        groups.append(do_group_rollout(builder, policy))
    return list(await asyncio.gather(*groups))


def rollout_seed(arm: RLArmSettings, step: int) -> int:
    """Seed of the first rollout of a step; distinct per (arm seed, step), stable across runs."""
    return (arm.seed * 1_000_003 + step * 10_007) % (2**31)


def training_datums(groups: list[TrajectoryGroup], advantages: list[list[float]]) -> list[tinker.Datum]:
    """The cookbook's assembly (sampling logprobs, advantages, prompt masked), mask removed.

    The cookbook keeps a client-side ``mask`` input and strips it before sending
    (``rl.train._remove_mask``); the importance_sampling loss takes target_tokens,
    logprobs and advantages only.
    """
    data, _ = assemble_training_data(groups, [torch.tensor(a) for a in advantages])
    return [
        tinker.Datum(
            model_input=d.model_input,
            loss_fn_inputs={k: v for k, v in d.loss_fn_inputs.items() if k != "mask"},
        )
        for d in data
    ]


def kernel_batch(
    groups: Sequence[TrajectoryGroup], features: Sequence[tuple[float, float]]
) -> tuple[list[float], list[float], list[float]]:
    """(rewards, prompt lengths, mean prompt logprobs), one of each per rollout, group-major: every rollout of
    a prompt shares its prompt's features (GS1 samples one rollout per prompt; a kernel arm with a larger
    group_size, several). The kernel window holds rollouts, so the batch and the window are both built from
    these (gs1_kernel_advantages, append_batch_to_window)."""
    if len(features) != len(groups):
        raise ValueError(f"{len(features)} prompt features for {len(groups)} groups")
    rows = [(reward, f[0], f[1]) for f, group in zip(features, groups) for reward in group.get_total_rewards()]
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def arm_advantages(
    arm: RLArmSettings,
    groups: list[TrajectoryGroup],
    features: list[tuple[float, float]],
    kernel_state: KernelBaselineState | None,
) -> tuple[list[list[float]], dict[str, Any]]:
    """Advantages per group (group-major), plus the kernel diagnostics for GS1."""
    rewards_per_group = [list(g.get_total_rewards()) for g in groups]
    if arm.advantage == GROUP_MEAN:
        return grpo_group_mean_advantages(rewards_per_group), {}
    if kernel_state is None:
        raise ValueError(f"arm {arm.name}: the kernel baseline needs a KernelBaselineState")
    rewards, lengths, mean_logprobs = kernel_batch(groups, features)
    flat, diagnostics = gs1_kernel_advantages(
        rewards, lengths, mean_logprobs, kernel_state,
        bandwidth=arm.kernel_bandwidth, window_size=arm.kernel_window,
        min_kernel_mass=arm.kernel_min_mass,
    )
    per_group, offset = [], 0
    for group in rewards_per_group:
        per_group.append([float(a) for a in flat[offset : offset + len(group)]])
        offset += len(group)
    return per_group, diagnostics.as_dict()


async def train_one_step(
    training_client: tinker.TrainingClient,
    renderer: renderers.Renderer,
    arm: RLArmSettings,
    order: Sequence[TaskItem],
    step: int,
    kernel_state: KernelBaselineState | None = None,
    apply_update: bool = True,
) -> tuple[StepRecord, KernelBaselineState | None]:
    """Run one full RL step of one arm; with apply_update=False it stops before optim_step.

    Returns the step's record and the kernel window to use next step (GS1 arms; the
    window only grows when the update was applied, so a pilot never leaks into training).
    """
    started = time.perf_counter()
    problems = step_problems(order, arm, step)
    sampler = await answered(training_client.save_weights_and_get_sampling_client())

    features: list[tuple[float, float]] = []
    if arm.advantage == KERNEL_BASELINE:
        features = await prompt_features(sampler, renderer, problems, arm.few_shot)

    groups = await collect_rollouts(sampler, renderer, problems, arm, rollout_seed(arm, step))
    advantages, diagnostics = arm_advantages(arm, groups, features, kernel_state)
    datums = training_datums(groups, advantages)

    fwd_bwd_result = await answered(training_client.forward_backward(datums, loss_fn="importance_sampling"))

    optim_seconds = 0.0
    if apply_update:
        optim_started = time.perf_counter()
        await answered(training_client.optim_step(arm.adam_params()))
        optim_seconds = time.perf_counter() - optim_started
        if kernel_state is not None and arm.advantage == KERNEL_BASELINE:
            kernel_state = append_batch_to_window(kernel_state, *kernel_batch(groups, features))

    rewards = [r for g in groups for r in g.get_total_rewards()]
    flat_advantages = [a for group in advantages for a in group]
    n_action_tokens = sum(
        len(t.ac.tokens) for g in groups for traj in g.trajectories_G for t in traj.transitions
    )
    record = StepRecord(
        arm=arm.name,
        step=step,
        item_ids=[p.id for p in problems],
        rewards=rewards,
        advantages=flat_advantages,
        executed_group_size=len(rewards) / len({p.id for p in problems}),
        mean_reward=sum(rewards) / len(rewards),
        loss_sum=float(fwd_bwd_result.metrics.get("loss:sum", float("nan"))),
        n_datums=len(datums),
        n_action_tokens=n_action_tokens,
        optim_seconds=optim_seconds,
        step_seconds=time.perf_counter() - started,
        baseline_values=list(diagnostics.get("baseline", [])),
        effective_neighbors=list(diagnostics.get("effective_neighbors", [])),
        kernel_fallbacks=int(sum(diagnostics.get("fell_back", []))),
        prompt_features=features,
    )
    return record, kernel_state
