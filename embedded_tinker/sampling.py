"""The sampling engine: continuous batching over a preallocated KV cache.

One engine thread owns every running decode. Sample requests (``SampleJob``) are queued; between
two decode steps the engine takes whatever has arrived, groups it by weights (base model + LoRA
snapshot) into *lanes* and admits it into the lane's running batch: one prefill for the joining
prompts, after which the new rows decode together with the rows already running. A row leaves the
batch as soon as it stops; a request is answered when its last row stops. Lanes take turns, one
step each. A request with ``num_samples = n`` contributes n rows (its prompt is prefilled once),
and requests that join together with the same prompt share one prefill: an RL group sends its
prompt once per sample, and at GS1's short answers the prefill is most of the sampling work.
An idle engine that receives a request first waits briefly for more (requests arriving less than
COLLECT_WINDOW_S apart, for at most MAX_COLLECT_S); concurrent SDK requests, which arrive one by
one about a millisecond apart, then join the running batch as they come.

The decoder (``_Decoder``) runs the base model's own weights with the same operations as the
transformers Qwen3 forward. A frozen adapter is folded into the weights once (and kept while the
adapter lives), W + scale * (B @ A) per targeted linear (``_Decoder.merged``), so a trained
checkpoint samples as fast as the base model (64 prompts x 32 tokens, rank 8: 1.6x faster than
adding the LoRA term at every linear, the same tokens, logprobs within 2.4e-5 of it: float
rounding). The decoder runs on a per-lane cache ``[rows, kv_heads, positions, head_dim]`` per layer
that is allocated once for the batch and grown only when a joining request needs more rows or
positions. Row r's tokens sit at positions 0.. of its slot (no padding in the cache); a finished row's slot is filled
by moving the last row into it, so the running batch is always the first n slots.

A decode step is a few hundred small tensor operations, so it is written to issue few of them:
q, k, v (and gate, up) are one matrix product each, torch.mm on the weight's transposed view kept
once (what F.linear runs, bit for bit, without its per-call dispatch; a contiguous transposed copy
would round differently for batches of one or two rows); the rotary tables are precomputed per
position with rotate_half's sign folded into the sine (one roll instead of slice/negate/concat);
the new keys and values are written in place into the cache at precomputed slots; attention is
one batched product over the live prefix (rounded up to ATTENTION_BLOCK positions) with an
additive mask; there is no host synchronisation per row, only one list of tokens and logprobs
per step. Where the work itself is measurable (64 rows of tiny-arith), the linears, the batched
attention products and the sampling noise are most of a step.

Per row, each step (vectorised over the batch):
    temperature 0      greedy argmax
    temperature > 0    softmax(logits / temperature), restricted to the top_k tokens (top_k > 0)
                       and to the smallest set with probability >= top_p (top_p < 1), drawn as
                       torch.multinomial draws it: argmax(probs / noise), noise ~ Exp(1) per token
    seed               row i of a request draws its noise from torch.Generator().manual_seed(seed + i)
                       (vocab-size draws per token, in order; drawn NOISE_CHUNK steps ahead as
                       float64 uniforms and turned into Exp(1) for the whole batch at once, bit for
                       bit what exponential_ draws: see exponential_noise); without a seed, from a
                       fresh random seed. The noise of a row depends only on its own seed and step,
                       never on the other rows in the batch.
    stop               None: the model's EOS token(s); a list of token ids or strings replaces
                       that ([] = never stop early). The stop token / the token completing a
                       stop string is included in the output, stop_reason "stop"; otherwise
                       "length" after max_tokens. Stop strings are looked for in the decoded
                       tail of the row (enough tokens to hold the longest stop string), not in
                       a re-decode of the whole output.
    logprobs           the model's log-probabilities of the chosen tokens at temperature 1
                       without top-k/top-p truncation: the same numbers forward() returns.

Repeating a request with the same seed gives the same tokens, whatever else is running. (The
float32 logits of a row can differ in the last bits with the batch it runs in, as matrix products
of different shapes round differently; a token changes only where two candidates tie to within
that rounding.)

``SamplingEngine.report()`` (healthz ``sampler``) counts requests, decode steps, rows decoded,
the wall and CPU seconds of the steps, and keeps the submit times of recent requests, so a
benchmark can see how a batch formed and what a step cost.
"""

from __future__ import annotations

import collections
import copy
import os
import queue
import secrets
import threading
import time
import weakref
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import nn

from .model import BaseModel, LoraAdapter

DEFAULT_MAX_TOKENS = 256
NOISE_CHUNK = 16  # steps of sampling noise drawn per row at a time
POSITION_BLOCK = 64  # the cache's position dimension grows in multiples of this
# decode steps attend over a multiple of this many positions (the masked positions add exact zeros, so
# the width changes no token; the products' kernels may order their sums by width, so logprobs can move by
# float rounding: none on AVX2, 1.4e-6 on AVX-512; of 1, 4, 8, 16 and 32, 8 was the fastest at 64 rows x 64 tokens)
ATTENTION_BLOCK = 8
RECENT_SUBMITS = 1024  # submit times kept for the engine's report
RECENT_STEPS = 256  # (end time, wall s, cpu s, rows) of the last steps, kept for the report
# an idle engine, given a request, waits for more while they keep arriving less than
# COLLECT_WINDOW_S apart, for at most MAX_COLLECT_S; env EMBEDDED_TINKER_COLLECT_WINDOW_S /
# EMBEDDED_TINKER_MAX_COLLECT_S override them. (Collecting a whole burst of 64 SDK requests,
# 6 ms / 150 ms, measured no faster than starting on the first ones: the requests that arrive
# later join the running batch, and the decode overlaps their arrival.)
COLLECT_WINDOW_S = 0.004
MAX_COLLECT_S = 0.02


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


