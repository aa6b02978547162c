"""The sampling engine in-process (no server): same tokens as the plain decoder, per-request
determinism whatever else runs, continuous batching, incremental stop strings."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import functools
import threading

import numpy as np
import pytest
import torch

import embedded_tinker.sampling as sampling_module
from embedded_tinker.model import LoraAdapter, LoraConfig, load_base_model
from embedded_tinker.sampling import (
    BatchParams,
    SampleJob,
    SamplerWeights,
    SamplingEngine,
    SamplingError,
    SamplingSpec,
    _tokenizer,
    choose_token,
    choose_tokens,
    exponential_noise,
    generate,
    tail_has_stop_string,
)
from suite import transformers_reference


def spec(**overrides) -> SamplingSpec:
    values = dict(
        max_tokens=12, temperature=1.0, top_k=-1, top_p=1.0, seed=0, stop_token_ids=(), stop_strings=()
    )
    return SamplingSpec(**{**values, **overrides})


MIXED_SPECS = [
    dict(temperature=0.0),
    dict(seed=5),
    dict(seed=7, top_k=20),
    dict(seed=9, top_p=0.8),
    dict(seed=3, temperature=0.7, top_k=50, top_p=0.9),
    dict(seed=11, stop_token_ids=(2,)),
    dict(temperature=0.0, stop_token_ids=(2,), max_tokens=20),
    dict(seed=2, max_tokens=3),
    dict(seed=4, max_tokens=30, temperature=1.3),
]


@functools.cache
def transformers_model(name: str) -> torch.nn.Module:
    """transformers' own model of a base model, with the adapter hooks (suite.transformers_reference)."""
    return transformers_reference(load_base_model(name).spec)


def plain_decode(weights: SamplerWeights, job: SampleJob) -> list[tuple[list[int], list[float], str]]:
    """The reference: each row decoded alone through the transformers forward with its KV cache,
    one choose_token per step from torch.Generator(seed + i) (how the embedded sampler has always
    drawn). Stop strings are not used here."""
    from transformers import DynamicCache

    base, spec_ = weights.base, job.spec
    reference = transformers_model(base.name)
    rows = []
    for i in range(job.num_samples):
        generator = torch.Generator().manual_seed(spec_.seed + i)
        cache, tokens, logprobs, reason = DynamicCache(), [], [], "length"
        with torch.inference_mode(), base.active(weights.adapter):
            logits = reference(
                input_ids=torch.tensor([job.prompt]), past_key_values=cache, use_cache=True
            ).logits[0, -1]
            for _ in range(spec_.max_tokens):
                token = choose_token(logits, spec_, generator)
                tokens.append(token)
                logprobs.append(float(torch.log_softmax(logits, -1)[token]))
                if token in spec_.stop_token_ids:
                    reason = "stop"
                    break
                logits = reference(
                    input_ids=torch.tensor([[token]]), past_key_values=cache, use_cache=True
                ).logits[0, -1]
        rows.append((tokens, logprobs, reason))
    return rows


def lora_weights() -> SamplerWeights:
    """tiny-arith with a rank-4 adapter whose B is not zero (so the adapter changes the tokens)."""
    base = load_base_model("embedded/tiny-arith")
    adapter = LoraAdapter(base, LoraConfig(rank=4, seed=1))
    with torch.no_grad():
        for index, tensor in enumerate(adapter.lora_B.values()):
            tensor.copy_(torch.randn(tensor.shape, generator=torch.Generator().manual_seed(index)) * 0.05)
    return SamplerWeights(base, adapter.frozen_copy(), "tiny-arith@lora")


@pytest.fixture(scope="module", params=["base", "lora"])
def weights(request):
    if request.param == "base":
        return SamplerWeights(load_base_model("embedded/tiny-arith"), None, "tiny-arith@base")
    return lora_weights()


def prompts(count: int, seed: int = 0) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(3, 500, int(rng.integers(2, 30))).tolist() for _ in range(count)]


