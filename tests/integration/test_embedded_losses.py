"""Losses, gradients and AdamW of the embedded server against an independent float64 computation.

Method: the server runs forward_backward + optim_step through the stock SDK; the test reads the
adapter the server wrote (save_state -> <checkpoint_dir>/<model_id>/weights/<name>/) before and
after the step. Locally, a float64 copy of the same base model gets the same LoRA tensors through
its own hooks, the loss is written out from the Tinker docs, autograd gives the gradient and an
AdamW step is written out by hand. Compared:
  * per-token logprobs, elementwise_loss and loss:sum (float32 server vs float64: rtol 1e-5)
  * grad_norm:mean against the float64 gradient norm
  * the adapter change of one AdamW step (weight decay, bias correction and, in the second step,
    grad clipping on). Each compared step is an optimizer's first (step 2 runs on a model created
    from the step-1 checkpoint without optimizer state); multi-step moments are checked in-process
    against a hand-written float64 recursion (last test). eps = 1 keeps the update nearly
    proportional to the gradient (|g| << 1 here), so this checks gradient values, not only their
    signs. Step 1 only moves B (B = 0 means A has no gradient yet); step 2 starts from the
    server's step-1 adapter and moves both.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TINKER_TELEMETRY", "0")

import numpy as np
import pytest
import tinker
import torch
from safetensors.torch import load_file
from tinker import types

from embedded_tinker.model import LORA_ALPHA, REGISTRY, load_hf_model

MODEL = "embedded/tiny-random"
RANK = 2
ADAM = dict(learning_rate=1e-2, beta1=0.9, beta2=0.95, eps=1.0, weight_decay=0.05)


@pytest.fixture(scope="module")
def reference_base():
    return load_hf_model(REGISTRY[MODEL]).double().eval().requires_grad_(False)


def read_adapter(embedded_server, training, name: str) -> dict[str, torch.Tensor]:
    path = training.save_state(name).result().path
    model_id = path.removeprefix("tinker://").split("/")[0]
    return load_file(str(embedded_server.checkpoint_dir / model_id / "weights" / name / "adapter.safetensors"))


class ReferenceLora:
    """Float64 LoRA on the reference base: y += (alpha / rank) * B A x, via forward hooks."""

    def __init__(self, base, adapter: dict[str, torch.Tensor]):
        self.base = base
        self.tensors = {name: t.double().clone().requires_grad_() for name, t in adapter.items()}
        modules = dict(base.named_modules())
        self.handles = []
        for name in {n.rsplit(".", 1)[0] for n in adapter}:
            A, B = self.tensors[f"{name}.lora_A"], self.tensors[f"{name}.lora_B"]
            self.handles.append(
                modules[name].register_forward_hook(
                    lambda m, inputs, out, A=A, B=B: out + (LORA_ALPHA / RANK) * (inputs[0] @ A.T) @ B.T
                )
            )

    def target_logprobs(self, tokens: list[int], targets: list[int]) -> torch.Tensor:
        logits = self.base(input_ids=torch.tensor([tokens])).logits[0]
        return torch.log_softmax(logits, -1).gather(-1, torch.tensor(targets)[:, None])[:, 0]

    def close(self):
        for handle in self.handles:
            handle.remove()


def reference_loss(loss_fn: str, logprobs: torch.Tensor, inputs: dict, config: dict) -> torch.Tensor:
    """Elementwise losses, written from the Tinker loss documentation."""
    if loss_fn == "cross_entropy":
        return -(inputs["weights"] * logprobs)
    ratio = torch.exp(logprobs - inputs["logprobs"])
    if loss_fn == "importance_sampling":
        return -(ratio * inputs["advantages"])
    clipped = torch.clamp(ratio, config["clip_low_threshold"], config["clip_high_threshold"])
    return -torch.min(ratio * inputs["advantages"], clipped * inputs["advantages"])


def reference_adamw_first_step(params: dict, grads: dict, clip_norm: float) -> dict:
    grad_norm = torch.sqrt(sum((g**2).sum() for g in grads.values()))
    scale = clip_norm / grad_norm if 0 < clip_norm < grad_norm else 1.0
    lr, b1, b2, eps, wd = (ADAM[k] for k in ("learning_rate", "beta1", "beta2", "eps", "weight_decay"))
    updated = {}
    for name, p in params.items():
        g = grads[name] * scale
        m_hat = (1 - b1) * g / (1 - b1)
        v_hat = (1 - b2) * g * g / (1 - b2)
        updated[name] = p * (1 - lr * wd) - lr * m_hat / (torch.sqrt(v_hat) + eps)
    return updated


def make_data(loss_fn: str, reference: ReferenceLora, generator: torch.Generator):
    sequences = [torch.randint(3, 500, (n,), generator=generator).tolist() for n in (23, 11)]
    data, local_inputs = [], []
    for tokens in sequences:
        inputs, targets = tokens[:-1], tokens[1:]
        n = len(targets)
        if loss_fn == "cross_entropy":
            extra = {"weights": (torch.rand(n, generator=generator) > 0.3).double() * 0.5}
        else:
            with torch.no_grad():
                current = reference.target_logprobs(inputs, targets)
            extra = {
                "logprobs": (current + 0.3 * torch.randn(n, generator=generator, dtype=torch.float64))
                .float()
                .double(),
                "advantages": torch.randn(n, generator=generator, dtype=torch.float64).float().double(),
            }
        wire_inputs = {"target_tokens": targets, **{k: v.float().tolist() for k, v in extra.items()}}
        data.append(types.Datum(model_input=types.ModelInput.from_ints(inputs), loss_fn_inputs=wire_inputs))
        local_inputs.append((inputs, targets, extra))
    return data, local_inputs


def check_one_step(
    embedded_server, training, reference_base, loss_fn, config, data_seed, clip_fraction, step_name, before
):
    reference = ReferenceLora(reference_base, before)
    data, local_inputs = make_data(loss_fn, reference, torch.Generator().manual_seed(data_seed))
    output = training.forward_backward(data, loss_fn, loss_fn_config=config or None).result()

    total = 0
    for datum_output, (inputs, targets, extra) in zip(output.loss_fn_outputs, local_inputs, strict=True):
        logprobs = reference.target_logprobs(inputs, targets)
        losses = reference_loss(loss_fn, logprobs, extra, config)
        np.testing.assert_allclose(
            datum_output["logprobs"].to_numpy(), logprobs.detach(), rtol=1e-5, atol=1e-5
        )
        np.testing.assert_allclose(
            datum_output["elementwise_loss"].to_numpy(), losses.detach(), rtol=1e-5, atol=1e-5
        )
        total = total + losses.sum()
    assert output.metrics["loss:sum"] == pytest.approx(float(total.detach()), rel=1e-5, abs=1e-5)

    total.backward()
    grads = {
        name: t.grad if t.grad is not None else torch.zeros_like(t) for name, t in reference.tensors.items()
    }
    grad_norm = float(torch.sqrt(sum((g**2).sum() for g in grads.values())))
    clip_norm = clip_fraction * grad_norm
    metrics = training.optim_step(types.AdamParams(**ADAM, grad_clip_norm=clip_norm)).result().metrics
    assert metrics["grad_norm:mean"] == pytest.approx(grad_norm, rel=1e-4)

    after = read_adapter(embedded_server, training, step_name)
    expected = reference_adamw_first_step(
        {k: t.detach() for k, t in reference.tensors.items()}, grads, clip_norm
    )
    for name, value in expected.items():
        change_server = after[name].double() - before[name].double()
        change_expected = value - before[name].double()
        tolerance = 1e-4 * float(change_expected.abs().max()) + 1e-9
        np.testing.assert_allclose(change_server, change_expected, rtol=1e-3, atol=tolerance, err_msg=name)
    reference.close()
    return after


@pytest.mark.parametrize(
    "loss_fn, config",
    [
        ("cross_entropy", {}),
        ("importance_sampling", {}),
        ("ppo", {"clip_low_threshold": 0.9, "clip_high_threshold": 1.1}),
    ],
)
def test_loss_gradient_and_adamw_match_float64(embedded_server, service_client, reference_base, loss_fn, config):
    training = service_client.create_lora_training_client(base_model=MODEL, rank=RANK, seed=7).result()
    initial = read_adapter(embedded_server, training, "initial")
    assert all(float(t.abs().max()) == 0 for name, t in initial.items() if name.endswith("lora_B"))
    step1 = check_one_step(embedded_server, training, reference_base, loss_fn, config, 1, 0.0, "step-1", initial)
    a_changed = any(not torch.equal(step1[n], initial[n]) for n in initial if n.endswith("lora_A"))
    assert a_changed  # weight decay moves A; its gradient is zero while B = 0
    # Second step: B != 0, so A gets a gradient too; grad clipping to half the norm is on.
    resumed = service_client.create_training_client_from_state(
        training.save_state("step-1b").result().path
    ).result()
    check_one_step(embedded_server, resumed, reference_base, loss_fn, config, 2, 0.5, "step-2", step1)


def test_ppo_defaults_and_unknown_config_keys(service_client):
    training = service_client.create_lora_training_client(base_model=MODEL, rank=RANK).result()
    datum = types.Datum(
        model_input=types.ModelInput.from_ints([5, 6, 7]),
        loss_fn_inputs={
            "target_tokens": [6, 7, 8],
            "logprobs": [-1.0, -1.0, -1.0],
            "advantages": [1.0, -1.0, 0.5],
        },
    )
    output = training.forward([datum], "ppo").result()  # default clip thresholds 0.8 / 1.2
    logprobs = torch.tensor(output.loss_fn_outputs[0]["logprobs"].to_numpy(), dtype=torch.float64)
    expected = reference_loss(
        "ppo",
        logprobs,
        {
            "logprobs": torch.full((3,), -1.0, dtype=torch.float64),
            "advantages": torch.tensor([1.0, -1.0, 0.5], dtype=torch.float64),
        },
        {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
    )
    assert output.metrics["loss:sum"] == pytest.approx(float(expected.sum()), rel=1e-5)
    with pytest.raises(tinker.BadRequestError, match="clip_ratio"):
        training.forward([datum], "ppo", loss_fn_config={"clip_ratio": 0.2}).result()


def test_adamw_moments_over_steps_match_float64():
    from embedded_tinker.optimizers import AdamW

    generator = torch.Generator().manual_seed(0)
    start = [torch.randn(3, 4, generator=generator), torch.randn(5, generator=generator)]
    grads = [[torch.randn_like(p) for p in start] for _ in range(3)]
    params = [p.clone() for p in start]
    optimizer = AdamW(params, {"type": "adamw"})
    hp = dict(learning_rate=0.1, beta1=0.8, beta2=0.9, eps=1e-3, weight_decay=0.1, grad_clip_norm=1.5)
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = g.clone()
        optimizer.step(hp)

    expected = [p.double() for p in start]
    m = [torch.zeros_like(p) for p in expected]
    v = [torch.zeros_like(p) for p in expected]
    for t, step_grads in enumerate(grads, start=1):
        g64 = [g.double() for g in step_grads]
        norm = torch.sqrt(sum((g**2).sum() for g in g64))
        g64 = [g * min(1.0, hp["grad_clip_norm"] / float(norm)) for g in g64]
        for i, g in enumerate(g64):
            expected[i] = expected[i] * (1 - hp["learning_rate"] * hp["weight_decay"])
            m[i] = hp["beta1"] * m[i] + (1 - hp["beta1"]) * g
            v[i] = hp["beta2"] * v[i] + (1 - hp["beta2"]) * g * g
            m_hat, v_hat = m[i] / (1 - hp["beta1"] ** t), v[i] / (1 - hp["beta2"] ** t)
            expected[i] = expected[i] - hp["learning_rate"] * m_hat / (torch.sqrt(v_hat) + hp["eps"])
    for got, want in zip(params, expected, strict=True):
        np.testing.assert_allclose(got.double(), want, rtol=1e-5, atol=1e-6)
    assert optimizer.steps_taken == 3