@lru_cache(maxsize=8)
def _tokenizer(tokenizer_dir: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tokenizer_dir)


# ---------------------------------------------------------------------- token choice


def choose_token(logits: torch.Tensor, spec: SamplingSpec, generator: torch.Generator | None) -> int:
    """One row's token (the reference rule; the engine applies it to a whole batch at once)."""
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


@dataclass
class BatchParams:
    """Per-row sampling parameters of a batch, as tensors (row order = batch order)."""

    temperature: torch.Tensor  # float32 [n]; 1 for greedy rows
    greedy: torch.Tensor  # bool [n]
    top_k: torch.Tensor  # int64 [n]; <= 0: off
    top_p: torch.Tensor  # float32 [n]; 1: off
    all_greedy: bool
    any_greedy: bool
    any_temperature: bool  # a sampled row with temperature != 1 (else dividing by it is skipped)
    any_top_k: bool
    any_top_p: bool

    @classmethod
    def of(cls, specs: list[SamplingSpec], vocab_size: int) -> BatchParams:
        greedy = [s.temperature == 0 for s in specs]
        top_k = [s.top_k if 0 < s.top_k < vocab_size else 0 for s in specs]
        return cls(
            temperature=torch.tensor([1.0 if g else s.temperature for g, s in zip(greedy, specs)]),
            greedy=torch.tensor(greedy, dtype=torch.bool),
            top_k=torch.tensor(top_k, dtype=torch.long),
            top_p=torch.tensor([s.top_p for s in specs], dtype=torch.float32),
            all_greedy=all(greedy),
            any_greedy=any(greedy),
            any_temperature=any(s.temperature != 1 for g, s in zip(greedy, specs) if not g),
            any_top_k=any(k > 0 for g, k in zip(greedy, top_k) if not g),
            any_top_p=any(s.top_p < 1 for g, s in zip(greedy, specs) if not g),
        )


def choose_tokens(logits: torch.Tensor, params: BatchParams, noise: torch.Tensor | None) -> torch.Tensor:
    """``choose_token`` for every row of ``logits`` [n, vocab] at once; ``noise`` [n, vocab] holds
    each sampled row's Exp(1) draws (what multinomial would draw from the row's generator)."""
    if params.all_greedy:
        return torch.argmax(logits, dim=-1)
    scaled = logits / params.temperature[:, None] if params.any_temperature else logits  # x / 1 == x
    if params.any_top_k:
        sorted_desc = torch.sort(scaled, dim=-1, descending=True).values
        kth_largest = sorted_desc.gather(1, (params.top_k - 1).clamp(min=0)[:, None])
        scaled = scaled.masked_fill((scaled < kth_largest) & (params.top_k > 0)[:, None], float("-inf"))
    if params.any_top_p:
        sorted_logits, order = torch.sort(scaled, dim=-1, descending=True)
        sorted_probs = torch.softmax(sorted_logits, dim=-1)
        mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
        cut = (mass_before >= params.top_p[:, None]) & (params.top_p < 1)[:, None]
        sorted_logits = sorted_logits.masked_fill(cut, float("-inf"))
        scaled = torch.full_like(scaled, float("-inf")).scatter(1, order, sorted_logits)
    probs = torch.softmax(scaled, dim=-1)
    sampled = torch.argmax(probs.div_(noise), dim=-1)  # probs is this call's own tensor
    if not params.any_greedy:
        return sampled
    return torch.where(params.greedy, torch.argmax(logits, dim=-1), sampled)


def exponential_noise(uniforms: torch.Tensor) -> torch.Tensor:
    """Exp(1) noise from float64 uniform draws, bit for bit what ``exponential_`` on a float32
    tensor gives from the same generator: torch's CPU kernel draws one float64 uniform per element
    (as ``uniform_`` on a float64 tensor does) and returns float(-log1p(-u)). Drawing the uniforms
    per row and transforming the whole batch at once does half the work of ``exponential_``.
    Computed in place: ``uniforms`` is overwritten (no float64 intermediates are allocated)."""
    return uniforms.neg_().log1p_().neg_().float()


def stop_string_window(stop_strings: tuple[str, ...]) -> int:
    """Tokens of a row's tail to decode so that any stop string the newest token completes lies
    inside it, away from the tail's first token: a token is at least one byte and a character
    at most four, so 4 tokens per character plus a margin."""
    return 4 * max(len(s) for s in stop_strings) + 8


def tail_has_stop_string(tokens: list[int], stop_strings: tuple[str, ...], tokenizer) -> bool:
    text = tokenizer.decode(tokens[-stop_string_window(stop_strings) :])
    return any(stop in text for stop in stop_strings)