def row_by_row(logits: torch.Tensor, specs, first_seed: int) -> tuple[list[int], torch.Tensor]:
    """choose_token's pick for each row (row r seeded first_seed + r) and the Exp(1) noise
    [rows, vocab] those same generators draw, for choose_tokens."""
    seeds = [first_seed + r for r in range(len(specs))]
    expected = [
        choose_token(row, s, torch.Generator().manual_seed(seed))
        for row, s, seed in zip(logits, specs, seeds)
    ]
    vocab = logits.shape[1]
    noise = torch.stack(
        [torch.empty(vocab).exponential_(generator=torch.Generator().manual_seed(s)) for s in seeds]
    )
    return expected, noise


def test_vectorised_choice_is_choose_token_row_by_row():
    rng = torch.Generator().manual_seed(0)
    logits = torch.randn(len(MIXED_SPECS) * 4, 64, generator=rng) * 3
    specs = [spec(**MIXED_SPECS[r % len(MIXED_SPECS)]) for r in range(logits.shape[0])]
    expected, noise = row_by_row(logits, specs, first_seed=100)
    chosen = choose_tokens(logits, BatchParams.of(specs, 64), noise)
    assert chosen.tolist() == expected


@pytest.mark.parametrize("seed", [0, 1, 7, 123456789, 2**62 - 1])
def test_exponential_noise_is_what_exponential_draws(seed):
    """The engine draws float64 uniforms and transforms them in place (exponential_noise); that must
    be exponential_ on float32, bit for bit, in chunks of any size, and leave the generator where
    exponential_ leaves it."""
    drawn, reference = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    for rows in (1, 16, 5, 64):
        uniforms = torch.empty(rows, 512, dtype=torch.float64).uniform_(generator=drawn)
        expected = torch.empty(rows, 512).exponential_(generator=reference)
        assert torch.equal(exponential_noise(uniforms), expected)
    assert torch.equal(torch.rand(8, generator=drawn), torch.rand(8, generator=reference))


def test_vectorised_choice_at_unit_temperature_is_choose_token_row_by_row():
    """Every sampled row at temperature 1 (the engine then skips dividing by it), greedy rows mixed in."""
    rng = torch.Generator().manual_seed(1)
    unit = [s for s in MIXED_SPECS if s.get("temperature", 1.0) in (0.0, 1.0)]
    logits = torch.randn(len(unit) * 4, 64, generator=rng) * 3
    specs = [spec(**unit[r % len(unit)]) for r in range(logits.shape[0])]
    expected, noise = row_by_row(logits, specs, first_seed=200)
    params = BatchParams.of(specs, 64)
    assert not params.any_temperature and params.any_greedy
    assert choose_tokens(logits, params, noise).tolist() == expected


def test_engine_tokens_are_the_plain_decoders(weights):
    jobs = [SampleJob(weights, p, 2, spec(**s)) for p, s in zip(prompts(len(MIXED_SPECS)), MIXED_SPECS)]
    results = generate(weights, jobs)
    for job, result in zip(jobs, results, strict=True):
        reference = plain_decode(weights, job)
        for (tokens, logprobs, reason), (ref_tokens, ref_logprobs, ref_reason) in zip(
            result.sequences, reference, strict=True
        ):
            assert (tokens, reason) == (ref_tokens, ref_reason)
            assert logprobs == pytest.approx(ref_logprobs, abs=2e-5)


