"""Generation audit (GA-1..GA-9): deterministic sample, numeric_exact comparison, overlap,
the record's validation, blind re-solves through the stock SDK against the real embedded server,
and the repair loop (reject, new file versions, re-audit)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from experiment.data import TaskItem
from experiment.grading.run_dir import run_validation
from experiment.run.state import RunState
from experiment.selfgen import generation_audit as audit
from experiment.stats import generation_audit as audit_record

SPEC_AUDIT = {"required": True, "answer_comparison": "numeric_exact", "min_sample_size": 4,
              "max_label_errors": 0, "max_eval_overlaps": 0}
EVALUATION = [TaskItem("eval-0", "Zoe has 98 cards. She buys 95 more. How many cards does Zoe have now?", "193"),
              TaskItem("eval-1", "Tom has 4 cards and lost 3 of them. How many cards does Tom have now?", "1")]


def task(index: int, prompt: str, answer: str, disposition: str = "accepted") -> dict:
    return {"item_id": f"selfgen-{index:06d}", "index": index, "prompt": prompt, "answer": answer,
            "disposition": disposition, "code": f"def solve():\n    return {answer}\n", "error": None}


def tasks_fixture() -> list[dict]:
    rows = [task(i, f"Anna has {i + 10} shells and finds {i + 3} more. How many shells does Anna have?",
                 str(2 * i + 13)) for i in range(6)]
    rows.append(task(6, "Broken.", None, "rejected"))
    rows.append(task(7, "Crashes.", None, "execution_error"))
    return rows


# ---- select_sample ----

def sample_in_seed_order(accepted_ids: list[str], seed: int, size: int) -> list[str]:
    """GA-5's sample from the contract's text: the accepted ids sorted by sha256(json.dumps([seed, item_id])), the
    first `size`."""
    return sorted(accepted_ids, key=lambda item: hashlib.sha256(json.dumps([seed, item]).encode()).hexdigest())[:size]


def test_select_sample_sorts_accepted_ids_by_sha256_of_seed_and_id():
    tasks = tasks_fixture()
    accepted_ids = [t["item_id"] for t in tasks if t["disposition"] == "accepted"]
    for seed in (0, 1, 17):
        chosen = [t["item_id"] for t in audit.select_sample(tasks, 4, seed)]
        assert chosen == sample_in_seed_order(accepted_ids, seed, 4)
        assert len(set(chosen)) == 4 and set(chosen) <= set(accepted_ids)
    assert audit.select_sample(tasks, 4, 0) != audit.select_sample(tasks, 4, 1) or len(accepted_ids) < 2
    assert len(audit.select_sample(tasks, 100, 0)) == 6  # min(accepted, size)


def test_sample_size_is_min_of_accepted_and_min_sample_size_or_100():
    assert audit.sample_size(6, {"min_sample_size": 4}) == 4
    assert audit.sample_size(3, {"min_sample_size": 4}) == 3
    assert audit.sample_size(640, {}) == 100


# ---- numeric_exact ----

@pytest.mark.parametrize("label, answer, agrees", [
    ("12", "12", True), ("12", " 12 ", True), ("12", "12.0", True), ("-3", "-3", True),
    ("5/2", "2.5", True), ("12", "12.000001", False), ("12", "$12", False), ("12", "12 apples", False),
    ("12", "1,2", False), ("1000", "1,000", False), ("12", None, False), ("12", "", False),
    ("12", "\\frac{24}{2}", False), ("12", "3/0", False), (None, "12", False), ("12", "13", False),
])
def test_numeric_exact_is_strict_with_zero_tolerance(label, answer, agrees):
    assert audit_record.answer_agreement(label, answer, "numeric_exact") is agrees


def test_categorical_exact_is_case_and_space_sensitive_and_unknown_strategies_raise():
    assert audit_record.answer_agreement("Paris", "Paris", "categorical_exact")
    assert not audit_record.answer_agreement("Paris", "paris", "categorical_exact")
    assert not audit_record.answer_agreement("Paris", "Paris ", "categorical_exact")
    assert not audit_record.answer_agreement("", "", "categorical_exact")
    with pytest.raises(audit_record.UnsupportedComparison, match="numeric_tolerance"):
        audit_record.answer_agreement("1", "1", "numeric_tolerance")


# ---- overlap and duplicates ----

def test_evaluation_overlap_is_normalized_exact_and_counts_accepted_tasks_only():
    tasks = tasks_fixture()
    tasks[0]["prompt"] = "  zoe HAS 98 cards.\tShe buys 95 more.  How many cards does Zoe have now? "
    tasks[6]["prompt"] = EVALUATION[1].question  # rejected: not counted
    tasks[1]["prompt"] = "Zoe has 98 cards. She buys 95 more. How many cards does Zoe have today?"  # paraphrase
    assert audit_record.evaluation_overlap(tasks, EVALUATION) == [{"item_id": "selfgen-000000", "evaluation_item_id": "eval-0"}]
    frozen_rows = [json.loads(line) for line in audit.evaluation_jsonl(EVALUATION).splitlines()]
    assert audit_record.evaluation_overlap(tasks, frozen_rows) == audit_record.evaluation_overlap(tasks, EVALUATION)
    tasks[2]["prompt"] = tasks[3]["prompt"].upper()
    assert audit_record.duplicate_count(tasks) == 1


# ---- the record and validate ----

def agreeing_answers(tasks: list[dict]) -> dict[str, dict]:
    """Independent answers equal to each task's label (what an agreeing solver would return)."""
    return {t["item_id"]: {"independent_answer": t["answer"], "reasoning": f"worked: \\boxed{{{t['answer']}}}"}
            for t in tasks if t["disposition"] == "accepted"}