# ---------------------------------------------------------------------- the decoder


class _Fused:
    """Linear layers that read the same input, as one matrix product (outputs concatenated)."""

    def __init__(self, modules: list[tuple[str, nn.Linear]]):
        self.names = [name for name, _ in modules]
        self.sizes = [module.out_features for _, module in modules]
        self.weight = (
            torch.cat([module.weight for _, module in modules]) if len(modules) > 1 else modules[0][1].weight
        )
        biases = [module.bias for _, module in modules]
        self.bias = None
        if any(b is not None for b in biases):
            self.bias = torch.cat(
                [b if b is not None else torch.zeros(n) for b, n in zip(biases, self.sizes)]
            )
        self.weight_t = self.weight.t()  # transposed once (a view), for torch.mm on a decode step's rows

    def adapted_by(self, adapter: LoraAdapter | None) -> bool:
        """Whether ``adapter`` targets any of these linears."""
        return adapter is not None and any(name in adapter.lora_A for name in self.names)

    def merged(self, adapter: LoraAdapter) -> _Fused:
        """The same linears with ``adapter``'s term folded into the weight: W + scale * (B @ A) per
        targeted linear (one matrix product per call instead of three, whatever the rank)."""
        if not self.adapted_by(adapter):
            return self
        merged = copy.copy(self)
        rows = self.weight.split(self.sizes)
        merged.weight = torch.cat(
            [
                w + adapter.scale * (adapter.lora_B[name] @ adapter.lora_A[name]) if name in adapter.lora_A else w
                for name, w in zip(self.names, rows, strict=True)
            ]
        )
        merged.weight_t = merged.weight.t()
        return merged

    def __call__(self, x: torch.Tensor, adapter: LoraAdapter | None) -> torch.Tensor:
        if x.dim() == 2:  # what F.linear runs on 2-d input, without its dispatch and transpose per call
            y = torch.mm(x, self.weight_t) if self.bias is None else torch.addmm(self.bias, x, self.weight_t)
        else:
            y = F.linear(x, self.weight, self.bias)
        if not self.adapted_by(adapter):
            return y
        deltas = [
            (
                adapter.scale * ((x @ adapter.lora_A[name].T) @ adapter.lora_B[name].T)
                if name in adapter.lora_A
                else x.new_zeros(*x.shape[:-1], size)
            )
            for name, size in zip(self.names, self.sizes)
        ]
        return y + (torch.cat(deltas, dim=-1) if len(deltas) > 1 else deltas[0])