def test_a_folded_adapter_samples_what_the_adapter_added_at_every_linear_samples():
    """A lane folds its frozen adapter into the weights (W + scale * B @ A): the same tokens as adding
    the LoRA term at every linear (the training forward's way), logprobs to float rounding. Control: a
    lane whose fold drops the adapter's term samples other tokens, so the comparison can see a bad fold."""
    from embedded_tinker.sampling import _Lane

    weights = lora_weights()

    def run(lane_weights, merge_adapter):
        lane = _Lane(lane_weights, max_rows=64, merge_adapter=merge_adapter)
        jobs = [SampleJob(lane_weights, p, 2, spec(**{"max_tokens": 16, **s}))
                for p, s in zip(prompts(len(MIXED_SPECS), seed=21), MIXED_SPECS)]
        for job in jobs:
            lane.add(job)
        while lane.busy:
            lane.advance()
        return [row for job in jobs for row in job.future.result().sequences], lane

    folded, folded_lane = run(weights, merge_adapter=True)
    added, added_lane = run(weights, merge_adapter=False)
    assert folded_lane.adapter is None and added_lane.adapter is weights.adapter
    assert [(tokens, reason) for tokens, _, reason in folded] == [(tokens, reason) for tokens, _, reason in added]
    for (_, logprobs, _), (_, reference, _) in zip(folded, added, strict=True):
        assert logprobs == pytest.approx(reference, abs=2e-5)

    zeroed = weights.adapter.frozen_copy()
    with torch.no_grad():
        for tensor in zeroed.lora_B.values():
            tensor.zero_()  # what a fold that loses B @ A would serve
    dropped, _ = run(SamplerWeights(weights.base, zeroed, "tiny-arith@zeroed"), merge_adapter=True)
    assert [tokens for tokens, _, _ in dropped] != [tokens for tokens, _, _ in added]


def test_an_rl_group_shares_one_prefill_and_each_request_gets_its_own_tokens(weights, monkeypatch):
    """Eight requests of one sample each for the same prompt (how an RL group asks), beside other
    prompts: the prompt is prefilled once, and each request gets what the plain decoder gives it."""
    from embedded_tinker import sampling

    prefilled: list[int] = []
    real_prefill = sampling._Decoder.prefill

    def counting_prefill(self, batch, adapter):
        prefilled.append(len(batch))
        return real_prefill(self, batch, adapter)

    monkeypatch.setattr(sampling._Decoder, "prefill", counting_prefill)
    group_prompt, others = prompts(1, seed=11)[0], prompts(3, seed=12)
    group = [SampleJob(weights, group_prompt, 1, spec(seed=40 + i, max_tokens=10)) for i in range(8)]
    group[3] = SampleJob(weights, group_prompt, 1, spec(seed=43, max_tokens=10), want_prompt_logprobs=True)
    jobs = group[:4] + [SampleJob(weights, p, 2, spec(seed=60 + k)) for k, p in enumerate(others)] + group[4:]
    results = generate(weights, jobs)
    assert prefilled == [1 + len(others)]  # one prefill per distinct prompt, not one per request
    for job, result in zip(jobs, results, strict=True):
        for (tokens, logprobs, reason), (ref_tokens, ref_logprobs, ref_reason) in zip(
            result.sequences, plain_decode(weights, job), strict=True
        ):
            assert (tokens, reason) == (ref_tokens, ref_reason)
            # float32 products over other batch shapes round differently (2.6e-5 at -1.29 on an AVX-512 machine)
            assert logprobs == pytest.approx(ref_logprobs, rel=1e-4, abs=2e-5)
    shared = results[3].prompt_logprobs
    forward = weights.base.target_logprobs([group_prompt[:-1]], [group_prompt[1:]], weights.adapter)[0]
    assert shared[1:] == pytest.approx(forward.tolist(), rel=1e-4, abs=1e-5)


def test_sampled_logprobs_are_the_models_forward(weights):
    prompt = prompts(1, seed=3)[0]
    tokens, logprobs, _ = generate(weights, [SampleJob(weights, prompt, 1, spec(seed=21, max_tokens=16))])[
        0
    ].sequences[0]
    full = prompt + tokens
    forward = weights.base.target_logprobs([full[:-1]], [full[1:]], weights.adapter)[0]
    assert logprobs == pytest.approx(forward[len(prompt) - 1 :].tolist(), rel=1e-4, abs=1e-5)