def report_for(tasks, resolved, seed=3):
    return audit.build_report(tasks=tasks, evaluation=EVALUATION, resolved=resolved, resolver_id="solver-x",
                              spec_audit=SPEC_AUDIT, seed=seed, dataset_file="generated-tasks-v1.jsonl",
                              evaluation_file=audit.EVALUATION_FILE, audit_file="generation-audit-v1.json")


def test_a_clean_record_validates_passed():
    tasks = tasks_fixture()
    report = report_for(tasks, agreeing_answers(tasks))
    assert report["counts"] == {"generated": 8, "accepted": 6, "rejected": 1, "execution_errors": 1}
    assert report["sample_size"] == 4 and report["label_error_count"] == 0 and report["overlap_count"] == 0
    assert all(s["blind_to_label"] is True and s["method"] == "independent_resolve" for s in report["samples"])
    result = audit.validate(report, SPEC_AUDIT, tasks, EVALUATION)
    assert result.status == "passed" and result.reasons == []


def test_a_wrong_label_fails_and_is_reported():
    tasks = tasks_fixture()
    resolved = agreeing_answers(tasks)
    sampled = audit.select_sample(tasks, 4, 3)[0]["item_id"]
    resolved[sampled]["independent_answer"] = "999"
    report = report_for(tasks, resolved)
    assert report["label_error_count"] == 1
    assert report["disagreements"] == [{"item_id": sampled, "label": next(t["answer"] for t in tasks if t["item_id"] == sampled),
                                        "independent_answer": "999"}]
    result = audit.validate(report, SPEC_AUDIT, tasks, EVALUATION)
    assert result.status == "failed" and any("1 label errors in 4" in r for r in result.reasons)
    assert audit.validate(report, {**SPEC_AUDIT, "max_label_errors": 1}, tasks, EVALUATION).passed


