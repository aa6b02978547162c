"""experiment/sft/loop.py and experiment/sft/adaptation.py: data in the no_robots schema, identical
batches for every run, datums with 0/1 assistant weights, and real SFT steps with DiMuon and
TriMuon on the stock SDK against the embedded server."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from experiment.sft.adaptation import adaptation_batch_hash, adaptation_manifest, pair_mismatches
from experiment.sft.loop import (
    ChatExample, batch_id, datum_weights, load_chat_file, optim_params, score_heldout, step_batches, to_datum,
    train_step, untrained_examples,
)
from suite import REPO_ROOT

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "no_robots_sample.jsonl"
CHAT_TRAIN = REPO_ROOT / "embedded_tinker" / "tasks" / "data" / "chat_train.jsonl"
CHAT_TEST = REPO_ROOT / "embedded_tinker" / "tasks" / "data" / "chat_test.jsonl"


def test_the_fixture_and_the_embedded_chat_set_have_the_no_robots_schema():
    for path in (FIXTURE, CHAT_TRAIN, CHAT_TEST):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            assert {"prompt", "prompt_id", "messages", "category"} <= set(row)
            assert row["messages"][-1]["role"] == "assistant"
            assert all(set(m) == {"role", "content"} for m in row["messages"])
    examples = load_chat_file(FIXTURE)
    assert [e.id for e in examples][:2] == ["fixture-0001", "fixture-0002"]
    assert examples[1].messages[0]["role"] == "system"


def test_train_and_test_chat_splits_share_no_prompt():
    train = {json.loads(line)["prompt"] for line in CHAT_TRAIN.read_text().splitlines()}
    test = {json.loads(line)["prompt"] for line in CHAT_TEST.read_text().splitlines()}
    assert not train & test


def test_parquet_and_jsonl_load_the_same_rows(tmp_path):
    import pandas as pd

    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    pd.DataFrame(rows).to_parquet(tmp_path / "sample.parquet")
    assert load_chat_file(tmp_path / "sample.parquet") == load_chat_file(FIXTURE)


def test_every_run_gets_the_same_batches_and_batch_ids():
    order = [ChatExample(f"id{i}", [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}])
             for i in range(10)]
    first, second = step_batches(order, 4, 3), step_batches(list(order), 4, 3)
    assert [[e.id for e in b] for b in first] == [["id0", "id1", "id2", "id3"], ["id4", "id5", "id6", "id7"],
                                                  ["id8", "id9", "id0", "id1"]]
    assert [batch_id(s, b) for s, b in enumerate(first)] == [batch_id(s, b) for s, b in enumerate(second)]
    assert batch_id(0, first[0]) != batch_id(0, first[1])


def test_adaptation_manifests_and_pair_check():
    ids = ["step0000-aa", "step0001-bb"]
    manifest = adaptation_manifest("trimuon@lr=0.04", "pair", ids)
    assert manifest["adaptation_batch_hash"] == adaptation_batch_hash(ids)
    import hashlib
    assert manifest["adaptation_batch_hash"] == hashlib.sha256(json.dumps(ids).encode()).hexdigest()
    same = adaptation_manifest("dimuon_lite@lr=0.04", "pair", list(ids))
    other = adaptation_manifest("dimuon_lite@lr=0.08", "pair", ids[::-1])
    assert pair_mismatches([manifest, same]) == []
    assert len(pair_mismatches([manifest, same, other])) == 1


def test_optim_params_per_family():
    assert optim_params("dimuon", 0.01, {"beta1": 0.9}).type == "dimuon"
    trimuon = optim_params("trimuon", 0.01, {"beta1": 0.8, "grad_clip_norm": 1.0})
    assert trimuon.model_dump() == {"type": "trimuon", "learning_rate": 0.01, "beta1": 0.8, "grad_clip_norm": 1.0}


# ------------------------------------------------------------ real steps on the embedded server


def test_datums_weight_only_assistant_tokens(service_client):
    from tinker_cookbook import renderers

    training = service_client.create_lora_training_client(base_model="embedded/tiny-arith", rank=2).result()
    renderer = renderers.get_renderer("qwen3_5_disable_thinking", training.get_tokenizer())
    tokenizer = training.get_tokenizer()
    example = load_chat_file(FIXTURE)[0]
    datum = to_datum(example, renderer, 256)
    weights = datum_weights(datum)
    assert set(np.unique(weights)) <= {0.0, 1.0}  # 0/1 weights: reduction "none"
    targets = datum.loss_fn_inputs["target_tokens"].to_numpy()
    counted = tokenizer.decode(targets[weights > 0].tolist())
    assert example.messages[-1]["content"] in counted and "Write a two-line poem" not in counted


def test_an_example_cut_before_its_answer_is_named_untrained(service_client):
    """A max_seq_len the prompt alone fills leaves a datum that weighs nothing: the preflight probe names such
    examples of the preflights' fixed batch and stops (a TriMuon spec at max_seq_len 16 used to reach the
    correctness preflight, whose update tolerances came out NaN: a ValueError, exit 3)."""
    from tinker_cookbook import renderers

    training = service_client.create_lora_training_client(base_model="embedded/tiny-arith", rank=2).result()
    renderer = renderers.get_renderer("qwen3_5_disable_thinking", training.get_tokenizer())
    examples = load_chat_file(FIXTURE)[:3]
    assert untrained_examples(examples, renderer, 2048) == []
    assert untrained_examples(examples, renderer, 16) == [e.id for e in examples]
    assert not datum_weights(to_datum(examples[0], renderer, 16)).any()


@pytest.mark.parametrize("family", ["dimuon", "trimuon"])
def test_sft_steps_lower_the_heldout_nll_and_time_the_optimizer(service_client, family):
    from tinker.types.optimizer import OptimizerConfigBase
    from tinker_cookbook import renderers

    training = service_client.create_lora_training_client(
        base_model="embedded/tiny-arith", rank=4, optimizer=OptimizerConfigBase(type=family)).result()
    renderer = renderers.get_renderer("qwen3_5_disable_thinking", training.get_tokenizer())
    train, heldout = load_chat_file(CHAT_TRAIN)[:32], load_chat_file(CHAT_TEST)[:8]
    heldout_datums = [to_datum(e, renderer, 256) for e in heldout]
    direct = lambda fn: fn()  # noqa: E731 - no run here: each request made as is
    before = score_heldout(training, heldout_datums, [e.id for e in heldout], call=direct).summary()
    for step, batch in enumerate(step_batches(train, 8, 4)):
        record = train_step(training, [to_datum(e, renderer, 256) for e in batch], optim_params(family, 0.04, {}),
                            family, step, batch_id(step, batch), call=direct)
        assert record.optim_seconds > 0 and record.n_tokens > 0 and math.isfinite(record.loss_sum)
    after = score_heldout(training, heldout_datums, [e.id for e in heldout], call=direct).summary()
    assert after["n_tokens"] == before["n_tokens"] and after["n_examples"] == 8
    assert after["token_mean"] < before["token_mean"] - 0.5, (before["token_mean"], after["token_mean"])


# ------------------------------------------------------------ gate rules that need no training


def _context(tmp_path, drop_from_plan=(), backend="http://127.0.0.1:9"):
    """A run context for a copy of the production TriMuon spec, its plan file minus some fields."""
    from experiment.gates import RunContext
    from experiment.contract.plan import build_plan
    from experiment.service.target import ServiceTarget
    from experiment.contract.spec import load_spec
    from experiment.run.store import RunStore

    specs = REPO_ROOT / "specs"
    spec_dir = tmp_path / "specs"
    spec_dir.mkdir()
    (spec_dir / "trimuon_vs_dimuon_no_robots.json").write_text((specs / "trimuon_vs_dimuon_no_robots.json").read_text())
    plan_file = json.loads((specs / "trimuon_vs_dimuon_no_robots.plan.json").read_text())
    for name in drop_from_plan:
        plan_file.pop(name)
    (spec_dir / "trimuon_vs_dimuon_no_robots.plan.json").write_text(json.dumps(plan_file))
    spec = load_spec(spec_dir / "trimuon_vs_dimuon_no_robots.json")
    plan = build_plan(spec)
    return RunContext(spec=spec, plan=plan, store=RunStore.create(tmp_path / "runs", spec, plan),
                      service=ServiceTarget.from_backend(backend))


def test_fork_routing_puts_every_arm_on_the_fork_of_a_remote_service(tmp_path, no_service_env):
    from experiment.sft.runs import service_routing, sft_runs

    ctx = _context(tmp_path)
    routing = service_routing(ctx)
    assert routing["fork"] is True and set(routing["planned_services"]) == {"trimuon", "dimuon_lite"}
    assert [run.name for run in sft_runs(ctx)] == [f"{arm}@lr={lr:g}" for arm in ("trimuon", "dimuon_lite")
                                                   for lr in (5e-5, 1e-4, 2e-4)]
    ctx.service.kind, ctx.service.base_url = "embedded", None  # the embedded backend serves both families
    assert service_routing(ctx)["fork"] is False


def test_a_forked_optimizer_without_a_correctness_plan_is_required_unverified(tmp_path, no_service_env):
    from experiment.sft.steps.correctness_preflight import run as correctness_preflight

    ctx = _context(tmp_path, drop_from_plan=("correctness_preflight",))
    verdict = correctness_preflight(ctx)
    assert verdict.status == "failed" and verdict.reasons[0].startswith("required/unverified")
    assert "spec revision is requested" in verdict.reasons[0]
    assert ctx.store.read_result()["correctness_preflight"] == {"required": True, "status": "unverified", "paths": []}