class JoinWhileRunning:
    """A request that joins a batch already running, made deterministic (no sleep, no thread timing): the
    engine thread waits after the running jobs' first step until the joining request is queued, so it
    enters the lane at the next step boundary; when it does, whether each running job was still
    unfinished is recorded (`unfinished_at_join`). A sleep before submitting (the old way) let a loaded
    machine's scheduler decide: a main thread woken late found the running jobs finished."""

    def __init__(self, monkeypatch, running: list[SampleJob]):
        self.running = running
        self.stepped, self.queued = threading.Event(), threading.Event()
        self.joining: SampleJob | None = None
        self.unfinished_at_join: list[bool] | None = None
        self.unfinished_when_joined_done: list[bool] | None = None  # recorded by the engine thread as it finishes
        real_advance, real_add = sampling_module._Lane.advance, sampling_module._Lane.add

        def advance(lane) -> int:
            rows = real_advance(lane)
            if not self.queued.is_set():
                self.stepped.set()
                self.queued.wait(timeout=300)
            return rows

        def add(lane, job: SampleJob) -> None:
            if job is self.joining:
                self.unfinished_at_join = [not each.future.done() for each in self.running]
            real_add(lane, job)

        monkeypatch.setattr(sampling_module._Lane, "advance", advance)
        monkeypatch.setattr(sampling_module._Lane, "add", add)

    def join(self, engine: SamplingEngine, job: SampleJob):
        """Submit `job` once the running jobs have taken their first step; its future (`unfinished_at_join` is
        set when the engine takes the job in, before the future can be done)."""
        assert self.stepped.wait(timeout=300), "the running jobs never took a step"
        self.joining = job
        future = engine.submit(job)
        future.add_done_callback(  # runs in the engine thread the moment the joined job is done: no wake-up race
            lambda _: setattr(self, "unfinished_when_joined_done", [not each.future.done() for each in self.running]))
        self.queued.set()
        return future


def test_a_seeded_request_gives_the_same_tokens_whatever_shares_its_batch(weights, monkeypatch):
    job_spec = spec(seed=1234, max_tokens=24, top_p=0.95)
    prompt = prompts(1, seed=9)[0]
    alone = generate(weights, [SampleJob(weights, prompt, 3, job_spec)])[0].sequences
    others = [SampleJob(weights, p, 2, spec(**s)) for p, s in zip(prompts(6, seed=4), MIXED_SPECS)]
    crowded = generate(weights, others[:3] + [SampleJob(weights, prompt, 3, job_spec)] + others[3:])[
        3
    ].sequences
    assert [s[0] for s in crowded] == [s[0] for s in alone]
    # the same request joining a batch that is already running (continuous batching)
    engine = SamplingEngine()
    try:
        long_jobs = [
            SampleJob(weights, p, 4, spec(seed=s, max_tokens=120, temperature=1.0))
            for s, p in enumerate(prompts(2))
        ]
        running = JoinWhileRunning(monkeypatch, long_jobs)
        for job in long_jobs:
            engine.submit(job)
        joined = running.join(engine, SampleJob(weights, prompt, 3, job_spec)).result(timeout=120).sequences
        assert running.unfinished_at_join == [True, True]  # it joined while they ran
        for job in long_jobs:
            job.future.result(timeout=300)  # a main thread woken this late (a loaded machine) ...
        assert all(job.future.done() for job in long_jobs)  # ... found them done: where the old check
        # (`not all(job.future.done() ...)` after the join) failed; what the engine recorded still holds:
        assert running.unfinished_when_joined_done == [True, True]  # it finished first: 24 steps, they need 120
    finally:
        engine.stop()
    assert [s[0] for s in joined] == [s[0] for s in alone]


def test_requests_join_and_leave_the_running_batch(monkeypatch):
    base = load_base_model("embedded/tiny-arith")
    weights = SamplerWeights(base, None, "tiny-arith@base")
    engine = SamplingEngine()
    finished_order: list[str] = []
    lock = threading.Lock()

    def note(name):
        def callback(_future):
            with lock:
                finished_order.append(name)

        return callback

    try:
        long_job = SampleJob(weights, [5, 6, 7], 2, spec(max_tokens=200, seed=1))
        running = JoinWhileRunning(monkeypatch, [long_job])
        engine.submit(long_job).add_done_callback(note("long"))
        short_job = SampleJob(weights, [9, 10], 1, spec(max_tokens=4, seed=2))
        running.join(engine, short_job).add_done_callback(note("short"))
        assert len(short_job.future.result(timeout=120).sequences[0][0]) == 4
        assert running.unfinished_at_join == [True]  # it joined while the long job ran
        long_job.future.result(timeout=300)
    finally:
        engine.stop()
    assert finished_order == ["short", "long"]