@pytest.mark.parametrize("tamper, reason", [
    (lambda r: r.update(label_error_count=0) or r["samples"][0].update(independent_answer="999"), "label_error_count 0"),
    (lambda r: r["samples"].pop(), "sampled ids"),
    (lambda r: r["samples"].reverse(), "sampled ids"),
    (lambda r: r.update(sample_seed=4), "sampled ids"),
    (lambda r: r.update(sample_seed="3"), "sample_seed is not an integer"),
    (lambda r: r["counts"].update(accepted=5), "counts"),
    (lambda r: r.update(overlap_count=1), "overlap_count 1"),
    (lambda r: r["samples"][1].update(blind_to_label=False), "blind_to_label"),
    (lambda r: r["samples"][2].update(resolver_id=""), "resolver_id"),
    (lambda r: r.update(stage="after_training"), "before_training"),
])
def test_validate_recomputes_everything_and_catches_tampering(tamper, reason):
    tasks = tasks_fixture()
    report = report_for(tasks, agreeing_answers(tasks))
    tamper(report)
    result = audit.validate(report, SPEC_AUDIT, tasks, EVALUATION)
    assert result.status == "failed" and any(reason in r for r in result.reasons), result.reasons


def test_an_overlap_or_a_missing_strategy_fails():
    tasks = tasks_fixture()
    tasks[4]["prompt"] = EVALUATION[0].question
    report = report_for(tasks, agreeing_answers(tasks))
    assert report["overlap_count"] == 1
    assert not audit.validate(report, SPEC_AUDIT, tasks, EVALUATION).passed
    clean = tasks_fixture()
    unverified = audit.validate(report_for(clean, agreeing_answers(clean)), {"min_sample_size": 4}, clean, EVALUATION)
    assert unverified.status == "failed" and "unverified" in unverified.reasons[0]


# ---- against the real embedded server ----

@pytest.fixture(scope="module")
def embedded(embedded_server):
    import tinker

    from embedded_tinker.launch import LOCAL_API_KEY
    from experiment.rl.recipe import renderer_named

    server = embedded_server  # one backend for the session (tests/conftest.py)
    client = tinker.ServiceClient(base_url=server.base_url, api_key=LOCAL_API_KEY)
    training = client.create_lora_training_client(base_model="embedded/tiny-arith", rank=2).result()
    renderer = renderer_named(training.get_info().model_data.tokenizer_id, "qwen3_5_disable_thinking")
    sampler = client.create_sampling_client(base_model="embedded/tiny-arith").result()
    yield sampler, renderer
    client.close("success")


