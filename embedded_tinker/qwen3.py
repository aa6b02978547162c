"""The Qwen3 decoder the embedded backend serves, in one file (nanoGPT's model.py is the template).

It computes what transformers' ``Qwen3ForCausalLM`` computes (transformers 5.5, ``sdpa`` attention,
float32), with the same operations in the same order, so its logits are the same bits; the
backend does not import transformers to serve (the import takes about 5 s of every server start).
tests/unit/test_qwen3.py holds it to transformers bit for bit, padded batches included.

Parameter and module names are transformers' (``model.layers.0.self_attn.q_proj``, ...), so a
Hugging Face checkpoint directory (config.json + model.safetensors) loads as it is, LoRA targets
and adapter tensor order (module registration order) are the same, and the sampling engine
(sampling.py) reads the weights by those names. Served: ``model_type`` qwen3, SiLU MLP, default RoPE,
full attention in every layer; any other config is refused with the field that differs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F


class UnsupportedConfig(ValueError):
    """A checkpoint whose config.json this decoder does not implement."""


@dataclass(frozen=True)
class Qwen3Config:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    max_position_embeddings: int
    tie_word_embeddings: bool
    attention_bias: bool = False
    eos_token_id: int | list[int] | None = None
    pad_token_id: int | None = None
    model_type: str = "qwen3"
    hidden_act: str = "silu"

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Qwen3Config:
        def refuse(field: str, value: Any) -> UnsupportedConfig:
            return UnsupportedConfig(f"config.json {field}={value!r}: the embedded backend serves Qwen3 decoders "
                                     "with SiLU, default RoPE and full attention")

        if raw.get("model_type") != "qwen3":
            raise refuse("model_type", raw.get("model_type"))
        if raw.get("hidden_act", "silu") != "silu":
            raise refuse("hidden_act", raw.get("hidden_act"))
        rope = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
        if rope.get("rope_type", rope.get("type", "default")) != "default":
            raise refuse("rope_type", rope.get("rope_type", rope.get("type")))
        if raw.get("use_sliding_window") or any(t != "full_attention" for t in raw.get("layer_types") or []):
            raise refuse("layer_types", raw.get("layer_types"))
        heads = int(raw["num_attention_heads"])
        return cls(
            vocab_size=int(raw["vocab_size"]),
            hidden_size=int(raw["hidden_size"]),
            intermediate_size=int(raw["intermediate_size"]),
            num_hidden_layers=int(raw["num_hidden_layers"]),
            num_attention_heads=heads,
            num_key_value_heads=int(raw.get("num_key_value_heads") or heads),
            head_dim=int(raw.get("head_dim") or int(raw["hidden_size"]) // heads),
            rms_norm_eps=float(raw.get("rms_norm_eps", 1e-6)),
            rope_theta=float(rope.get("rope_theta", raw.get("rope_theta", 10000.0))),
            max_position_embeddings=int(raw["max_position_embeddings"]),
            tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
            attention_bias=bool(raw.get("attention_bias", False)),
            eos_token_id=raw.get("eos_token_id"),
            pad_token_id=raw.get("pad_token_id"),
        )


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input_dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * x.to(input_dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, config: Qwen3Config):
        super().__init__()
        dim = config.head_dim
        inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, dim, 2, dtype=torch.int64).to(dtype=torch.float) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        inv_freq = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv_freq.float() @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype=x.dtype), emb.sin().to(dtype=x.dtype)  # default RoPE: attention scaling 1


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, kv_heads, length, head_dim = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(batch, kv_heads, n_rep, length, head_dim).reshape(batch, kv_heads * n_rep, length, head_dim)


class Attention(nn.Module):
    def __init__(self, config: Qwen3Config):
        super().__init__()
        self.head_dim = config.head_dim
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        bias = config.attention_bias
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=bias)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=bias)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=bias)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size, bias=bias)
        self.q_norm = RMSNorm(self.head_dim, config.rms_norm_eps)
        self.k_norm = RMSNorm(self.head_dim, config.rms_norm_eps)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        input_shape = x.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        q = self.q_norm(self.q_proj(x).view(hidden_shape)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(hidden_shape)).transpose(1, 2)
        v = self.v_proj(x).view(hidden_shape).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q, k = (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)
        if mask is None:  # no padding: SDPA's own causal mask, grouped-query heads shared in the kernel
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, scale=self.scaling,
                                                 is_causal=q.shape[2] > 1, enable_gqa=True)
        else:  # padding: an explicit boolean mask, key/value heads repeated
            k, v = repeat_kv(k, self.num_key_value_groups), repeat_kv(v, self.num_key_value_groups)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0, scale=self.scaling,
                                                 is_causal=False)
        return self.o_proj(out.transpose(1, 2).contiguous().reshape(*input_shape, -1).contiguous())


class MLP(nn.Module):
    def __init__(self, config: Qwen3Config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, config: Qwen3Config):
        super().__init__()
        self.self_attn = Attention(config)
        self.mlp = MLP(config)
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Decoder(nn.Module):
    """transformers' ``Qwen3Model``: embeddings, the layers, the final norm."""

    def __init__(self, config: Qwen3Config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, config.pad_token_id)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.rotary_emb = RotaryEmbedding(config)


@dataclass
class CausalLMOutput:
    logits: torch.Tensor


class Qwen3ForCausalLM(nn.Module):
    def __init__(self, config: Qwen3Config):
        super().__init__()
        self.config = config
        self.model = Decoder(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> CausalLMOutput:
        """Logits for every position of a right-padded batch (attention_mask: 1 real, 0 padding)."""
        length = input_ids.shape[1]
        x = self.model.embed_tokens(input_ids)
        position_ids = torch.arange(length).unsqueeze(0)
        cos, sin = self.model.rotary_emb(x, position_ids)
        mask = None
        if attention_mask is not None and not attention_mask.bool().all():
            positions = torch.arange(length)
            causal = positions[None, None, None, :] <= positions[None, None, :, None]
            mask = (causal & attention_mask.bool()[:, None, None, :]).expand(input_ids.shape[0], -1, length, length)
        for layer in self.model.layers:
            x = layer(x, cos, sin, mask)
        return CausalLMOutput(self.lm_head(self.model.norm(x)))

    @classmethod
    def from_checkpoint(cls, directory: str | Path) -> Qwen3ForCausalLM:
        """A Hugging Face Qwen3 checkpoint directory: config.json and its safetensors (model.safetensors
        or the shards of a larger one), in float32."""
        from safetensors.torch import load_file

        directory = Path(directory)
        model = cls(Qwen3Config.from_dict(json.loads((directory / "config.json").read_text())))
        files = sorted(directory.glob("*.safetensors"))
        if not files:
            raise UnsupportedConfig(f"{directory}: no *.safetensors weights (the embedded backend loads safetensors only)")
        state = {name: tensor.to(torch.float32) for file in files for name, tensor in load_file(file).items()}
        if model.config.tie_word_embeddings and "model.embed_tokens.weight" in state:
            state.setdefault("lm_head.weight", state["model.embed_tokens.weight"])
        missing, unexpected = model.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise UnsupportedConfig(f"{directory}: tensors missing {missing[:5]} / unexpected {unexpected[:5]}")
        return model
