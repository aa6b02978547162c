"""Base models served by the embedded backend and the LoRA adapters trained on them.

Registry (``resolve_base_model``):
    embedded/tiny-arith   assets/tiny-arith: HF config.json + model.safetensors (pre-trained)
    embedded/tiny-random  assets/tiny-random: the same config.json, transformers' initialisation from a
                          fixed seed (drawn once and shipped; load_hf_model draws it again)
    /a/local/directory    any Hugging Face Qwen3 checkpoint directory, loaded the same way

Every base model is a frozen Qwen3 decoder in float32 (qwen3.py: transformers' ``Qwen3ForCausalLM``
bit for bit, without importing transformers; ``load_hf_model`` gives transformers' own, for the
tiny-random initialisation and as the tests' reference). A LoRA adapter adds,
to the output of each targeted ``nn.Linear`` (y = W x), the low-rank term

    y += (LORA_ALPHA / rank) * B (A x)        A: (rank, in), B: (out, rank)

A starts uniform in +-1/sqrt(in) (kaiming-uniform with a = sqrt(5), as in PEFT) from a
``torch.Generator`` seeded with the LoRA seed (default 0), B starts at zero, so a fresh adapter
leaves the base model's outputs unchanged. Targets: ``train_attn`` -> self_attn.{q,k,v,o}_proj,
``train_mlp`` -> mlp.{gate,up,down}_proj, ``train_unembed`` -> lm_head.

The adapter is not patched into the modules. One forward hook per Linear of a base model reads
the adapter of the *current thread* (``BaseModel.active(adapter)``), so any number of training
models and samplers share one copy of the base weights and can run in different threads.

Tensor order and adapter_sha256: the adapter's tensors are named ``<module>.lora_A`` and
``<module>.lora_B`` and ordered by module registration order in the base model (layer 0 q, k, v,
o, gate, up, down, layer 1 ..., lm_head), A before B. ``adapter_sha256`` is the sha256 of the
concatenation of every tensor's float32 little-endian bytes (row-major) in that order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from .qwen3 import Qwen3ForCausalLM, UnsupportedConfig

ASSETS_DIR = Path(__file__).resolve().parent / "assets"
TOKENIZER_DIR = ASSETS_DIR / "tokenizer"
LORA_ALPHA = 32.0
DEFAULT_LORA_SEED = 0
DEFAULT_LORA_RANK = 32
MAX_LORA_RANK = 1024  # far past any rank the served models' widths use
RANDOM_INIT_SEED = 0  # weights of embedded/tiny-random


class UnknownBaseModel(ValueError):
    """The requested base model is neither a registry name nor a checkpoint directory."""


@dataclass(frozen=True)
class BaseModelSpec:
    name: str
    checkpoint_dir: Path  # holds config.json and model.safetensors
    tokenizer_dir: Path
    random_init: bool = False  # the weights are transformers' initialisation (load_hf_model draws them)


REGISTRY: dict[str, BaseModelSpec] = {
    "embedded/tiny-arith": BaseModelSpec("embedded/tiny-arith", ASSETS_DIR / "tiny-arith", TOKENIZER_DIR),
    "embedded/tiny-random": BaseModelSpec(
        "embedded/tiny-random", ASSETS_DIR / "tiny-random", TOKENIZER_DIR, random_init=True
    ),
}
DEFAULT_BASE_MODEL = "embedded/tiny-arith"


def served_model_names() -> list[str]:
    return list(REGISTRY)


def resolve_base_model(name: str) -> BaseModelSpec:
    if name in REGISTRY:
        return REGISTRY[name]
    path = Path(name).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        path = path.resolve()
        has_tokenizer = (path / "tokenizer.json").is_file() or (path / "tokenizer_config.json").is_file()
        return BaseModelSpec(str(path), path, path if has_tokenizer else TOKENIZER_DIR)
    raise UnknownBaseModel(
        f"unknown base model {name!r}: this server serves {served_model_names()} "
        "or a local directory holding a Hugging Face Qwen3 checkpoint (config.json + safetensors)"
    )


_thread_state = threading.local()  # .adapter: the LoraAdapter the current thread runs with


class BaseModel:
    """A frozen Qwen3 decoder (qwen3.py) plus the hooks that add the current thread's LoRA adapter."""

    def __init__(self, spec: BaseModelSpec, qwen3: Qwen3ForCausalLM):
        self.spec = spec
        self.name = spec.name
        self.qwen3 = qwen3.float().eval().requires_grad_(False)
        self.config = qwen3.config
        self.linears: dict[str, nn.Linear] = {
            name: module for name, module in qwen3.named_modules() if isinstance(module, nn.Linear)
        }
        for name, linear in self.linears.items():
            linear.register_forward_hook(_make_lora_hook(name))

    @property
    def tokenizer_dir(self) -> str:
        return str(self.spec.tokenizer_dir)

    @property
    def eos_token_ids(self) -> list[int]:
        eos = self.config.eos_token_id
        return [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))

    @property
    def max_context_length(self) -> int:
        return int(self.config.max_position_embeddings)

    @contextmanager
    def active(self, adapter: LoraAdapter | None):
        """Run this thread's forward passes with ``adapter`` added (None: the base model)."""
        previous = getattr(_thread_state, "adapter", None)
        _thread_state.adapter = adapter
        try:
            yield
        finally:
            _thread_state.adapter = previous

    def logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, adapter) -> torch.Tensor:
        with self.active(adapter):
            return self.qwen3(input_ids=input_ids, attention_mask=attention_mask).logits

    def target_logprobs(
        self, inputs: list[list[int]], targets: list[list[int]], adapter: LoraAdapter | None
    ) -> list[torch.Tensor]:
        """log p(targets[i][t] | inputs[i][: t + 1]) for each datum, one batched forward pass.

        Sequences are right-padded; padding never influences real positions (causal mask)."""
        lengths = [len(tokens) for tokens in inputs]
        width = max(lengths)
        input_ids = torch.zeros(len(inputs), width, dtype=torch.long)
        attention_mask = torch.zeros(len(inputs), width, dtype=torch.long)
        for row, tokens in enumerate(inputs):
            input_ids[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
            attention_mask[row, : len(tokens)] = 1
        logits = self.logits(input_ids, attention_mask, adapter)
        result = []
        for row, (length, target) in enumerate(zip(lengths, targets, strict=True)):
            logprobs = torch.log_softmax(logits[row, :length].float(), dim=-1)
            target_ids = torch.tensor(target, dtype=torch.long).unsqueeze(-1)
            result.append(logprobs.gather(-1, target_ids).squeeze(-1))
        return result


def _make_lora_hook(module_name: str):
    def add_lora_delta(module: nn.Linear, inputs: tuple[torch.Tensor, ...], output: torch.Tensor):
        adapter = getattr(_thread_state, "adapter", None)
        if adapter is None or module_name not in adapter.lora_A:
            return output
        x = inputs[0]
        A, B = adapter.lora_A[module_name], adapter.lora_B[module_name]
        return output + adapter.scale * ((x @ A.T) @ B.T)

    return add_lora_delta


_base_model_cache: dict[str, BaseModel] = {}
_base_model_cache_lock = threading.Lock()


def load_base_model(name: str) -> BaseModel:
    """The shared, frozen base model for a registry name or checkpoint directory (cached)."""
    spec = resolve_base_model(name)
    with _base_model_cache_lock:
        if spec.name not in _base_model_cache:
            _base_model_cache[spec.name] = BaseModel(spec, load_qwen3(spec))
        return _base_model_cache[spec.name]


def load_qwen3(spec: BaseModelSpec) -> Qwen3ForCausalLM:
    """The served decoder, with the checkpoint's weights. tiny-random's are transformers'
    initialisation, drawn once and shipped (assets/tiny-random/README.md): drawing them in each
    server imported transformers, 4.5 s of a server's first request."""
    if not (spec.checkpoint_dir / "config.json").is_file():
        raise UnknownBaseModel(f"{spec.name}: no config.json in {spec.checkpoint_dir}")
    try:
        return Qwen3ForCausalLM.from_checkpoint(spec.checkpoint_dir)
    except UnsupportedConfig as err:
        raise UnknownBaseModel(f"{spec.name}: {err}") from None


def load_hf_model(spec: BaseModelSpec) -> nn.Module:
    """transformers' Qwen3ForCausalLM: its random init from RANDOM_INIT_SEED (random_init: what the
    shipped tiny-random weights are, drawn again), or the checkpoint's weights."""
    from transformers import AutoConfig, Qwen3ForCausalLM
    from transformers.utils import logging as transformers_logging

    if not (spec.checkpoint_dir / "config.json").is_file():
        raise UnknownBaseModel(f"{spec.name}: no config.json in {spec.checkpoint_dir}")
    if spec.random_init:
        config = AutoConfig.from_pretrained(spec.checkpoint_dir)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(RANDOM_INIT_SEED)
            return Qwen3ForCausalLM(config)
    transformers_logging.disable_progress_bar()
    return Qwen3ForCausalLM.from_pretrained(spec.checkpoint_dir, dtype=torch.float32)


@dataclass(frozen=True)
class LoraConfig:
    rank: int
    seed: int = DEFAULT_LORA_SEED
    train_attn: bool = True
    train_mlp: bool = True
    train_unembed: bool = True

    @classmethod
    def from_request(cls, lora_config: dict | None) -> LoraConfig:
        """ValueError (one sentence) for a field of the wrong type or out of range: rank a whole number in
        [1, MAX_LORA_RANK] (not a string, not true), seed an integer, train_* booleans."""
        if lora_config is not None and not isinstance(lora_config, dict):
            raise ValueError(f"lora_config must be an object, got {type(lora_config).__name__}")
        lora_config = dict(lora_config or {})
        rank = lora_config.get("rank")
        rank = DEFAULT_LORA_RANK if rank is None else rank
        if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= MAX_LORA_RANK:
            raise ValueError(f"LoRA rank must be an integer from 1 to {MAX_LORA_RANK}, got {rank!r}")
        seed = lora_config.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ValueError(f"LoRA seed must be an integer, got {seed!r}")
        flags = {name: True if lora_config.get(name) is None else lora_config[name]
                 for name in ("train_attn", "train_mlp", "train_unembed")}
        for name, flag in flags.items():
            if not isinstance(flag, bool):
                raise ValueError(f"lora_config.{name} must be true or false, got {flag!r}")
        config = cls(rank=rank, seed=DEFAULT_LORA_SEED if seed is None else seed, **flags)
        if not (config.train_attn or config.train_mlp or config.train_unembed):
            raise ValueError("at least one of train_attn, train_mlp, train_unembed must be true")
        return config

    def to_json(self) -> dict:
        return {
            "rank": self.rank,
            "seed": self.seed,
            "train_attn": self.train_attn,
            "train_mlp": self.train_mlp,
            "train_unembed": self.train_unembed,
        }

    def same_layout(self, other: LoraConfig) -> bool:
        """Same tensors (rank and targeted modules); the init seed does not matter."""
        return dataclasses.replace(self, seed=0) == dataclasses.replace(other, seed=0)

    def targets(self, module_name: str) -> bool:
        leaf = module_name.rsplit(".", 1)[-1]
        if (
            self.train_attn
            and ".self_attn." in module_name
            and leaf in ("q_proj", "k_proj", "v_proj", "o_proj")
        ):
            return True
        if self.train_mlp and ".mlp." in module_name and leaf in ("gate_proj", "up_proj", "down_proj"):
            return True
        return self.train_unembed and module_name == "lm_head"


class LoraAdapter:
    """The trainable low-rank tensors of one training model (or a frozen snapshot of them)."""

    def __init__(self, base: BaseModel, config: LoraConfig):
        self.base = base
        self.config = config
        self.scale = LORA_ALPHA / config.rank
        self.module_names = [name for name in base.linears if config.targets(name)]
        generator = torch.Generator().manual_seed(config.seed)
        self.lora_A: dict[str, torch.Tensor] = {}
        self.lora_B: dict[str, torch.Tensor] = {}
        for name in self.module_names:
            linear = base.linears[name]
            bound = 1.0 / math.sqrt(linear.in_features)
            A = torch.empty(config.rank, linear.in_features).uniform_(-bound, bound, generator=generator)
            self.lora_A[name] = A.requires_grad_()
            self.lora_B[name] = torch.zeros(linear.out_features, config.rank, requires_grad=True)

    def parameters(self) -> list[torch.Tensor]:
        """All tensors in the fixed order (per module: A, then B)."""
        return [t for name in self.module_names for t in (self.lora_A[name], self.lora_B[name])]

    def named_tensors(self) -> dict[str, torch.Tensor]:
        named = {}
        for name in self.module_names:
            named[f"{name}.lora_A"] = self.lora_A[name]
            named[f"{name}.lora_B"] = self.lora_B[name]
        return named

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {name: t.detach().clone().contiguous() for name, t in self.named_tensors().items()}

    def load_state_dict(self, tensors: dict[str, torch.Tensor]) -> None:
        expected = self.named_tensors()
        if set(tensors) != set(expected):
            missing, extra = set(expected) - set(tensors), set(tensors) - set(expected)
            raise ValueError(
                f"adapter tensors do not match this model's LoRA layout "
                f"(missing {sorted(missing)[:3]}, unexpected {sorted(extra)[:3]})"
            )
        with torch.no_grad():
            for name, target in expected.items():
                if tensors[name].shape != target.shape:
                    raise ValueError(f"{name}: shape {tuple(tensors[name].shape)} != {tuple(target.shape)}")
                target.copy_(tensors[name])

    def zero_grad(self) -> None:
        for t in self.parameters():
            t.grad = None

    def sha256(self) -> str:
        return adapter_sha256(self.parameters())

    def frozen_copy(self) -> LoraAdapter:
        """A snapshot that later training steps do not change (used by samplers)."""
        copy = object.__new__(LoraAdapter)
        copy.base, copy.config, copy.scale = self.base, self.config, self.scale
        copy.module_names = list(self.module_names)
        copy.lora_A = {n: t.detach().clone() for n, t in self.lora_A.items()}
        copy.lora_B = {n: t.detach().clone() for n, t in self.lora_B.items()}
        return copy


def adapter_sha256(tensors_in_order: list[torch.Tensor]) -> str:
    digest = hashlib.sha256()
    for tensor in tensors_in_order:
        array = tensor.detach().to(torch.float32).contiguous().numpy()
        digest.update(array.astype("<f4", copy=False).tobytes())
    return digest.hexdigest()


__all__ = [
    "BaseModel",
    "BaseModelSpec",
    "LoraAdapter",
    "LoraConfig",
    "REGISTRY",
    "UnknownBaseModel",
    "adapter_sha256",
    "load_base_model",
    "resolve_base_model",
    "served_model_names",
]