def test_the_engine_reports_requests_and_steps():
    base = load_base_model("embedded/tiny-arith")
    weights = SamplerWeights(base, None, "tiny-arith@base")
    engine = SamplingEngine()
    try:
        jobs = [
            SampleJob(weights, [5, 6, 7], 2, spec(max_tokens=6, seed=1)),
            SampleJob(weights, [9], 1, spec(max_tokens=4)),
        ]
        for job in jobs:
            engine.submit(job)
        for job in jobs:
            job.future.result(timeout=120)
    finally:
        engine.stop(wait=True)  # a step's counters are added after its requests are answered
    report = engine.report()
    assert report["requests"] == 2 and len(report["recent_submits"]) == 2
    assert report["row_steps"] == 2 * 6 + 4  # one token per row and step
    assert report["steps"] >= 6
    assert report["step_seconds"] > 0 and report["last_step_end"] >= report["recent_submits"][-1]
    assert len(report["recent_steps"]) == report["steps"]
    assert sum(rows for *_, rows in report["recent_steps"]) == report["row_steps"]


def test_a_bad_request_fails_alone(weights):
    too_long = SampleJob(weights, [5] * weights.base.max_context_length, 1, spec())
    fine = SampleJob(weights, [5, 6, 7], 1, spec(max_tokens=3))
    engine = SamplingEngine()
    try:
        engine.submit(too_long)
        engine.submit(fine)
        with pytest.raises(SamplingError, match="no room"):
            too_long.future.result(timeout=60)
        assert len(fine.future.result(timeout=60).sequences[0][0]) == 3
    finally:
        engine.stop()


def test_stop_strings_found_in_the_tail_as_in_the_whole_text():
    base = load_base_model("embedded/tiny-arith")
    tokenizer = _tokenizer(base.tokenizer_dir)
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(300):
        tokens = rng.integers(0, base.config.vocab_size, 60).tolist()
        text = tokenizer.decode(tokens)
        start = int(rng.integers(0, max(1, len(text) - 6)))
        stop = (text[start : start + int(rng.integers(1, 7))] or "x",)
        if "\ufffd" in stop[0]:  # a piece of a split character: not a stop string anyone sends
            continue
        first_whole = next((n for n in range(1, 61) if stop[0] in tokenizer.decode(tokens[:n])), None)
        first_tail = next(
            (n for n in range(1, 61) if tail_has_stop_string(tokens[:n], stop, tokenizer)), None
        )
        assert first_tail == first_whole, (tokens, stop)
        checked += first_whole is not None
    assert checked > 100


def test_stop_string_ends_the_row_with_the_completing_token():
    base = load_base_model("embedded/tiny-arith")
    weights = SamplerWeights(base, None, "tiny-arith@base")
    prompt = [5, 6, 7, 8]
    free = generate(weights, [SampleJob(weights, prompt, 1, spec(temperature=0.0, max_tokens=20))])[
        0
    ].sequences[0][0]
    tokenizer = _tokenizer(base.tokenizer_dir)
    stop_text = tokenizer.decode(free[5:7])
    stopped = generate(
        weights,
        [SampleJob(weights, prompt, 1, spec(temperature=0.0, max_tokens=20, stop_strings=(stop_text,)))],
    )[0].sequences[0]
    whole = next(n for n in range(1, 21) if stop_text in tokenizer.decode(free[:n]))
    assert stopped[0] == free[:whole] and stopped[2] == "stop"


