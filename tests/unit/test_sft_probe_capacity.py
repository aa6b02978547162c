"""The SFT preflight probe treats a busy service like the RL probe does: no "needs a fork" verdict."""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from experiment.service.capacity import CapacityBlocked, is_capacity_refusal
from experiment.sft.runs import SFTRun
from experiment.sft.steps import preflight_probe as probe_step


class _Refusing:
    """A probe session whose create_model raises the given error."""

    def __init__(self, err: BaseException):
        self.err = err

    def lora_client(self, *args, **kwargs):
        raise self.err

    def close(self):
        return True


def _ctx_with_session(monkeypatch, err: BaseException):
    events = []
    ctx = SimpleNamespace(spec=SimpleNamespace(section=lambda name: {}),
                          store=SimpleNamespace(append_event=lambda *a, **k: events.append(a),
                                                add_evidence=lambda *a, **k: None))
    run = SFTRun(name="trimuon@lr=0.02", arm="trimuon", family="trimuon", config={}, learning_rate=0.02,
                 seed=0, label="0.02")

    @contextmanager
    def session(ctx, purpose):
        yield _Refusing(err)

    monkeypatch.setattr(probe_step, "service_routing", lambda ctx: {"reason": "embedded"})
    monkeypatch.setattr(probe_step, "served_model_and_rank", lambda ctx: ("embedded/tiny-random", 4))
    monkeypatch.setattr(probe_step, "sft_settings", lambda spec: SimpleNamespace(renderer_name="r", max_seq_len=8))
    monkeypatch.setattr(probe_step, "training_examples", lambda spec: ["example"])
    monkeypatch.setattr(probe_step, "sft_runs", lambda ctx: [run])
    monkeypatch.setattr(probe_step, "open_sft_session", session)
    return ctx


def test_a_capacity_refusal_at_create_model_is_raised_not_reported_as_needing_a_fork(monkeypatch):
    err = RuntimeError("Trainer capacity exhausted, try again later")
    assert is_capacity_refusal(err)
    ctx = _ctx_with_session(monkeypatch, err)
    with pytest.raises(RuntimeError, match="capacity exhausted"):
        probe_step.run(ctx)


def test_a_capacity_block_is_raised_too(monkeypatch):
    ctx = _ctx_with_session(monkeypatch, CapacityBlocked("busy", 0, 30.0))
    with pytest.raises(CapacityBlocked):
        probe_step.run(ctx)


def test_a_rejected_optimizer_still_fails_the_gate_with_the_fork_diagnostic(monkeypatch):
    err = ValueError("unknown optimizer family 'trimuon'")
    assert not is_capacity_refusal(err)
    verdict = probe_step.run(_ctx_with_session(monkeypatch, err))
    assert verdict.status == "failed"
    assert any("needs a fork" in reason for reason in verdict.reasons)