def test_blind_resolve_answers_from_the_text_alone(embedded):
    from tinker_cookbook.recipes.math_rl.math_grading import extract_boxed

    from experiment.rl.recipe import run_async

    sampler, renderer = embedded
    text = "Tom has 3 apples. He buys 4 more. How many apples does Tom have now?"
    first = run_async(audit.blind_resolve(sampler, renderer, "t-1", text, max_tokens=16, few_shot=False))
    assert isinstance(first["reasoning"], str) and first["reasoning"]
    assert first["independent_answer"] == extract_boxed(first["reasoning"])
    again = run_async(audit.blind_resolve(sampler, renderer, "t-1", text, max_tokens=16, few_shot=False))
    assert again == first  # greedy: the same worked solution


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="the sandbox needs root")
def test_repair_rejects_wrong_labels_freezes_new_versions_and_reaudits(embedded):
    """Six accepted tasks whose labels the real solver agrees with, except one deliberately wrong label:
    round 1 fails on it, the task is rejected, round 2 (new files) passes without it."""
    from experiment.rl.recipe import run_async
    from experiment.selfgen.sandbox import Sandbox
    from experiment.selfgen.task_generation import GenerationSettings, TaskGenerator

    sampler, renderer = embedded
    questions = [f"{name} has {a} marbles. {pron} buys {b} more. How many marbles does {name} have now?"
                 for name, pron, a, b in [("Ben", "He", 2, 3), ("Lucy", "She", 4, 1), ("Omar", "He", 5, 2),
                                          ("Mia", "She", 1, 6), ("Leo", "He", 3, 3), ("Emma", "She", 6, 2)]]
    solver = audit.Resolver(sampler, renderer, "embedded/tiny-arith (greedy)", max_tokens=16, few_shot=False)
    rows = [task(i, q, None) for i, q in enumerate(questions)]
    run_async(solver.resolve(rows))
    answered = [r for r in rows if audit_record.strict_number(solver.answers[r["item_id"]]["independent_answer"]) is not None]
    if len(answered) < 3:
        pytest.skip("the tiny solver boxed too few integers to build the scenario")
    for row in answered:
        row["answer"] = str(audit_record.strict_number(solver.answers[row["item_id"]]["independent_answer"]))
    wrong = answered[0]
    wrong["answer"] = str(int(wrong["answer"]) + 1000)
    tasks = [dict(r, index=i, item_id=f"selfgen-{i:06d}") for i, r in enumerate(answered)]
    solver.answers = {}  # the audit re-solves from scratch
    settings = GenerationSettings(
        instruction="unused", generator_model="embedded/tiny-arith", generator_path=None,
        solver_model="embedded/tiny-arith", solver_path=None, n_accept=len(tasks) - 1, filter_samples=8,
        keep_band=(1, 6), min_words=1, max_words=120, filter_max_tokens=16, generation_max_tokens=16,
        solver_max_tokens=16, temperature=1.0, sandbox_timeout_s=2.0, max_candidates=len(tasks))
    generator = TaskGenerator(settings=settings, generator=None, filter_sampler=None, renderer=renderer,
                              evaluation_prompts={}, sandbox=Sandbox(), filter_arm=None, candidates=tasks)
    frozen, posted = {}, []

    def freeze(name, text):
        assert frozen.setdefault(name, text) == text, f"{name} changed after it was frozen"

    outcome = run_async(audit.audit_with_repair(generator, solver, EVALUATION, {**SPEC_AUDIT, "min_sample_size": 100},
                                                seed=0, max_rounds=3, freeze=freeze, post=posted.append))
    assert outcome.passed and outcome.rounds == 2
    assert [p["label_error_count"] for p in posted] == [1, 0]
    assert posted[0]["disagreements"][0]["item_id"] == wrong["item_id"]
    assert set(frozen) == {audit.EVALUATION_FILE, "generated-tasks-v1.jsonl", "generated-tasks-v2.jsonl",
                           "generation-audit-v1.json", "generation-audit-v2.json"}
    v1 = [json.loads(line) for line in frozen["generated-tasks-v1.jsonl"].splitlines()]
    v2 = [json.loads(line) for line in frozen["generated-tasks-v2.jsonl"].splitlines()]
    assert next(r for r in v1 if r["item_id"] == wrong["item_id"])["disposition"] == "accepted"
    repaired = next(r for r in v2 if r["item_id"] == wrong["item_id"])
    assert repaired["disposition"] == "rejected" and repaired["error"].startswith("audit round 1: label")
    final = posted[-1]
    assert final["dataset_file"] == "generated-tasks-v2.jsonl" and final["audit_file"] == "generation-audit-v2.json"
    assert [p["sample_seed"] for p in posted] == [0, 1]  # each round draws a fresh sample
    assert audit.validate(final, {**SPEC_AUDIT, "min_sample_size": 100}, generator.candidates, EVALUATION).passed
    assert wrong["item_id"] not in [t.id for t in generator.training_tasks()]


# ---- the gate, end to end on the embedded backend ----

SELFGEN_SEED = audit.__file__.replace("experiment/selfgen/generation_audit.py", "specs/selfgen_tasks_vs_gsm8k.json")