def test_a_seeded_burst_of_equal_length_requests_gives_each_request_its_tokens_alone(weights):
    """The benchmark's shape: requests with prompts of one length, sampled at temperature 1 without
    stopping early, decoded as one running batch; each gets the tokens it gets decoded alone, and
    its logprobs to float rounding (matrix products over 12 rows and over 1 round differently)."""
    rng = np.random.default_rng(31)
    burst = [
        SampleJob(weights, rng.integers(3, 500, 16).tolist(), 1, spec(seed=500 + i, max_tokens=40))
        for i in range(12)
    ]
    together = generate(weights, burst)
    for job, result in zip(burst, together, strict=True):
        alone = generate(weights, [SampleJob(weights, job.prompt, 1, job.spec)])[0]
        (tokens, logprobs, reason), = result.sequences
        (alone_tokens, alone_logprobs, alone_reason), = alone.sequences
        assert (tokens, reason) == (alone_tokens, alone_reason) and len(tokens) == 40
        assert logprobs == pytest.approx(alone_logprobs, abs=2e-5)


def plain_linear(fused, x, adapter):
    """_Fused's product as F.linear computes it (the decoder's before it ran torch.mm on the
    transposed weight), with the adapter's term as _Fused adds it."""
    y = torch.nn.functional.linear(x, fused.weight, fused.bias)
    if not fused.adapted_by(adapter):
        return y
    return y + torch.cat(
        [adapter.scale * ((x @ adapter.lora_A[name].T) @ adapter.lora_B[name].T) if name in adapter.lora_A
         else x.new_zeros(*x.shape[:-1], size) for name, size in zip(fused.names, fused.sizes)], dim=-1)


def test_the_decode_fast_path_changes_no_token_and_only_float_rounding(weights, monkeypatch):
    """What the decode step's shortcuts rely on, on a batch that shrinks to two rows and to one (where the
    matrix-product kernels change): torch.mm on the weight's transposed view is F.linear, bit for bit; and
    attending over ATTENTION_BLOCK-rounded widths gives the tokens attending over the whole cache gives, the
    logprobs to float rounding (the masked positions add exact zeros, but the products' kernels may order
    their sums by width: bit for bit on the AVX2 machines this was first measured on, 1.4e-6 apart on an
    AVX-512 one). Control: the same comparison sees a mask that lets the padding in."""
    jobs = [SampleJob(weights, p, 1, spec(seed=70 + i, max_tokens=m, temperature=t))
            for i, (p, m, t) in enumerate(zip(prompts(5, seed=8), (3, 9, 17, 26, 41), (1.0, 0.0, 0.7, 1.0, 1.3)))]

    def run(*patches):
        """Each job's sequences, decoded as one batch with ``patches`` (object, attribute, value) applied."""
        with monkeypatch.context() as patched:
            for target, name, value in patches:
                patched.setattr(target, name, value)
            fresh = [SampleJob(weights, job.prompt, 1, job.spec) for job in jobs]
            return [result.sequences for result in generate(weights, fresh)]

    def same_tokens_and_logprobs_within(tolerance, mine, theirs):
        return all(
            (tokens, reason) == (their_tokens, their_reason) and logprobs == pytest.approx(their_logprobs, abs=tolerance)
            for rows, their_rows in zip(mine, theirs, strict=True)
            for (tokens, logprobs, reason), (their_tokens, their_logprobs, their_reason) in zip(rows, their_rows, strict=True))

    whole_cache = (sampling_module, "ATTENTION_BLOCK", 10**6)
    fast = run()
    assert run((sampling_module._Fused, "__call__", plain_linear)) == fast  # tokens, logprobs: exactly
    assert same_tokens_and_logprobs_within(1e-5, run((sampling_module._Fused, "__call__", plain_linear), whole_cache), fast)
    decoder = sampling_module._Lane(weights, max_rows=1).decoder  # the (folded) decoder the lanes use
    never_masked = torch.zeros_like(decoder.position_ids)  # no key position is after any query's
    leaky = run((decoder, "position_ids", never_masked), whole_cache)
    assert not same_tokens_and_logprobs_within(1e-5, leaky, fast)
