"""Batched sampling with a KV cache.

Sample requests are queued; one sampler thread collects a burst of requests (each arriving
within ``collect_window_s`` of the previous one, for at most ``max_collect_s``), groups it by
weights (base model + LoRA snapshot) and decodes each group as one left-padded batch: one
prefill, then one token per step for every row, reusing the transformers KV cache. A request
with ``num_samples = n`` contributes n rows.

Per row:
    temperature 0      greedy argmax
    temperature > 0    softmax(logits / temperature), restricted to the top_k tokens (top_k > 0)
                       and to the smallest set with probability >= top_p (top_p < 1)
    seed               row i of a request draws from torch.Generator().manual_seed(seed + i);
                       without a seed, from a fresh random seed
    stop               None: the model's EOS token(s); a list of token ids or strings replaces
                       that ([] = never stop early). The stop token / the token completing a
                       stop string is included in the output, stop_reason "stop"; otherwise
                       "length" after max_tokens.
    logprobs           the model's log-probabilities of the chosen tokens at temperature 1
                       without top-k/top-p truncation: the same numbers forward() returns.

Repeating a request with the same seed gives the same tokens. (Rows batched with different
companions see different padding; their float32 results can differ in the last bits.)
"""

from __future__ import annotations

import queue
import secrets
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from .model import BaseModel, LoraAdapter

DEFAULT_MAX_TOKENS = 256


class SamplingError(ValueError):
    """Bad sampling request (a user error)."""


@dataclass(frozen=True)
class SamplerWeights:
    """What a sampling session samples from: a base model plus an optional frozen adapter."""

    base: BaseModel
    adapter: LoraAdapter | None
    identity: str  # equal identity <=> same weights; used to batch requests together


@dataclass(frozen=True)
class SamplingSpec:
    max_tokens: int
    temperature: float
    top_k: int
    top_p: float
    seed: int | None
    stop_token_ids: tuple[int, ...]
    stop_strings: tuple[str, ...]

    @classmethod
    def from_request(cls, params: dict, base: BaseModel) -> SamplingSpec:
        stop = params.get("stop")
        stop_token_ids: tuple[int, ...] = tuple(base.eos_token_ids)
        stop_strings: tuple[str, ...] = ()
        if stop is not None:
            items = [stop] if isinstance(stop, str) else list(stop)
            stop_strings = tuple(s for s in items if isinstance(s, str))
            stop_token_ids = tuple(int(s) for s in items if not isinstance(s, str))
        spec = cls(
            max_tokens=int(params.get("max_tokens") or DEFAULT_MAX_TOKENS),
            temperature=float(params.get("temperature", 1.0)),
            top_k=int(params.get("top_k", -1)),
            top_p=float(params.get("top_p", 1.0)),
            seed=None if params.get("seed") is None else int(params["seed"]),
            stop_token_ids=stop_token_ids,
            stop_strings=stop_strings,
        )
        if spec.max_tokens < 1 or spec.temperature < 0 or not (0 < spec.top_p <= 1):
            raise SamplingError("need max_tokens >= 1, temperature >= 0 and 0 < top_p <= 1")
        return spec


@dataclass
class SampleJob:
    weights: SamplerWeights
    prompt: list[int]
    num_samples: int
    spec: SamplingSpec
    want_prompt_logprobs: bool = False
    prompt_logprobs_last_n: int | None = None
    future: Future = field(default_factory=Future)


@dataclass
class SampleResult:
    sequences: list[tuple[list[int], list[float], str]]  # tokens, logprobs, stop_reason
    prompt_logprobs: list[float] | None  # NaN where not computed (position 0, before last_n)


@dataclass
class _Row:
    job: SampleJob
    generator: torch.Generator | None
    max_tokens: int
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    stop_reason: str | None = None


@lru_cache(maxsize=8)
def _tokenizer(tokenizer_dir: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tokenizer_dir)