class _Decoder:
    """The Qwen3 forward of a base model, written out for prefill and single-token decode steps.

    Mirrors transformers' Qwen3ForCausalLM (RMSNorm, q/k norms, rotary embedding, grouped-query
    attention, SiLU MLP) on the model's parameters, with the linears that share an input (q, k, v;
    gate, up) run as one matrix product; a LoRA adapter's term is added to each targeted linear's
    output exactly as the forward hooks in model.py add it."""

    def __init__(self, base: BaseModel):
        # a qwen3.Qwen3Config: other model types, activations, RoPE kinds and sliding windows were
        # refused when the base model loaded
        config = base.config
        qwen3 = base.qwen3
        self.vocab_size = int(config.vocab_size)
        self.num_heads = int(config.num_attention_heads)
        self.num_kv_heads = int(config.num_key_value_heads)
        self.head_dim = int(config.head_dim)
        self.groups = self.num_heads // self.num_kv_heads
        self.scaling = self.head_dim**-0.5
        self.eps = float(config.rms_norm_eps)
        # the norm's epsilon as the float32 number a Python float is added as (without wrapping one per call)
        self.eps_float32 = torch.tensor(self.eps, dtype=torch.float32)
        self.max_positions = base.max_context_length
        self.embed = qwen3.model.embed_tokens.weight
        self.final_norm = qwen3.model.norm.weight
        self.layers = []
        with torch.no_grad():
            for index, layer in enumerate(qwen3.model.layers):
                attention, mlp, prefix = layer.self_attn, layer.mlp, f"model.layers.{index}"
                self.layers.append(
                    {
                        "input_norm": layer.input_layernorm.weight,
                        "post_norm": layer.post_attention_layernorm.weight,
                        # q heads then k heads, each normalised over head_dim with its own weight
                        "qk_norm": torch.cat(
                            [
                                attention.q_norm.weight.expand(self.num_heads, -1),
                                attention.k_norm.weight.expand(self.num_kv_heads, -1),
                            ]
                        ),
                        "qkv": _Fused(
                            [
                                (f"{prefix}.self_attn.{p}", getattr(attention, p))
                                for p in ("q_proj", "k_proj", "v_proj")
                            ]
                        ),
                        "o": _Fused([(f"{prefix}.self_attn.o_proj", attention.o_proj)]),
                        "gate_up": _Fused(
                            [(f"{prefix}.mlp.{p}", getattr(mlp, p)) for p in ("gate_proj", "up_proj")]
                        ),
                        "down": _Fused([(f"{prefix}.mlp.down_proj", mlp.down_proj)]),
                    }
                )
            self.lm_head = _Fused([("lm_head", qwen3.lm_head)])
        self.intermediate = int(config.intermediate_size)
        with torch.inference_mode():
            positions = torch.arange(self.max_positions)[None, :]
            cos, sin = qwen3.model.rotary_emb(self.embed[:1][None], positions)
        # the model's rotary tables [positions, 2, head_dim]: cos, and sin with the sign of
        # rotate_half folded in (rotate_half(x) * sin == roll(x, half) * signed sin, exactly)
        half = self.head_dim // 2
        signed_sin = torch.cat([-sin[0, :, :half], sin[0, :, half:]], dim=-1)
        self.rope = torch.stack([cos[0], signed_sin], dim=1)
        self.position_ids = torch.arange(self.max_positions)
        self._slot_starts = torch.zeros(0, dtype=torch.long)
        self._slot_starts_key = (0, 0)

    def merged(self, adapter: LoraAdapter) -> _Decoder:
        """This decoder with ``adapter`` folded into its weights (``_Fused.merged``): a frozen
        adapter's lane then runs as fast as the base model. Called with adapter None afterwards."""
        with torch.no_grad():
            merged = copy.copy(self)
            merged.layers = [
                {key: value.merged(adapter) if isinstance(value, _Fused) else value for key, value in layer.items()}
                for layer in self.layers
            ]
            merged.lm_head = self.lm_head.merged(adapter)
        return merged

    def slot_starts(self, n: int, allocated: int) -> torch.Tensor:
        """[n * kv_heads]: where (row, head)'s position 0 is in a cache [rows, kv_heads, allocated,
        head_dim] viewed as [rows * kv_heads * allocated, head_dim] (kept between steps)."""
        if self._slot_starts_key[1] != allocated or self._slot_starts_key[0] < n:
            rows = max(n, 2 * self._slot_starts_key[0]) if self._slot_starts_key[1] == allocated else n
            self._slot_starts = torch.arange(rows * self.num_kv_heads) * allocated
            self._slot_starts_key = (rows, allocated)
        return self._slot_starts[: n * self.num_kv_heads]

    def _rms(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(-1, keepdim=True)
        return weight * (x * variance.add_(self.eps_float32).rsqrt_())

    @staticmethod
    def _rotate(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
        return (x * cos).add_(x.roll(x.shape[-1] // 2, -1).mul_(signed_sin))

    def _qkv(self, x, layer, adapter, cos, sin):
        """Normalised, rotated queries and keys [..., heads, head_dim] and values."""
        h = self._rms(x, layer["input_norm"])
        qkv = layer["qkv"](h, adapter).unflatten(-1, (-1, self.head_dim))
        qk_heads = self.num_heads + self.num_kv_heads
        qk = self._rotate(self._rms(qkv[..., :qk_heads, :], layer["qk_norm"]), cos, sin)
        return qk[..., : self.num_heads, :], qk[..., self.num_heads :, :], qkv[..., qk_heads:, :]

    def _mlp(self, x, layer, adapter):
        h = self._rms(x, layer["post_norm"])
        gate_up = layer["gate_up"](h, adapter)
        gate, up = gate_up[..., : self.intermediate], gate_up[..., self.intermediate :]
        return x.add_(layer["down"](F.silu(gate).mul_(up), adapter))

    def logits(self, hidden: torch.Tensor, adapter: LoraAdapter | None) -> torch.Tensor:
        return self.lm_head(self._rms(hidden, self.final_norm), adapter)

    def prefill(self, prompts: list[list[int]], adapter: LoraAdapter | None):
        """Right-padded forward of ``prompts``: per layer (keys, values) [m, kv, P, head_dim] and
        the final hidden states [m, P, hidden] (before the last norm)."""
        m, width = len(prompts), max(len(p) for p in prompts)
        input_ids = torch.zeros(m, width, dtype=torch.long)
        for i, prompt in enumerate(prompts):
            input_ids[i, : len(prompt)] = torch.tensor(prompt, dtype=torch.long)
        mask = None
        if any(len(p) != width for p in prompts):
            lengths = torch.tensor([len(p) for p in prompts])
            key_valid = torch.arange(width)[None, :] < lengths[:, None]
            causal = torch.ones(width, width, dtype=torch.bool).tril()
            mask = (causal[None] & key_valid[:, None, :])[:, None]  # [m, 1, P, P]
        cos, sin = self.rope[None, :width, 0:1, :], self.rope[None, :width, 1:2, :]
        x = self.embed[input_ids]
        caches = []
        for layer in self.layers:
            q, k, v = (t.transpose(1, 2) for t in self._qkv(x, layer, adapter, cos, sin))
            caches.append((k, v))
            if mask is None:  # as transformers' sdpa path: no mask, causal, grouped heads
                attended = F.scaled_dot_product_attention(
                    q, k, v, is_causal=width > 1, scale=self.scaling, enable_gqa=True
                )
            else:
                attended = F.scaled_dot_product_attention(
                    q,
                    k.repeat_interleave(self.groups, dim=1),
                    v.repeat_interleave(self.groups, dim=1),
                    attn_mask=mask,
                    scale=self.scaling,
                )
            x = x + layer["o"](attended.transpose(1, 2).reshape(m, width, -1), adapter)
            x = self._mlp(x, layer, adapter)
        return caches, x

    def decode(
        self,
        tokens: torch.Tensor,
        positions: torch.Tensor,
        last_position: int,
        keys: list[torch.Tensor],
        values: list[torch.Tensor],
        adapter: LoraAdapter | None,
    ) -> torch.Tensor:
        """One step for n rows: token i at positions[i] (at most ``last_position``) of cache slot
        i; returns logits [n, vocab]."""
        n, kv_heads, head_dim = tokens.shape[0], self.num_kv_heads, self.head_dim
        # attend over a width that changes only every ATTENTION_BLOCK steps: the matrix-product
        # kernels are planned per shape, and re-planning at every step costs more than the
        # masked-out positions do
        allocated = keys[0].shape[2]
        width = min(-(-(last_position + 1) // ATTENTION_BLOCK) * ATTENTION_BLOCK, allocated)
        positions_kv = positions.repeat_interleave(kv_heads)  # [n * kv_heads], row-major
        # where each row's new key/value goes in a cache viewed as [rows * kv_heads * positions, head_dim]
        slots = self.slot_starts(n, allocated) + positions_kv
        bias = torch.where(self.position_ids[:width] > positions_kv[:, None], float("-inf"), 0.0)[:, None, :]
        rope = self.rope[positions]
        cos, sin = rope[:, 0:1], rope[:, 1:2]  # [n, 1, head_dim]
        x = self.embed[tokens]
        for layer, key_cache, value_cache in zip(self.layers, keys, values, strict=True):
            q, k, v = self._qkv(x, layer, adapter, cos, sin)
            key_cache.view(-1, head_dim).index_copy_(0, slots, k.reshape(-1, head_dim))
            value_cache.view(-1, head_dim).index_copy_(0, slots, v.reshape(-1, head_dim))
            scores = torch.baddbmm(
                bias,
                q.reshape(n * kv_heads, self.groups, head_dim),
                key_cache[:n, :, :width].reshape(n * kv_heads, width, head_dim).transpose(1, 2),
                alpha=self.scaling,
            )
            attended = torch.bmm(
                torch.softmax(scores, dim=-1),
                value_cache[:n, :, :width].reshape(n * kv_heads, width, head_dim),
            )
            x = x.add_(layer["o"](attended.view(n, -1), adapter))
            x = self._mlp(x, layer, adapter)
        return self.logits(x, adapter)


_decoders: weakref.WeakKeyDictionary[BaseModel, _Decoder] = weakref.WeakKeyDictionary()
_decoders_lock = threading.Lock()


def _decoder(base: BaseModel) -> _Decoder:
    with _decoders_lock:
        if base not in _decoders:
            _decoders[base] = _Decoder(base)
        return _decoders[base]


# a frozen adapter's folded decoder, kept while the adapter lives (a sampling session keeps its
# SamplerWeights, and the engine makes a new lane for each burst of its requests)
_folded_decoders: weakref.WeakKeyDictionary[LoraAdapter, _Decoder] = weakref.WeakKeyDictionary()


def _folded_decoder(base: BaseModel, adapter: LoraAdapter) -> _Decoder:
    decoder = _decoder(base)
    with _decoders_lock:
        if adapter not in _folded_decoders:
            _folded_decoders[adapter] = decoder.merged(adapter)
        return _folded_decoders[adapter]


# ---------------------------------------------------------------------- a running batch


@dataclass
class _Row:
    job: SampleJob
    index: int  # sample index within the job
    generator: torch.Generator
    max_tokens: int
    stop_token_ids: frozenset[int]
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    stop_reason: str | None = None
    noise_left: int = 0  # pre-drawn noise steps not used yet (at the end of the slot's chunk)

    @property
    def last_position(self) -> int:
        """Where the newest token goes in the cache."""
        return len(self.job.prompt) + len(self.tokens) - 1


@dataclass
class _JobState:
    rows_left: int
    rows: list[_Row]
    prompt_logprobs: list[float] | None = None


class _Lane:
    """The running batch of one set of weights: its rows, cache and pending requests."""

    def __init__(self, weights: SamplerWeights, max_rows: int, merge_adapter: bool = True):
        self.weights = weights
        # a frozen adapter is folded into the decoder's weights once per adapter (merge_adapter=False:
        # added at every linear, as the training forward adds it; the same tokens, logprobs to float rounding)
        self.decoder, self.adapter = _decoder(weights.base), weights.adapter
        if merge_adapter and self.adapter is not None:
            self.decoder, self.adapter = _folded_decoder(weights.base, self.adapter), None
        self.max_rows = max_rows
        self.pending: list[SampleJob] = []
        self.rows: list[_Row] = []
        self.jobs: dict[int, _JobState] = {}
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        # per slot, the uniform draws behind the next NOISE_CHUNK steps' noise (see exponential_noise)
        self.uniforms = torch.zeros(0, NOISE_CHUNK, self.decoder.vocab_size, dtype=torch.float64)
        self.next_logits: torch.Tensor | None = None  # [len(rows), vocab]: the next token's logits
        self.params: BatchParams | None = None
        self._tokenizer = None
        self.prefilled = [0, 0]  # since the engine last read it: requests admitted, prompts prefilled

    @property
    def busy(self) -> bool:
        return bool(self.rows or self.pending)

    def add(self, job: SampleJob) -> None:
        room = self.decoder.max_positions - len(job.prompt)
        if room < 1:
            job.future.set_exception(
                SamplingError(
                    f"prompt of {len(job.prompt)} tokens leaves no room in the "
                    f"{self.decoder.max_positions}-token context"
                )
            )
            return
        self.pending.append(job)

    def fail(self, error: BaseException) -> None:
        for job in self.pending + [state.rows[0].job for state in self.jobs.values()]:
            if not job.future.done():
                job.future.set_exception(error)
        self.pending, self.rows, self.jobs, self.next_logits = [], [], {}, None

    # -------------------------------------------------------------- admission
    def _admit(self) -> None:
        joining: list[SampleJob] = []
        rows = len(self.rows)
        while self.pending and (rows == 0 or rows + self.pending[0].num_samples <= self.max_rows):
            job = self.pending.pop(0)
            joining.append(job)
            rows += job.num_samples
        if not joining:
            return
        try:
            self._start(joining)
        except BaseException as error:
            for job in joining:
                self.jobs.pop(id(job), None)
                if not job.future.done():
                    job.future.set_exception(error)
            raise

    def _start(self, joining: list[SampleJob]) -> None:
        """Prefill the joining prompts (once per distinct prompt: the requests of one RL group all
        send the same one) and append their rows to the batch."""
        decoder, adapter = self.decoder, self.adapter
        distinct: dict[tuple[int, ...], int] = {}
        prefill_of_job = [distinct.setdefault(tuple(job.prompt), len(distinct)) for job in joining]
        prompts = [list(prompt) for prompt in distinct]
        caches, hidden = decoder.prefill(prompts, adapter)
        self.prefilled[0] += len(joining)
        self.prefilled[1] += len(prompts)
        last = torch.tensor([len(prompt) - 1 for prompt in prompts])
        prefill_logits = decoder.logits(hidden[torch.arange(len(prompts)), last], adapter)
        new_rows: list[_Row] = []
        job_of_row: list[int] = []  # row -> the prefill its request's prompt got
        for job, j in zip(joining, prefill_of_job):
            spec = job.spec
            room = decoder.max_positions - len(job.prompt)
            state = _JobState(job.num_samples, [])
            if job.want_prompt_logprobs:
                state.prompt_logprobs = _prompt_logprobs(
                    job, decoder.logits(hidden[j, : len(job.prompt)], adapter)
                )
            for i in range(job.num_samples):
                seed = spec.seed + i if spec.seed is not None else secrets.randbits(62)
                row = _Row(
                    job,
                    i,
                    torch.Generator().manual_seed(seed),
                    min(spec.max_tokens, room),
                    frozenset(spec.stop_token_ids),
                )
                state.rows.append(row)
                new_rows.append(row)
                job_of_row.append(j)
            self.jobs[id(job)] = state
        source = torch.tensor(job_of_row) if len(prompts) > 1 else None  # row -> its prompt's prefill
        first, count = len(self.rows), len(new_rows)
        needed_positions = max(len(row.job.prompt) + row.max_tokens for row in self.rows + new_rows)
        self._reserve(first + count, needed_positions)
        width = hidden.shape[1]
        for (k, v), key_cache, value_cache in zip(caches, self.keys, self.values, strict=True):
            if source is not None:
                k, v = k[source], v[source]
            key_cache[first : first + count, :, :width] = k
            value_cache[first : first + count, :, :width] = v
        logits = prefill_logits[source] if source is not None else prefill_logits.expand(count, -1)
        self.rows.extend(new_rows)
        self.next_logits = logits if self.next_logits is None else torch.cat([self.next_logits, logits])
        self.params = None

    def _reserve(self, rows: int, positions: int) -> None:
        """Grow the cache (and noise buffer) to hold ``rows`` slots of ``positions`` positions."""
        decoder = self.decoder
        have_rows = self.keys[0].shape[0] if self.keys else 0
        have_positions = self.keys[0].shape[2] if self.keys else 0
        if rows <= have_rows and positions <= have_positions:
            return
        new_rows = max(rows, min(2 * have_rows, self.max_rows)) if rows > have_rows else have_rows
        new_positions = have_positions
        if positions > have_positions:
            new_positions = min(-(-positions // POSITION_BLOCK) * POSITION_BLOCK, decoder.max_positions)
        used = len(self.rows)
        shape = (new_rows, decoder.num_kv_heads, new_positions, decoder.head_dim)
        for caches in (self.keys, self.values):
            old = list(caches) or [None] * len(decoder.layers)
            caches.clear()
            for previous in old:
                cache = torch.zeros(shape)
                if previous is not None and used:
                    cache[:used, :, :have_positions] = previous[:used]
                caches.append(cache)
        if new_rows > self.uniforms.shape[0]:
            uniforms = self.uniforms.new_zeros(new_rows, NOISE_CHUNK, decoder.vocab_size)
            uniforms[:used] = self.uniforms[:used]
            self.uniforms = uniforms

    # -------------------------------------------------------------- one step
    def advance(self) -> int:
        """Admit what is pending, choose every row's next token, retire finished rows and run the
        decode step for the rest. Returns the number of rows that chose a token."""
        with torch.inference_mode():
            self._admit()
            if not self.rows:
                return 0
            chose = len(self.rows)
            self._choose()
            self._retire()
            if self.rows:
                rows = self.rows
                tokens = torch.tensor([row.tokens[-1] for row in rows])
                positions = [row.last_position for row in rows]
                self.next_logits = self.decoder.decode(
                    tokens,
                    torch.tensor(positions),
                    max(positions),
                    self.keys,
                    self.values,
                    self.adapter,
                )
            else:
                self.next_logits = None
        return chose

    def _choose(self) -> None:
        rows, logits = self.rows, self.next_logits
        if self.params is None:
            self.params = BatchParams.of([row.job.spec for row in rows], self.decoder.vocab_size)
        noise = None
        if not self.params.all_greedy:
            steps = []
            for slot, row in enumerate(rows):
                if row.job.spec.temperature == 0:
                    steps.append(0)
                    continue
                if row.noise_left == 0:  # draw this row's next chunk, in generator order
                    chunk = min(NOISE_CHUNK, row.max_tokens - len(row.tokens))
                    self.uniforms[slot, NOISE_CHUNK - chunk :].uniform_(generator=row.generator)
                    row.noise_left = chunk
                steps.append(NOISE_CHUNK - row.noise_left)
                row.noise_left -= 1
            picks = torch.arange(len(rows)) * NOISE_CHUNK + torch.tensor(steps)
            noise = exponential_noise(self.uniforms.view(-1, self.decoder.vocab_size).index_select(0, picks))
        chosen = choose_tokens(logits, self.params, noise)
        chosen_logprobs = torch.log_softmax(logits, dim=-1).gather(1, chosen[:, None])[:, 0]
        for row, token, logprob in zip(rows, chosen.tolist(), chosen_logprobs.tolist(), strict=True):
            row.tokens.append(token)
            row.logprobs.append(logprob)
            if token in row.stop_token_ids:
                row.stop_reason = "stop"
            elif row.job.spec.stop_strings and tail_has_stop_string(
                row.tokens, row.job.spec.stop_strings, self.tokenizer()
            ):
                row.stop_reason = "stop"
            elif len(row.tokens) >= row.max_tokens:
                row.stop_reason = "length"

    def tokenizer(self):
        if self._tokenizer is None:
            self._tokenizer = _tokenizer(self.weights.base.tokenizer_dir)
        return self._tokenizer

    def _retire(self) -> None:
        """Answer finished jobs; move the last running rows into the slots of finished ones."""
        rows = self.rows
        finished = [slot for slot, row in enumerate(rows) if row.stop_reason is not None]
        if not finished:
            return
        for slot in finished:
            row = rows[slot]
            state = self.jobs[id(row.job)]
            state.rows_left -= 1
            if state.rows_left == 0:
                del self.jobs[id(row.job)]
                row.job.future.set_result(
                    SampleResult(
                        sequences=[(r.tokens, r.logprobs, r.stop_reason or "length") for r in state.rows],
                        prompt_logprobs=state.prompt_logprobs,
                    )
                )
        keep = len(rows) - len(finished)
        finished_set = set(finished)
        holes = [slot for slot in finished if slot < keep]
        movers = [slot for slot in range(keep, len(rows)) if slot not in finished_set]
        if holes:
            to, source = torch.tensor(holes), torch.tensor(movers)
            for cache in self.keys + self.values:
                cache[to] = cache[source]
            self.uniforms[to] = self.uniforms[source]
            for hole, mover in zip(holes, movers, strict=True):
                rows[hole] = rows[mover]
        del rows[keep:]
        self.params = None


def _prompt_logprobs(job: SampleJob, logits: torch.Tensor) -> list[float]:
    """log p(prompt[t] | prompt[:t]); NaN at 0 and before last_n. ``logits`` [len(prompt), vocab]."""
    n = len(job.prompt)
    logprobs = torch.log_softmax(logits[: n - 1], dim=-1).gather(
        -1, torch.tensor(job.prompt[1:], dtype=torch.long)[:, None]
    )[:, 0]
    values = [float("nan")] + logprobs.tolist()
    if job.prompt_logprobs_last_n is not None:
        first_scored = n - job.prompt_logprobs_last_n
        values = [float("nan") if t < first_scored else v for t, v in enumerate(values)]
    return values


def generate(weights: SamplerWeights, jobs: list[SampleJob]) -> list[SampleResult]:
    """Decode ``jobs`` (which share ``weights``) to the end in this thread, as one running batch."""
    lane = _Lane(weights, max_rows=max(1, sum(job.num_samples for job in jobs)))
    for job in jobs:
        lane.add(job)
    try:
        while lane.busy:
            lane.advance()
    except BaseException as error:
        lane.fail(error)
        raise
    return [job.future.result() for job in jobs]


class SamplingEngine:
    """The engine thread: continuous batching of queued SampleJobs, one lane per weights."""

    def __init__(
        self,
        max_rows_per_lane: int = 128,
        collect_window_s: float | None = None,
        max_collect_s: float | None = None,
    ):
        self.max_rows_per_lane = max_rows_per_lane
        if collect_window_s is None:
            collect_window_s = float(os.environ.get("EMBEDDED_TINKER_COLLECT_WINDOW_S", COLLECT_WINDOW_S))
        if max_collect_s is None:
            max_collect_s = float(os.environ.get("EMBEDDED_TINKER_MAX_COLLECT_S", MAX_COLLECT_S))
        self.collect_window_s = collect_window_s
        self.max_collect_s = max_collect_s
        self._queue: queue.Queue[SampleJob | None] = queue.Queue()
        self._stopped = False
        # what report() (healthz "sampler") answers: counters since start, and when recent requests
        # were submitted (time.monotonic(), the last RECENT_SUBMITS)
        self.requests = 0
        self.steps = 0
        self.row_steps = 0
        self.prefill_requests = 0  # requests admitted into a running batch
        self.prefill_prompts = 0  # prompts prefilled for them (requests that joined with the same prompt share one)
        self.step_seconds = 0.0
        self.step_cpu_seconds = 0.0
        self.last_step_end = 0.0
        self.recent_submits: collections.deque[float] = collections.deque(maxlen=RECENT_SUBMITS)
        self.recent_steps: collections.deque[tuple] = collections.deque(maxlen=RECENT_STEPS)
        self._report_lock = threading.Lock()  # submit() may run on several threads
        self._thread = threading.Thread(target=self._run, name="embedded-sampler", daemon=True)
        self._thread.start()

    def submit(self, job: SampleJob) -> Future:
        with self._report_lock:
            self.recent_submits.append(time.monotonic())
            self.requests += 1
        self._queue.put(job)
        return job.future

    def stop(self, wait: bool = False) -> None:
        """Stop the engine thread (pending requests fail); ``wait``: until it has ended."""
        self._queue.put(None)
        if wait:
            self._thread.join()

    def report(self) -> dict:
        """Counters since start (steps: lane steps; row_steps: rows decoded over all steps;
        prefill_requests / prefill_prompts: requests admitted and the prompts prefilled for them;
        step_seconds / step_cpu_seconds: wall and engine-thread CPU time in steps), when the last
        step ended, when the last requests were submitted (time.monotonic() of the server) and
        the last steps as [end time, wall seconds, CPU seconds, rows]."""
        with self._report_lock:
            return {
                "requests": self.requests,
                "steps": self.steps,
                "row_steps": self.row_steps,
                "prefill_requests": self.prefill_requests,
                "prefill_prompts": self.prefill_prompts,
                "step_seconds": round(self.step_seconds, 6),
                "step_cpu_seconds": round(self.step_cpu_seconds, 6),
                "last_step_end": self.last_step_end,
                "recent_submits": list(self.recent_submits),
                "recent_steps": [list(step) for step in self.recent_steps],
            }

    def _take(self, wait: bool) -> list[SampleJob] | None:
        """Jobs that arrived: when idle, wait for one and then for a burst (jobs arriving less
        than collect_window_s apart, for at most max_collect_s); when busy, only what is there.
        None once stopped."""
        jobs: list[SampleJob] = []
        if wait:
            first = self._queue.get()
            if first is None:
                return None
            jobs.append(first)
            give_up_at = time.monotonic() + self.max_collect_s
            while (timeout := min(self.collect_window_s, give_up_at - time.monotonic())) > 0:
                try:
                    job = self._queue.get(timeout=timeout)
                except queue.Empty:
                    break
                if job is None:
                    return None
                jobs.append(job)
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return jobs
            if job is None:
                return None
            jobs.append(job)

    def _run(self) -> None:
        lanes: dict[str, _Lane] = {}
        try:
            while (jobs := self._take(wait=not lanes)) is not None:
                for job in jobs:
                    identity = job.weights.identity
                    if identity not in lanes:
                        try:
                            lanes[identity] = _Lane(job.weights, self.max_rows_per_lane)
                        except Exception as error:  # noqa: BLE001 - reported through the job
                            job.future.set_exception(error)
                            continue
                    lanes[identity].add(job)
                for identity, lane in list(lanes.items()):
                    started, started_cpu = time.monotonic(), time.thread_time()
                    rows = 0
                    try:
                        rows = lane.advance()
                    except Exception as error:  # noqa: BLE001 - reported through each job's future
                        lane.fail(error)
                    ended, cpu = time.monotonic(), time.thread_time() - started_cpu
                    with self._report_lock:
                        self.steps += 1
                        self.row_steps += rows
                        self.prefill_requests += lane.prefilled[0]
                        self.prefill_prompts += lane.prefilled[1]
                        lane.prefilled = [0, 0]
                        self.step_seconds += ended - started
                        self.step_cpu_seconds += cpu
                        self.last_step_end = ended
                        self.recent_steps.append((ended, round(ended - started, 6), round(cpu, 6), rows))
                    if not lane.busy:
                        del lanes[identity]
        finally:
            stopped = SamplingError("the server stopped before this request was sampled")
            for lane in lanes.values():
                lane.fail(stopped)
            while True:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is not None and not job.future.done():
                    job.future.set_exception(stopped)
