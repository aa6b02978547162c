"""The service half of `flows.validate --reproduce` (REPRO-3, REPRO-4) against the session's embedded backend over the
stock SDK: a LoRA client trained one step and saved (state and sampler weights), records whose predictions the
pipeline's own evaluation code scored from those checkpoints, and forgeries of them. The end-to-end tests
(tests/e2e/test_reproduce_rehearsals.py) do the same on real rehearsal run directories.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json

import pytest
from tinker import types

from experiment.contract.spec import load_spec
from experiment.data import load_task_file, resolve_data_path
from experiment.grading.common import INVALID, PASS, CategoryGrade, Grade
from experiment.grading.reproduce import reproduce
from experiment.grading.reproduce.service import open_session, record_id, sampled_items
from experiment.rl.math_eval import greedy_predictions, prompt_template
from experiment.rl.recipe import renderer_for
from experiment.sft.loop import heldout_examples, score_heldout, to_datum
from suite import SELFGEN_SPEC, TRIMUON_SPEC

MODEL = "embedded/tiny-arith"
RENDERER = "qwen3_5_disable_thinking"


@pytest.fixture(scope="module")
def checkpoints(service_client):
    """(training client, its state path, its sampler path) after one SFT step on the base model."""
    training = service_client.create_lora_training_client(base_model=MODEL, rank=4).result()
    renderer = renderer_for(training, RENDERER)
    spec = load_spec(TRIMUON_SPEC, rehearse=True, rehearsal_scale="wiring")
    datum = to_datum(heldout_examples(spec)[0], renderer, 256)
    training.forward_backward([datum], "cross_entropy").result()
    training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
    return training, training.save_state("reproduce-state").result().path, \
        training.save_weights_for_sampler("reproduce-sampler").result().path


def _inline(name: str, rows: list[dict]) -> dict:
    content = "".join(json.dumps(row) + "\n" for row in rows)
    return {"name": name, "kind": "predictions", "content": content, "sha256": hashlib.sha256(content.encode()).hexdigest()}


def _record(provenance: dict, rows: list[dict], checkpoint: str) -> dict:
    return {"evaluation": {"evaluators": {"e" * 64: provenance},
                           "scores": [{"arm": "trained", "predictions_ref": "predictions-trained.jsonl"}]},
            "evidence": {"files": [_inline("predictions-trained.jsonl", rows)],
                         "checkpoints": [{"arm": "trained", "uri": checkpoint}]}}


def _reproduced(result: dict, spec, url: str) -> list[tuple[str, str]]:
    grade = Grade(categories={name: CategoryGrade(name, PASS) for name in ("evaluator", "generation_audit")}, spec=spec)
    reproduction = reproduce(grade, result, None, open_session(url))
    return [(issue.rule, issue.status) for issue in reproduction.issues if issue.rule in ("REPRO-3", "REPRO-4")]


@pytest.fixture(scope="module")
def nll_record(checkpoints) -> tuple[dict, object]:
    """A TriMuon-shaped record: held-out NLL of the sample's rows scored by the pipeline (experiment.sft.loop)."""
    training, state, _ = checkpoints
    spec = load_spec(TRIMUON_SPEC, rehearse=True, rehearsal_scale="wiring")
    examples = {example.id: example for example in heldout_examples(spec)}
    items = sampled_items(record_id(_record({}, [], state)), list(examples))
    renderer = renderer_for(training, RENDERER)
    scored = score_heldout(training, [to_datum(examples[i], renderer, 256) for i in items], items, call=lambda f: f())
    rows = [{"item_id": item, "run": "trained", "evaluator_id": "e" * 64, "checkpoint": state,
             "prediction": {"nll_sum": total.nll_sum, "n_tokens": total.n_tokens}}
            for item, total in zip(scored.example_ids, scored.examples)]
    provenance = {"prompt_template": f"renderer {RENDERER}; conversation_to_datum(train_on_what=all_assistant_messages, "
                                     "reduction=none, max_length=256); forward(..., cross_entropy)",
                  "decoding": {"temperature": 0.0, "max_tokens": 0, "stop": []}}
    return _record(provenance, rows, state), spec


@pytest.fixture(scope="module")
def text_record(service_client, checkpoints) -> tuple[dict, object]:
    """An RL-shaped record: greedy predictions of the sample's items scored by the pipeline (experiment.rl.math_eval)."""
    training, _, sampler_path = checkpoints
    spec = load_spec(SELFGEN_SPEC, rehearse=True, rehearsal_scale="wiring")
    problems = {item.id: item for item in load_task_file(resolve_data_path(spec.to_dict()["eval"]["path"]))}
    items = sampled_items(record_id(_record({}, [], sampler_path)), list(problems))
    sampler = service_client.create_sampling_client(model_path=sampler_path).result()
    predicted = asyncio.run(greedy_predictions(sampler, renderer_for(training, RENDERER), [problems[i] for i in items],
                                               max_tokens=16, few_shot=False))
    rows = [{"item_id": row["item_id"], "evaluator_id": "e" * 64, "checkpoint": sampler_path, "grading": row["grading"],
             "prediction": row["prediction"], "reference": row["reference"], "value": row["correct"]} for row in predicted]
    provenance = {"prompt_template": prompt_template(False), "decoding": {"temperature": 0.0, "max_tokens": 16}}
    return _record(provenance, rows, sampler_path), spec


def test_held_out_nll_scored_by_the_pipeline_re_scores_from_the_checkpoint(embedded_server, nll_record):
    record, spec = nll_record
    assert _reproduced(record, spec, embedded_server.base_url) == []


def test_held_out_nll_scaled_by_0_99_is_refuted_by_the_checkpoint(embedded_server, nll_record):
    record, spec = copy.deepcopy(nll_record[0]), nll_record[1]
    entry = record["evidence"]["files"][0]
    rows = [json.loads(line) for line in entry["content"].splitlines()]
    for row in rows:
        row["prediction"]["nll_sum"] *= 0.99
    record["evidence"]["files"][0] = _inline(entry["name"], rows)
    assert _reproduced(record, spec, embedded_server.base_url) == [("REPRO-4", INVALID)]


def test_greedy_predictions_scored_by_the_pipeline_re_sample_from_the_checkpoint(embedded_server, text_record):
    record, spec = text_record
    assert _reproduced(record, spec, embedded_server.base_url) == []


def test_a_prediction_rewritten_to_score_the_other_way_is_refuted_by_re_sampling(embedded_server, text_record):
    record, spec = copy.deepcopy(text_record[0]), text_record[1]
    entry = record["evidence"]["files"][0]
    rows = [json.loads(line) for line in entry["content"].splitlines()]
    right = rows[0]["value"] != 1.0
    rows[0]["prediction"] = f"\\boxed{{{rows[0]['reference'] if right else int(rows[0]['reference']) + 1}}}"
    rows[0]["value"] = 1.0 if right else 0.0
    record["evidence"]["files"][0] = _inline(entry["name"], rows)
    assert _reproduced(record, spec, embedded_server.base_url) == [("REPRO-3", INVALID)]