def choose_token(logits: torch.Tensor, spec: SamplingSpec, generator: torch.Generator | None) -> int:
    if spec.temperature == 0:
        return int(torch.argmax(logits))
    scaled = logits.float() / spec.temperature
    if 0 < spec.top_k < scaled.numel():
        kth_largest = torch.topk(scaled, spec.top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth_largest, float("-inf"))
    if spec.top_p < 1:
        sorted_logits, order = torch.sort(scaled, descending=True)
        sorted_probs = torch.softmax(sorted_logits, dim=-1)
        mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
        sorted_logits = sorted_logits.masked_fill(mass_before >= spec.top_p, float("-inf"))
        scaled = torch.full_like(scaled, float("-inf")).scatter(0, order, sorted_logits)
    probs = torch.softmax(scaled, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


def _stops(row: _Row, token: int, tokenizer_dir: str) -> bool:
    spec = row.job.spec
    if token in spec.stop_token_ids:
        return True
    if spec.stop_strings:
        text = _tokenizer(tokenizer_dir).decode(row.tokens)
        return any(stop in text for stop in spec.stop_strings)
    return False


@torch.inference_mode()
def generate(weights: SamplerWeights, jobs: list[SampleJob]) -> list[SampleResult]:
    """Decode every row of ``jobs`` (which share ``weights``) as one batch."""
    from transformers import DynamicCache

    base = weights.base
    rows: list[_Row] = []
    for job in jobs:
        room = base.max_context_length - len(job.prompt)
        if room < 1:
            raise SamplingError(
                f"prompt of {len(job.prompt)} tokens leaves no room in the "
                f"{base.max_context_length}-token context"
            )
        for i in range(job.num_samples):
            seed = job.spec.seed + i if job.spec.seed is not None else secrets.randbits(62)
            rows.append(_Row(job, torch.Generator().manual_seed(seed), min(job.spec.max_tokens, room)))

    width = max(len(row.job.prompt) for row in rows)
    input_ids = torch.zeros(len(rows), width, dtype=torch.long)
    attention_mask = torch.zeros(len(rows), width, dtype=torch.long)
    for r, row in enumerate(rows):
        n = len(row.job.prompt)
        input_ids[r, width - n :] = torch.tensor(row.job.prompt, dtype=torch.long)
        attention_mask[r, width - n :] = 1
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    want_prompt_logprobs = any(job.want_prompt_logprobs for job in jobs)

    cache = DynamicCache()
    with base.active(weights.adapter):
        logits = base.hf_model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=0 if want_prompt_logprobs else 1,
        ).logits.float()
        prompt_logprobs = _prompt_logprobs(jobs, rows, logits, width)
        next_logits = logits[:, -1, :]
        next_position = position_ids[:, -1] + 1
        for _step in range(max(row.max_tokens for row in rows)):
            step_logprobs = torch.log_softmax(next_logits, dim=-1)
            fed_tokens = torch.zeros(len(rows), dtype=torch.long)
            for r, row in enumerate(rows):
                if row.stop_reason is not None:
                    continue
                token = choose_token(next_logits[r], row.job.spec, row.generator)
                row.tokens.append(token)
                row.logprobs.append(float(step_logprobs[r, token]))
                fed_tokens[r] = token
                if _stops(row, token, base.tokenizer_dir):
                    row.stop_reason = "stop"
                elif len(row.tokens) >= row.max_tokens:
                    row.stop_reason = "length"
            if all(row.stop_reason is not None for row in rows):
                break
            attention_mask = torch.cat([attention_mask, torch.ones(len(rows), 1, dtype=torch.long)], dim=1)
            next_logits = (
                base.hf_model(
                    input_ids=fed_tokens[:, None],
                    attention_mask=attention_mask,
                    position_ids=next_position[:, None],
                    past_key_values=cache,
                    use_cache=True,
                )
                .logits[:, -1, :]
                .float()
            )
            next_position = next_position + 1

    results = []
    for job in jobs:
        job_rows = [row for row in rows if row.job is job]
        results.append(
            SampleResult(
                sequences=[(row.tokens, row.logprobs, row.stop_reason or "length") for row in job_rows],
                prompt_logprobs=prompt_logprobs.get(id(job)),
            )
        )
    return results


def _prompt_logprobs(jobs, rows, logits, width) -> dict[int, list[float]]:
    """log p(prompt[t] | prompt[:t]) per job that asked for it; NaN at 0 and before last_n."""
    found = {}
    for job in jobs:
        if not job.want_prompt_logprobs:
            continue
        r = next(i for i, row in enumerate(rows) if row.job is job)
        n = len(job.prompt)
        job_logits = logits[r, width - n : width - 1]  # predicts prompt[1:]
        logprobs = torch.log_softmax(job_logits, dim=-1).gather(
            -1, torch.tensor(job.prompt[1:], dtype=torch.long)[:, None]
        )[:, 0]
        values = [float("nan")] + logprobs.tolist()
        if job.prompt_logprobs_last_n is not None:
            first_scored = n - job.prompt_logprobs_last_n
            values = [float("nan") if t < first_scored else v for t, v in enumerate(values)]
        found[id(job)] = values
    return found


class BatchedSampler:
    """One thread that batches queued SampleJobs by weights and runs ``generate``."""

    def __init__(
        self, collect_window_s: float = 0.01, max_collect_s: float = 0.1, max_rows_per_batch: int = 128
    ):
        self.collect_window_s = collect_window_s
        self.max_collect_s = max_collect_s
        self.max_rows_per_batch = max_rows_per_batch
        self._queue: queue.Queue[SampleJob | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="embedded-sampler", daemon=True)
        self._thread.start()

    def submit(self, job: SampleJob) -> Future:
        self._queue.put(job)
        return job.future

    def stop(self) -> None:
        self._queue.put(None)

    def _collect(self) -> list[SampleJob] | None:
        """The next batch: wait for one job, then keep taking jobs while they arrive less than
        collect_window_s apart, for at most max_collect_s (a burst of concurrent requests
        becomes one batch; a lone request waits only collect_window_s)."""
        first = self._queue.get()
        if first is None:
            return None
        jobs = [first]
        give_up_at = time.monotonic() + self.max_collect_s
        while (timeout := min(self.collect_window_s, give_up_at - time.monotonic())) > 0:
            try:
                job = self._queue.get(timeout=timeout)
            except queue.Empty:
                break
            if job is None:
                self._queue.put(None)
                break
            jobs.append(job)
        return jobs

    def _run(self) -> None:
        while (jobs := self._collect()) is not None:
            by_weights: dict[str, list[SampleJob]] = {}
            for job in jobs:
                by_weights.setdefault(job.weights.identity, []).append(job)
            for group in by_weights.values():
                for batch in self._split(group):
                    self._run_batch(batch)

    def _split(self, group: list[SampleJob]) -> list[list[SampleJob]]:
        batches, current, rows = [], [], 0
        for job in group:
            if current and rows + job.num_samples > self.max_rows_per_batch:
                batches.append(current)
                current, rows = [], 0
            current.append(job)
            rows += job.num_samples
        return batches + [current] if current else batches

    def _run_batch(self, jobs: list[SampleJob]) -> None:
        try:
            results = generate(jobs[0].weights, jobs)
        except Exception as error:  # noqa: BLE001 - reported through each job's future
            for job in jobs:
                job.future.set_exception(error)
            return
        for job, result in zip(jobs, results, strict=True):
            job.future.set_result(result)