def _local_spec(tmp_path, **generation_changes):
    from experiment.contract.spec import load_spec

    raw = load_spec(SELFGEN_SEED, rehearse=True).to_dict()  # the rehearsal, as a standalone spec file
    raw["generation"].update(generation_changes)
    # fewer accepted tasks than the rehearsal trains on: the generated arm takes one a step, for as many steps as
    # there are tasks (intake refuses an arm whose steps need more tasks than are accepted)
    n_accept = raw["generation"]["n_accept"]
    generated = next(arm for arm in raw["arms"] if arm["name"] == "rl_selfgen")
    if (generated.get("groups_per_batch") or raw["batch_size"]) * raw["steps"] > n_accept:
        generated["groups_per_batch"] = 1
        raw["steps"] = n_accept
        for arm in raw["arms"]:
            if arm.get("steps") is not None:
                arm["steps"] = n_accept
    path = tmp_path / "selfgen_tasks_local_small.json"
    path.write_text(json.dumps(raw))
    return path


def _gate_context(tmp_path, spec_path):
    from experiment.gates import RunContext
    from experiment.contract.plan import build_plan
    from experiment.service.target import ServiceTarget
    from experiment.contract.spec import load_spec
    from experiment.run.store import RunStore

    spec = load_spec(spec_path)
    plan = build_plan(spec)
    return RunContext(spec=spec, plan=plan, store=RunStore.create(tmp_path / "runs", spec, plan),
                      service=ServiceTarget("embedded", None, checkpoint_dir=str(tmp_path / "checkpoints")))


def test_gate_refuses_without_a_sandbox(tmp_path, monkeypatch):
    from experiment.selfgen import sandbox as sandbox_module
    from experiment.selfgen.steps import generation_audit as gate

    monkeypatch.setattr(sandbox_module.os, "geteuid", lambda: 1000)
    verdict = gate.run(_gate_context(tmp_path, _local_spec(tmp_path)))
    assert verdict.status == "failed" and verdict.reasons[0].startswith("no sandbox for model-written code")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="the sandbox needs root")
def test_gate_refuses_without_namespaces_and_runs_no_model_code(tmp_path, monkeypatch):
    """No `unshare` on PATH: the gate stops with its reason before any session or sandbox call."""
    from experiment.selfgen.steps import generation_audit as gate

    monkeypatch.setattr(gate, "_generate_and_audit", lambda *args: pytest.fail("model code would run"))
    monkeypatch.setenv("PATH", str(tmp_path))
    verdict = gate.run(_gate_context(tmp_path, _local_spec(tmp_path)))
    assert verdict.status == "failed"
    assert verdict.reasons == ["no sandbox for model-written code: the sandbox needs network and pid namespaces, "
                               "and no `unshare` program is on PATH"]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="the sandbox needs root")
def test_gate_refuses_a_re_solver_that_is_the_trained_model_before_generating(tmp_path, monkeypatch):
    """The re-solver every rehearsal used before (embedded/tiny-arith: the trained base and the filter
    model) is refused before any candidate is generated; the rehearsal's exact solver is not."""
    from experiment.selfgen.steps import generation_audit as gate

    monkeypatch.setattr(gate, "_generate_and_audit", lambda *args: pytest.fail("an audit by a dependent solver ran"))
    ctx = _gate_context(tmp_path, _local_spec(tmp_path, solver_model="embedded/tiny-arith"))
    ctx.state.receive({"served_model": "embedded/tiny-arith"})
    verdict = gate.run(ctx)
    assert verdict.status == "failed"
    assert verdict.reasons == ["the generation audit's re-solver is not independent: the re-solver embedded/tiny-arith "
                               "is the filter base model (embedded/tiny-arith); the re-solver embedded/tiny-arith is "
                               "the trained base model (embedded/tiny-arith)"]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="the sandbox needs root")
