"""The served Qwen3 decoder (embedded_tinker/qwen3.py) is transformers' Qwen3ForCausalLM bit for bit:
logits of plain and right-padded batches, and the LoRA gradients a training step takes; the same
linears in the same order (LoRA targets, adapter_sha256); a config it does not implement is refused.
Serving tiny-arith does not import transformers."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import json
import subprocess
import sys

import pytest
import torch

from embedded_tinker.model import REGISTRY, LoraAdapter, LoraConfig, load_base_model, load_hf_model
from embedded_tinker.qwen3 import Qwen3Config, Qwen3ForCausalLM, UnsupportedConfig
from suite import REPO_ROOT, transformers_reference

SPEC = REGISTRY["embedded/tiny-arith"]


@pytest.fixture(scope="module")
def pair():
    """(ours, transformers'), both with model.py's adapter hooks, and a LoRA adapter with non-zero B."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # for this module only: later modules (the sampling engine's) keep the default
    ours = load_base_model(SPEC.name)
    theirs = transformers_reference(SPEC)
    adapter = LoraAdapter(ours, LoraConfig(rank=4, seed=3))
    with torch.no_grad():
        for index, tensor in enumerate(adapter.lora_B.values()):
            tensor.copy_(torch.randn(tensor.shape, generator=torch.Generator().manual_seed(index)) * 0.05)
    yield ours, theirs, adapter
    torch.set_num_threads(threads)


def batch(rows: int, length: int, padded: bool, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, SPEC_VOCAB, (rows, length), generator=generator)
    mask = torch.ones(rows, length, dtype=torch.long)
    if padded:
        for row in range(rows):
            mask[row, length - 3 * row:] = 0  # row 0 full length, the others right-padded
    return ids, mask


SPEC_VOCAB = json.loads((SPEC.checkpoint_dir / "config.json").read_text())["vocab_size"]


@pytest.mark.parametrize("rows,length,padded", [(1, 1, False), (1, 9, False), (4, 40, False), (4, 40, True), (6, 130, True)])
def test_logits_are_transformers_bit_for_bit(pair, rows, length, padded):
    ours, theirs, adapter = pair
    ids, mask = batch(rows, length, padded)
    with torch.no_grad():
        for active in (None, adapter):
            with ours.active(active):
                mine = ours.qwen3(input_ids=ids, attention_mask=mask).logits
                reference = theirs(input_ids=ids, attention_mask=mask).logits
            assert torch.equal(mine, reference), (active is not None, (mine - reference).abs().max().item())


def test_lora_gradients_are_transformers_bit_for_bit(pair):
    ours, theirs, adapter = pair
    ids, mask = batch(3, 24, padded=True, seed=1)
    gradients = []
    for model in (ours.qwen3, theirs):
        params = [t.detach().clone().requires_grad_(True) for t in (*adapter.lora_A.values(), *adapter.lora_B.values())]
        trainable = LoraAdapter(ours, adapter.config)
        names = list(adapter.lora_A)
        trainable.lora_A = dict(zip(names, params[: len(names)]))
        trainable.lora_B = dict(zip(names, params[len(names):]))
        with ours.active(trainable):
            logits = model(input_ids=ids, attention_mask=mask).logits
        torch.log_softmax(logits, -1)[mask.bool()].max(-1).values.sum().backward()
        gradients.append([p.grad for p in params])
    assert all(torch.equal(a, b) for a, b in zip(*gradients))


def test_the_same_linears_in_the_same_order(pair):
    ours, theirs, _ = pair
    linears = [name for name, module in theirs.named_modules() if isinstance(module, torch.nn.Linear)]
    assert list(ours.linears) == linears  # LoRA targets and adapter tensor order
    assert ours.qwen3.lm_head.weight is ours.qwen3.model.embed_tokens.weight  # tie_word_embeddings


@pytest.mark.parametrize("change", [{"model_type": "llama"}, {"hidden_act": "gelu"},
                                    {"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0}},
                                    {"layer_types": ["sliding_attention"] * 4}])
def test_a_config_it_does_not_implement_is_refused(change):
    raw = json.loads((SPEC.checkpoint_dir / "config.json").read_text())
    Qwen3Config.from_dict(raw)  # the served config itself is accepted
    with pytest.raises(UnsupportedConfig, match=next(iter(change)).split("_parameters")[0]):
        Qwen3Config.from_dict({**raw, **change})


def test_tiny_random_is_transformers_initialisation(pair):
    drawn = load_hf_model(REGISTRY["embedded/tiny-random"])
    served = load_base_model("embedded/tiny-random").qwen3
    assert all(torch.equal(served.state_dict()[name], tensor) for name, tensor in drawn.state_dict().items())


def test_serving_the_registry_models_does_not_import_transformers():
    probe = ("import sys; from embedded_tinker.model import REGISTRY, load_base_model, load_hf_model; "
             "[load_base_model(name) for name in REGISTRY]; served = 'transformers' in sys.modules; "
             "load_hf_model(REGISTRY['embedded/tiny-random']); print(served, 'transformers' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True)
    # drawing tiny-random's weights again takes transformers' own model: the same probe sees that import
    assert done.stdout.split() == ["False", "True"]


def test_a_sharded_checkpoint_loads_as_the_single_file_one(pair, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    ours, _, _ = pair
    tensors = load_file(SPEC.checkpoint_dir / "model.safetensors")
    names = sorted(tensors)
    shutil.copy(SPEC.checkpoint_dir / "config.json", tmp_path / "config.json")
    for index, part in enumerate((names[: len(names) // 2], names[len(names) // 2:])):
        save_file({name: tensors[name] for name in part}, tmp_path / f"model-0000{index + 1}-of-00002.safetensors")
    sharded = Qwen3ForCausalLM.from_checkpoint(tmp_path)
    assert all(torch.equal(sharded.state_dict()[name], tensor) for name, tensor in ours.qwen3.state_dict().items())
    (tmp_path / "model-00001-of-00002.safetensors").unlink()
    with pytest.raises(UnsupportedConfig, match="missing"):  # half the weights: refused, not served half-random
        Qwen3ForCausalLM.from_checkpoint(tmp_path)