def test_gate_stops_with_its_reason_when_the_sandbox_fails_mid_run(tmp_path, monkeypatch):
    from experiment.selfgen.steps import generation_audit as gate
    from experiment.selfgen.sandbox import SandboxError

    def failing(*args):  # a named fake: a call whose process survived SIGKILL cannot be produced for real
        raise SandboxError("1 process(es) of a sandboxed call (uid 1600000001) survived SIGKILL")

    monkeypatch.setattr(gate, "_generate_and_audit", failing)
    verdict = gate.run(_gate_context(tmp_path, _local_spec(tmp_path)))
    assert verdict.status == "failed"
    assert verdict.reasons[0].startswith("sandbox failure while running model-written code: 1 process(es)")


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="the sandbox needs root")
def test_gate_generates_audits_and_records_on_the_embedded_backend(tmp_path, monkeypatch):
    """The real gate: local generator model -> sandbox -> filters -> frozen files -> blind re-solves by
    the exact arithmetic solver -> repair rounds -> the section-10 record. The record is consistent with the
    frozen files, the run validates, and a secret in the environment appears nowhere in the run."""
    from experiment.selfgen.steps import generation_audit as gate

    secret = "rx-fake-secret-gate-5d1e77"
    monkeypatch.setenv("TINKER_API_KEY", secret)
    ctx = _gate_context(tmp_path, _local_spec(tmp_path, n_accept=3, max_candidates=192, batch_size=32,
                                              max_audit_rounds=3))
    try:
        client = ctx.service.service_client()
        training = client.create_lora_training_client(base_model="embedded/tiny-arith", rank=2).result()
        ctx.state.receive({"served_model": "embedded/tiny-arith",
                           "tokenizer_id": training.get_info().model_data.tokenizer_id})
        client.close("success")
        verdict = gate.run(ctx)
    finally:
        ctx.service.stop()
    result = ctx.store.read_result()
    files = {entry["name"]: entry for entry in ctx.store.read_manifest()["files"]}
    assert files[audit.EVALUATION_FILE]["kind"] == "generated_tasks"
    evaluation_rows = (ctx.store.run_dir / "evidence" / audit.EVALUATION_FILE).read_text().splitlines()
    assert len(evaluation_rows) == 500  # the full held-out set
    record = result.get("generation_audit")
    feasibility = verdict.measured["feasibility"]
    assert feasibility["attempted"] == verdict.measured["counts"]["generated"] > 0
    assert feasibility["measurements"]["generation"]["units"] == feasibility["attempted"]
    assert verdict.measured["identities"]["generator"]["weights_sha256"]
    if record is not None:
        assert files[record["dataset_file"]]["kind"] == "generated_tasks" and record["audit_file"] in files
        candidates = [json.loads(line) for line in
                      (ctx.store.run_dir / "evidence" / record["dataset_file"]).read_text().splitlines()]
        assert record["counts"] == audit_record.counts_of(candidates) == verdict.measured["counts"]
        assert [c["item_id"] for c in candidates] == [f"selfgen-{i:06d}" for i in range(len(candidates))]
        assert all(s["resolver_id"].startswith("exact-solver:embedded-arithmetic") for s in record["samples"])
        assert record["resolver_independent"] is True and record["resolver"]["code_sha256"]
        problems = [p for p in run_validation(ctx.store.run_dir).problems if p.check.startswith("generation_audit")]
        assert problems == []
    # seeded sampling on the committed generator weights: this small run passes (in round 3 when written)
    assert verdict.status == "passed", verdict.reasons
    tasks = ctx.state.generated_tasks()
    assert len(tasks) == 3 and all(isinstance(t, TaskItem) for t in tasks)
    resumed = RunState()  # what a resumed run rebuilds from the gate's persisted rows
    resumed.receive({"generated_task_rows": verdict.state["generated_task_rows"]})
    assert resumed.generated_tasks() == tasks
    assert record["status"] == "passed" and record["label_error_count"] == 0 and record["overlap_count"] == 0
    assert [r["label_error_count"] for r in record["rounds"]][-1] == 0
    assert all(f"generated-tasks-v{r['round']}.jsonl" in files for r in record["rounds"])
    for path in ctx.store.run_dir.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
