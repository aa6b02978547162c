"""Shared test setup: offline, one Prefect server for the session (all xdist workers), fast flow runs.

Prefect env vars must be set before prefect is imported (prefect-notes.md, "No-server default and
fast tests"). Flow tests use the session-scoped `prefect_harness` fixture; pure-logic tests never
import Prefect at all.
"""

from __future__ import annotations

import copy
import gc
import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings
from xdist.scheduler import LoadFileScheduling

# Bytecode caches are written: where PYTHONDONTWRITEBYTECODE is set (as on the workplace's machines),
# every process the suite starts (flows, servers, CLIs) would compile every module it imports again,
# and a venv installed without compiling (the README's command: .ci/install, uv) would never get its caches.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TINKER_TELEMETRY", "0")
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_ENABLED"] = "false"

from suite import GS1_SPEC, REPO_ROOT, SELFGEN_SPEC, SPECS_DIR, TRIMUON_SPEC, FakeTinkerService  # noqa: F401

# Every property test is deterministic (issue 45): hypothesis draws the same examples on every run and machine
# (derandomize: seeded from the test's own text), keeps no example database between runs, and times nothing. A
# test's own @settings(...) keeps these unless it names them.
hypothesis_settings.register_profile("deterministic", derandomize=True, database=None, deadline=None)
hypothesis_settings.load_profile("deterministic")


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    """No garbage collection while the test modules import, their objects frozen after, as in the CLI
    (flows/lifetime.py, imports_frozen): the suite's collections then skip them. Unfrozen at
    the end (pytest_unconfigure) where the interpreter's teardown runs (an xdist worker skips it,
    end_worker_process): a cycle through a frozen object is never collected, and SDK clients left in
    one would be finalized in that teardown, after the SDK's modules are gone."""
    from flows.lifetime import imports_frozen

    with imports_frozen():
        return (yield)


def pytest_ignore_collect(collection_path, config):
    """`-m "not slow"` does not import tests/e2e, whose tests are all slow (tests/e2e/conftest.py): 1.3 of each
    xdist worker's 7.1 CPU-s of collection, before any test starts."""
    if " ".join(str(config.getoption("markexpr", default="") or "").split()) != "not slow":
        return None
    return True if collection_path == REPO_ROOT / "tests" / "e2e" else None


def pytest_collection_modifyitems(items):
    """The end-to-end files first, in collection order, then the other files longest first
    (suite.FILE_SECONDS), the rest after them in collection order. `--dist loadfile` hands files out in this
    order, the next one to the first worker that runs low (LastTestScheduling), so the suite ends with short
    files. The end-to-end files keep their order: sorted too, the longest started together and contended (a
    full run on an idle machine: 651.7 s against about 626 s in collection order; the workers ended within
    1.1 s of each other, but every long file took 10 to 45% longer)."""
    from suite import FILE_SECONDS

    def key(item) -> tuple[bool, float]:
        file = item.nodeid.split("::", 1)[0]
        end_to_end = file.startswith("tests/e2e/")
        return (not end_to_end, 0 if end_to_end else -FILE_SECONDS.get(file, 0))

    items.sort(key=key)  # stable: within a file, and among equals, collection order


class LastTestScheduling(LoadFileScheduling):
    """`--dist loadfile` that sends a worker its next file only when the worker holds its last test, not
    its last two. A worker holds its last test until it knows the next (for fixture teardown), so one is the
    least; with two, a worker starting the second-to-last test of a file got the next file queued behind it:
    an end-to-end file of two long tests took the next long file with it (test_spec_corpus_rehearsals.py
    waited 300 s behind test_shared_service_limit.py on one worker while the others ran short files, and
    that worker ended 47 s after them in a full run)."""

    def _reschedule(self, node) -> None:
        if self.workqueue and not node.shutting_down and self._pending_of(self.assigned_work[node]) > 1:
            return  # it holds more than its last test
        super()._reschedule(node)  # (which holds back more only past two)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") == "loadfile":
        return LastTestScheduling(config, log)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With SUITE_TIMELINE=<dir>, each process appends one JSON line per test to <dir>/<worker>.jsonl: wall
    start and end (epoch seconds) and the CPU seconds of the process and of its reaped children over the
    test (setup, call, teardown). benchmarks/suite_timeline.py reads them: which worker ends last, on what."""
    folder = os.environ.get("SUITE_TIMELINE")
    if not folder:
        return (yield)
    import resource
    import time

    def cpu(who: int) -> float:
        usage = resource.getrusage(who)
        return usage.ru_utime + usage.ru_stime

    start, own, children = time.time(), cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
    try:
        return (yield)
    finally:
        line = {"test": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "start": start,
                "end": time.time(), "cpu": cpu(resource.RUSAGE_SELF) - own,
                "children_cpu": cpu(resource.RUSAGE_CHILDREN) - children}
        with open(Path(folder) / f"{line['worker']}.jsonl", "a") as out:
            out.write(json.dumps(line) + "\n")


@pytest.fixture(scope="session")
def prefect_harness(prefect_server):
    """Flow tests run their flows in this process, on the session's real Prefect server (below; not a
    second, temporary one), heartbeats off."""
    import inspect

    import prefect.context
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
    from prefect.utilities.asyncutils import run_coro_as_sync

    with temporary_settings({PREFECT_API_URL: prefect_server.api_url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}), \
            prefect.context._temporary_global_settings_context(prefect.context.get_settings_context()):
        yield

        async def drain() -> None:  # as prefect_test_harness does: logs and events reach the server before it stops
            try:
                drained = APILogWorker.instance().drain()
                if inspect.isawaitable(drained):
                    await drained
            except RuntimeError:  # the log worker never started
                pass
            drained = EventsWorker.drain_all()
            if inspect.isawaitable(drained):
                await drained

        run_coro_as_sync(drain())


@pytest.fixture
def no_service_env(monkeypatch):
    """No ambient service URL or credentials leak into a test."""
    for name in ("TINKER_BASE_URL", "TINKER_API_KEY", "MODAL_PROXY_TOKEN_ID", "MODAL_PROXY_TOKEN_SECRET",
                 "RUNS_PROXY_TOKEN_ID", "RUNS_PROXY_TOKEN_SECRET", "RX_RUNS_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TINKER_API_KEY", "tml-test-key")


@pytest.fixture(scope="session", autouse=True)
def no_sandboxed_process_outlives_the_suite():
    """After the session: no process (zombies included, once the host's init had time to reap them) runs
    as any uid a sandbox call of this session used. Other sessions' calls on a shared machine are not ours."""
    yield
    import sys
    import time

    sandbox = sys.modules.get("experiment.selfgen.sandbox")
    if sandbox is None or not sandbox.uids_used():
        return
    deadline = time.monotonic() + 10
    left = sandbox.processes_of(sandbox.uids_used())
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = sandbox.processes_of(sandbox.uids_used())
    assert not left, f"processes of sandboxed calls outlived the test session (pid, uid, state): {left}"


# ---- grader: realistic good records built from the local specs (tests/unit/test_grading_*.py) ----


@pytest.fixture(scope="session")
def graded_record():
    """A builder: `graded_record("paired")` (self-generated local spec, paired_hoeffding, three-way)
    or `graded_record("best_lr")` (TriMuon local spec + recorded revision, best_lr_threshold, no
    decision object because the exchange's spec has no decision_rule)
    returns (RESULT, events) that grade green. Every number is computed by the project's own
    record code (experiment.stats.decision, experiment.stats.evaluation, experiment.selfgen.generation_audit).
    Each kind is built once per session (per xdist worker) and every call returns a deep copy of it: tests
    change what they are given (47 calls across 13 files)."""
    built: dict[str, tuple[dict, list[dict]]] = {}

    def graded_record_copy(kind: str) -> tuple[dict, list[dict]]:
        if kind not in built:
            built[kind] = _build_graded_record(kind)
        return copy.deepcopy(built[kind])

    return graded_record_copy


def _build_graded_record(kind: str):
    import hashlib

    from experiment.stats import decision as d
    from experiment.contract.result_models import evidence_file
    from experiment.stats.evaluation import evaluator_id
    from experiment.stats.feasibility import PROJECTION_KEYS
    from experiment.contract.plan import build_plan
    from experiment.contract.spec import canonical_sha256, load_spec

    root = Path(__file__).resolve().parents[1]
    spec_path = root / ("specs/selfgen_tasks_vs_gsm8k.json" if kind == "paired"
                        else "specs/trimuon_vs_dimuon_no_robots.json")
    spec = load_spec(spec_path)
    plan = build_plan(spec)
    files: list[dict] = []

    def keep(name: str, kind_: str, data) -> str:
        files.append(evidence_file(name, kind_, data if isinstance(data, bytes) else data.encode()))
        return name

    def jsonl(rows) -> str:
        return "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)

    keep("spec.json", "spec", spec_path.read_bytes())
    if spec.source.revision:
        keep("spec-revision.plan.json", "spec_revision", Path(spec.source.revision.path).read_bytes())
    keep("code-revision.json", "code_revision", json.dumps({"commit": "0" * 40}))
    keep("execution-plan.json", "effective_config", json.dumps(plan.to_dict(), default=str))
    keep("run.py", "script", "print('the executed pipeline code')\n")

    items = [f"item-{i}" for i in range(6)]
    metric = "accuracy" if kind == "paired" else "heldout_nll_token_mean"
    provenance = {"code_sha256": hashlib.sha256(b"evaluator code").hexdigest(), "prompt_template": "{question}",
                  "decoding": {"temperature": 0.0, "max_tokens": 16, "stop": ["<|im_end|>"]},
                  "parser": "boxed integer", "items": {"ids": items}}
    eid = evaluator_id(provenance)
    trained = [arm.name for arm in plan.trained_arms]
    result: dict = {"status": "succeeded", "metrics": {"arms": {}}, "completed_arms": [], "deviations": [],
                    "original_hypothesis_tested": True}
    scores, observations, loss_arms = [], [], {}
    if kind == "paired":
        correct = {"base": [0, 0, 1, 0, 0, 0], "rl_gsm8k": [1, 0, 1, 1, 0, 1], "rl_selfgen": [1, 1, 1, 1, 0, 1]}
        for arm, values in correct.items():
            checkpoint = plan.base_model if arm == "base" else f"tinker://s:train:{arm}/sampler_weights/{arm}-final"
            rows = [{"item_id": item, "arm": arm, "prediction": str(v), "reference": "1", "metric": metric,
                     "value": float(v), "evaluator_id": eid, "seed": 0, "checkpoint": checkpoint}
                    for item, v in zip(items, values)]
            ref = keep(f"predictions-{arm}.jsonl", "predictions", jsonl(rows))
            scores.append({"arm": arm, "metric": metric, "value": sum(values) / len(values), "evaluator_id": eid,
                           "seed": 0, "predictions_ref": ref})
            observations += [d.observation_from_row(row) for row in rows]
            result["metrics"]["arms"][arm] = {metric: sum(values) / len(values)}
        data = d.observations_jsonl_bytes(observations)
        keep(d.OBSERVATIONS_FILE_NAME, "metrics", data)
        role_to_arm = {role: entry["arm"] for role, entry in plan.role_to_arm.items()}
        summary = d.decision_summary(spec.to_dict()["decision_rule"], observations, "three_way",
                                     role_to_arm=role_to_arm, simultaneous=True)
        result["decision"] = d.decision_record(summary, d.OBSERVATIONS_FILE_NAME, hashlib.sha256(data).hexdigest())
        result.update(verdict=summary["verdict"], outcome_reason=summary["outcome_reason"],
                      summary="Trained both RL arms and scored six held-out items. The comparison is recorded.")
        comparison_arms = list(correct)
    else:
        runs = plan.training_runs
        rows_obs, step_rows = [], []
        for index, run in enumerate(runs):
            n_tokens = [10, 12, 8, 9, 11, 10]
            nll = [3.0 + 0.01 * index + 0.001 * i for i in range(6)]
            rows = [{"item_id": item, "arm": run.name, "prediction": {"nll_sum": s * t, "n_tokens": t},
                     "reference": "teacher-forced", "metric": metric, "evaluator_id": eid, "seed": 0,
                     "checkpoint": f"tinker://s:train:{run.arm}/sampler_weights/{run.name.replace('@lr=', '-lr')}-final"}
                    for item, s, t in zip(items, nll, n_tokens)]
            ref = keep(f"predictions-{run.name.replace('@lr=', '-lr')}.jsonl", "predictions", jsonl(rows))
            nll_sum = sum(s * t for s, t in zip(nll, n_tokens))
            value = nll_sum / sum(n_tokens)
            loss_arms[run.name] = {"aggregation": "token_mean", "value": value, "token_mean": value,
                                   "example_mean": sum(nll) / 6, "nll_sum": nll_sum, "n_tokens": sum(n_tokens),
                                   "n_examples": 6, "n_empty": 0}
            scores.append({"arm": run.name, "metric": metric, "value": value, "evaluator_id": eid, "seed": 0,
                           "predictions_ref": ref})
            step_time = 0.02 + (0.01 if run.arm == "trimuon" else 0.0)
            step_rows += [{"run": run.name, "step": step, "optim_seconds": step_time, "batch_id": f"step{step:04d}-{'ab' * 8}"}
                          for step in range(run.steps or 3)]
            rows_obs += [{"item_id": "heldout_set", "arm": run.name, "seed": 0, "metric": metric, "value": value,
                          "evaluator_id": eid},
                         {"item_id": "heldout_set", "arm": run.name, "seed": 0, "metric": "median_optim_step_seconds",
                          "value": step_time, "evaluator_id": eid}]
            result["metrics"]["arms"][run.name] = {metric: value, "median_optim_step_seconds": step_time}
        keep("sft-steps.jsonl", "metrics", jsonl(step_rows))
        batch_ids = [row["batch_id"] for row in step_rows if row["run"] == runs[0].name]  # every run: the same batches
        result["adaptation_manifests"] = [  # one per arm, the batches its runs consumed (TRACE-4)
            {"arm": arm, "pair": "lr_grid_comparison", "warmup_batches": 0, "adaptation_batch_ids": batch_ids,
             "adaptation_batch_hash": hashlib.sha256(json.dumps(batch_ids).encode()).hexdigest(),
             "runs": [run.name for run in runs if run.arm == arm]} for arm in dict.fromkeys(run.arm for run in runs)]
        rule = spec.to_dict().get("decision_rule") or spec.to_dict()["verdict_rule"]
        values = {}
        for row in rows_obs:
            values.setdefault(row["arm"], {})[row["metric"]] = row["value"]
        decided = d.best_lr_threshold(values, {r.name: r.arm for r in runs}, {r.name: r.lr for r in runs},
                                      rule["criteria"], rule["criteria"][0]["metric"])
        # the exchange's TriMuon spec has no decision_rule (only the recorded revision does): no decision object
        primary = decided["criteria"][0]
        result["loss_eval"] = {"aggregation": "token_mean", "arms": loss_arms}
        result.update(verdict=decided["verdict"], confidence="weak", effect=primary["effect"], margin=primary["margin"],
                      seeds=1, grid_edge=decided["grid_edge"],
                      summary="Trained six SFT runs and scored held-out NLL. The best-LR gap is recorded.",
                      reasoning="The best-LR gap misses its margin. Confidence is weak: one seed and no interval.")
        comparison_arms = [run.name for run in runs]
        path = spec.to_dict()["correctness_preflight"]["paths"][0]
        fixed = keep("correctness-fixed-input.json", "metrics", json.dumps({"gradients": [[0.1, 0.2]]}))
        probes = [{"learning_rate": lr, "update_norm": 2.0 * lr} for lr in path["lr_scaling"]["learning_rates"]]
        errors = {key: {"max_abs_error": 1e-9, "reference_max_abs": 1e-4, "relative_l2_error": 1e-6,
                        "cosine_similarity": 0.999999999} for key in path["tolerances"]}
        result["correctness_preflight"] = {"required": True, "paths": [{
            "id": path["id"], "fixed_input": {"sha256": files[-1]["sha256"], "description": fixed},
            "baseline_revision": path["baseline_revision"], "reference_revision": path["reference_revision"],
            "implementation_revision": "sha256:" + "1" * 64, "precision": path["precision"],
            "normalization": "update = after - before", "errors": errors, "lr_scaling": probes}]}
        # the probe's own record, as the correctness step retains it (CORR-11)
        keep("correctness-preflight.json", "metrics", json.dumps(result["correctness_preflight"]["paths"][0]))
    result["completed_arms"] = [arm for arm in result["metrics"]["arms"] if arm != "base"]  # trained arms (runs)
    result["evaluation"] = {"version": 1, "evaluators": {eid: provenance}, "scores": scores,
                            "comparisons": [{"metric": metric, "arms": comparison_arms}]}
    if kind == "paired":
        result["correctness_preflight"] = {"required": False, "paths": []}

    # restoration: one shared adapter, creation checks read from the server, fixed-batch outputs
    requested = {}
    section = spec.section("restoration_preflight")
    for group in section.get("groups", []):
        for arm in group["arms"]:
            config = {("learning_rate" if k == "lr" else k): v for k, v in arm["optimizer_config"].items()}
            requested[arm["name"]] = {"family": "adamw" if arm["optimizer"] == "adam" else arm["optimizer"], **config}
    for arm in plan.trained_arms:
        if arm.name not in requested:
            lr = next(run.lr for run in plan.training_runs if run.arm == arm.name)
            requested[arm.name] = {"family": arm.optimizer["family"], **arm.optimizer["config"], "learning_rate": lr}
    provenance_arms = {}
    for arm in trained:
        ref = keep(f"restoration-{arm}.json", "metrics", json.dumps({"get_info": {"model_id": f"s:train:{arm}",
                                                                                "optimizer": requested[arm]}}))
        actual = {k: v for k, v in requested[arm].items() if k not in ("family", "seed")}
        # created from the initialization checkpoint (one restore, REST-4), checked at creation and after that load
        provenance_arms[arm] = {
            "initialization": {"base_checkpoint": plan.base_model, "source": "server_response",
                               "adapter_sha256": "ab" * 32, "checkpoint_uri": "tinker://run/weights/init-full",
                               "evidence_ref": ref, "before_first_update": True},
            "restore_count": 1,
            "restores": [{"restore": 1, "client": f"s:train:{arm}", "method": "create_training_client_from_state",
                          "loaded_from": "tinker://run/weights/init-full", "with_optimizer_state": False,
                          "at": "2026-01-01T00:00:00+00:00", "evidence_ref": ref}],
            "optimizer_checks": [{"after_restore": after, "before_next_update": True, "requested": requested[arm],
                                  "actual_family": requested[arm]["family"], "actual_config": actual,
                                  "source": "server_response", "evidence_ref": ref} for after in (0, 1)],
            "initial_output": {"available": True, "batch_sha256": "cd" * 32, "output_sha256": "ef" * 32,
                               "evidence_ref": ref, "before_first_update": True}}
    result["initialization_provenance"] = {"version": 1, "arms": provenance_arms}
    # REST-10: one create-save-restore check per optimizer family, both clients' outputs retained
    after = [[-1.25, -0.5, -2.0], [-0.75, -3.5]]
    update_checks = {}
    for arm in trained:
        family = requested[arm]["family"]
        if any(c["optimizer_check_after_restore"]["requested"]["family"] == family for c in update_checks.values()):
            continue
        update_checks[arm] = {
            "label": arm, "checkpoint_uri": "tinker://run/weights/init-full", "restored_from": "tinker://run/weights/probe",
            "steps_before_save": 1, "optimizer_state_restored": True,
            "clients": {"uninterrupted": "s:train:1", "interrupted": "s:train:2", "restored": "s:train:3"},
            "restore": {"restore": 1, "client": "s:train:3", "method": "create_training_client_from_state_with_optimizer",
                        "loaded_from": "tinker://run/weights/probe", "with_optimizer_state": True,
                        "at": "2026-01-01T00:00:00+00:00", "evidence_ref": "restoration-update-check.json"},
            "optimizer_check_after_restore": {
                "after_restore": 1, "before_next_update": True, "requested": requested[arm], "actual_family": family,
                # the service's get_info reports the model's LoRA rank beside the optimizer config (REST-10 holds it)
                "actual_config": {**{k: v for k, v in requested[arm].items() if k not in ("family", "seed")},
                                  "lora_rank": requested[arm].get("lora_rank", spec.lora_rank)},
                "source": "server_response", "evidence_ref": "restoration-update-check.json", "mismatches": []},
            "batch_sha256": "cd" * 32,
            "update": {k: v for k, v in requested[arm].items()  # the step's params: the settings a step carries
                       if k in ("learning_rate", "beta1", "beta2", "eps", "weight_decay", "grad_clip_norm")},
            "max_abs_difference": 0.0, "atol": 1e-6, "problems": [], "passed": True,
            "output_sha256": {name: canonical_sha256(after) for name in ("uninterrupted", "restored")},
            "logprobs_after_second_step": {"uninterrupted": after, "restored": after}}
    keep("restoration-update-check.json", "metrics", json.dumps(update_checks))

    raw = spec.to_dict()  # the plan's full run (FEAS-14), 1 where the plan fixes nothing
    planned = {"steps": raw.get("steps"), "lora_rank": raw.get("lora_rank"), "batch_size": raw.get("batch_size"),
               "max_seq_len": raw.get("max_seq_len"), "n_examples": (raw.get("dataset") or {}).get("n_examples"),
               "n_eval": plan.eval.get("n_examples"), "arms": trained, "base_model": plan.base_model}
    config = {key: planned[key] if planned.get(key) is not None else 1 for key in PROJECTION_KEYS}
    phase = {"seconds": 1.5, "units": 2, "planned_units": 12, "samples": 4, "gpu_count": 0,
             "allocation_source": "embedded backend: CPU only"}
    result["feasibility"] = {
        "config": config, "effective_config": dict(config), "primary_endpoint": plan.primary_endpoint,
        "source": "timing pilot of this run", "measurements": {"setup": phase, "training": phase, "evaluation": phase},
        "generation": None, "recovery": {"seconds": 3.0, "gpu_count": 0, "allocation_source": "embedded backend"}}

    def project(feasibility: dict) -> None:  # the projection the pilot makes (FEAS-12 recomputes it)
        from experiment.stats.feasibility import PhaseTiming, feasibility_record

        phases = {name: PhaseTiming(**entry) for name, entry in feasibility["measurements"].items()}
        made = feasibility_record(config={}, effective_config={}, primary_endpoint="", source="", budget=plan.budget,
                                  setup=phases.pop("setup"), training=phases.pop("training"),
                                  evaluation=phases.pop("evaluation"), extra_phases=phases)
        feasibility.update(projection=made["projection"], recovery=made["recovery"])

    if kind == "paired":
        from experiment.selfgen import generation_audit as ga
        from experiment.stats.generation_audit import counts_of

        # 32 accepted of 36 candidates: the pilot's two treatment steps of 16 prompts each
        tasks = [{"item_id": f"gen-{i}", "prompt": f"What is {i} + {i}?", "answer": str(2 * i),
                  "disposition": "rejected" if i % 9 == 8 else "accepted"} for i in range(36)]
        from experiment.data import gsm8k_questions

        evaluation = [{"item_id": item, "prompt": question} for item, question in gsm8k_questions("test")]  # GA-3
        dataset = keep("generated-tasks-v1.jsonl", "generated_tasks", jsonl(tasks))
        evaluation_file = keep("generation-evaluation-set.jsonl", "generated_tasks", jsonl(evaluation))
        sample = ga.select_sample(tasks, ga.sample_size(counts_of(tasks)["accepted"], spec.section("generation_audit")), 7)
        generation = spec.to_dict()["generation"]
        resolver = {"name": generation["solver_model"]}
        samples = [{"item_id": t["item_id"], "independent_answer": t["answer"],
                    "resolver_id": f"{resolver['name']} (sampling client)",
                    "method": "independent_resolve", "reasoning": "added the numbers", "blind_to_label": True}
                   for t in sample]
        audit_file = keep("generation-audit-v1.json", "metrics", json.dumps(samples))
        result["generation_audit"] = {"version": 1, "stage": "before_training", "dataset_file": dataset,
                                      "evaluation_file": evaluation_file, "audit_file": audit_file, "sample_seed": 7,
                                      "counts": counts_of(tasks), "samples": samples, "label_error_count": 0,
                                      "overlap_count": 0,
                                      **ga.independence_record(resolver, {
                                          "generator": {"name": generation["generator_model"]},
                                          "filter_base_model": {"name": plan.base_model},
                                          "trained_base_model": {"name": plan.base_model}})}
        # the activation pilot as the gate runs it (ACT-1..3): two rl_selfgen steps on the generated tasks' seed-0
        # order, one rl_gsm8k step on the GSM8K train order, 16 prompts x 8 rollouts each, group-mean advantages
        from types import SimpleNamespace

        from experiment.rl.advantages import grpo_group_mean_advantages
        from experiment.data import gsm8k_item_ids, seeded_shuffle
        from experiment.stats.activation import fraction_nonzero, selfgen_activation_values

        generated_order = seeded_shuffle([t["item_id"] for t in tasks if t["disposition"] == "accepted"], seed=0)
        train_order = seeded_shuffle(gsm8k_item_ids("train"), seed=0)[:640]

        def pilot_step(arm: str, step: int, ids: list[str]) -> dict:
            groups = [[float((k + j + step) % 3 == 0) for j in range(8)] for k in range(len(ids))]
            rewards = [r for g in groups for r in g]
            advantages = [a for g in grpo_group_mean_advantages(groups) for a in g]
            return {"arm": arm, "step": step, "item_ids": ids, "rewards": rewards, "advantages": advantages,
                    "executed_group_size": 8.0, "n_rollouts": len(rewards), "mean_reward": sum(rewards) / len(rewards),
                    "frac_nonzero_advantage": fraction_nonzero(advantages), "baseline_values": [],
                    "effective_neighbors": [], "prompt_features": [], "kernel_fallbacks": 0}

        pilot = [pilot_step("rl_selfgen", step, generated_order[16 * step:16 * (step + 1)]) for step in range(2)]
        pilot.append(pilot_step("rl_gsm8k", 0, train_order[:16]))
        keep("activation-pilot-bwselfgen.jsonl", "metrics", jsonl([*pilot, {"heldout_mean_reward": {}}]))
        values = selfgen_activation_values([SimpleNamespace(**row) for row in pilot[:2]], [SimpleNamespace(**pilot[2])],
                                           set(generated_order), set(train_order), 0)
        result["activation_calibration"] = {"values": values, "note": "all checks passed on the pilot"}
        result["feasibility"]["generation"] = {"attempted": len(tasks), "accepted": len(generated_order),
                                               "target_accepted": 640, "filter_samples_per_candidate": 8}
        # the generation phase's units are the candidates attempted (FEAS-7)
        # done before the pilot: units, planned units and samples are the work done (FEAS-7)
        result["feasibility"]["measurements"].update(
            generation={**phase, "units": len(tasks), "planned_units": len(tasks), "samples": len(tasks)},
            filter={**phase, "planned_units": phase["units"], "samples": phase["units"]})
        # the spec's stated pilot: 2 steps per trained arm plus 100 eval items
        result["feasibility"]["measurements"].update(training={**phase, "units": 2 * len(trained)},
                                                     evaluation={**phase, "units": 100, "planned_units": 1319})

    project(result["feasibility"])
    checkpoints = ([{"arm": arm.name, "step": arm.steps, "uri": f"tinker://s:train:{arm.name}/sampler_weights/{arm.name}-final"}
                    for arm in plan.trained_arms]  # saved by the arm's training client (TRACE-2)
                   if kind == "paired" else [{"arm": run.name, "step": run.steps or 3, "uri": f"tinker://s:train:{run.arm}/"
                                              f"sampler_weights/{run.name.replace('@lr=', '-lr')}-final"} for run in runs])
    result["evidence"] = {"version": 1, "files": files, "checkpoints": checkpoints,
                          "per_arm_metrics": {arm: result["metrics"]["arms"][arm] for arm in result["completed_arms"]}}
    events = [{"event": "run_created"}, {"event": "result_updated", "status": "running", "deviations": []}]
    events += [{"event": "evidence_added", "name": f["name"], "kind": f["kind"], "sha256": f["sha256"]} for f in files]
    events += [{"event": "gate", "gate": gate.name, "status": "passed"} for gate in plan.gates if gate.applicable]
    return result, events


# A real Prefect server (`prefect server start`, loopback, its own PREFECT_HOME and SQLite database),
# for tests that check what Prefect stores and what its UI shows. Started once per session: under
# xdist the controller starts it in pytest_configure, while the workers start and collect, unless the
# run is only tests/unit (which never uses it), and the workers attach to it (its address is in the
# controller's basetemp, prefect-server/server.json); where the controller did not, the first worker
# that needs it starts it. The controller stops it once every worker is done (pytest_unconfigure), and
# a server the controller started gets SIGTERM from the kernel if the controller dies first (killed,
# or interrupted past its unconfigure). A server costs about 18 s of CPU to start and 3% of a core idle.

# `prefect server start` exec'd by a process that first asks the kernel for SIGTERM when its parent
# dies (prctl PR_SET_PDEATHSIG, kept across exec), and exits if that parent is already gone.
_DIES_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit('the process that started this Prefect server is gone')\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])\n")


class PrefectServer:
    def __init__(self, home: Path, port: int | None = None, pid: int | None = None, dies_with_parent: bool = False):
        """Start a server in `home`, or (port and pid given) stand for the one already running there;
        `dies_with_parent`: the kernel ends it (SIGTERM) when this process ends, however it ends."""
        import socket
        import subprocess
        import sys

        if port is None:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
        self.port = port
        self.home = home
        self.url = f"http://127.0.0.1:{self.port}"
        self.api_url = f"{self.url}/api"
        self.env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_API_URL": self.api_url,
                    "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
        self.env.pop("PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_ENABLED", None)  # a real server records task runs
        # what a CLI subprocess needs to run its flow on this server instead of starting a temporary one
        self.cli_env = {"PREFECT_HOME": str(home), "PREFECT_API_URL": self.api_url}
        self.process, self.log, self.pid = None, None, pid
        if pid is None:
            self.log = open(home / "server.log", "w")
            command = ["-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(self.port)]
            if dies_with_parent:
                command = ["-c", _DIES_WITH_PARENT, str(os.getpid()), *command]
            self.process = subprocess.Popen([sys.executable, *command], env=self.env, stdout=self.log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
            self.pid = self.process.pid

    def record(self) -> dict:
        return {"home": str(self.home), "port": self.port, "pid": self.pid}

    @classmethod
    def attach(cls, record: dict) -> PrefectServer:
        return cls(Path(record["home"]), port=record["port"], pid=record["pid"])

    def running(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"

    def wait_healthy(self, timeout: float = 180.0) -> None:
        import time

        import httpx

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise RuntimeError(f"prefect server exited: {(self.home / 'server.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.api_url}/health", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise TimeoutError(f"prefect server not healthy after {timeout} s")

    def api(self, method: str, path: str, **kwargs):
        import httpx

        response = httpx.request(method, f"{self.api_url}{path}", timeout=30, **kwargs)
        response.raise_for_status()
        return response.json()

    def flow_runs_of(self, runs_dir: Path) -> list[dict]:
        """The flow runs whose `runs_dir` parameter is `runs_dir`, among the server's 200 newest (the
        server is shared by the session's workers: an unsorted scan could miss a recent run)."""
        newest = self.api("POST", "/flow_runs/filter", json={"sort": "EXPECTED_START_TIME_DESC", "limit": 200})
        return [run for run in newest if run["parameters"].get("runs_dir") == str(runs_dir)]

    def database_bytes(self) -> bytes:
        return b"".join(path.read_bytes() for path in self.home.rglob("*.db*") if path.is_file())

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after 20 s (works for an attached server too)."""
        import signal
        import time

        try:
            os.killpg(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + 20
            while self.running() and time.monotonic() < deadline:
                time.sleep(0.1)
            if self.running():
                os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.process is not None:
            self.process.wait()
        if self.log is not None:
            self.log.close()


def _shared_prefect_server_dir(controller_basetemp: Path) -> Path:
    """Where the workers of one xdist session keep their one server's address (and its home)."""
    return controller_basetemp / "prefect-server"


@pytest.fixture(scope="session")
def prefect_server(request, tmp_path_factory):
    """A real Prefect server on loopback; its env (PREFECT_API_URL, PREFECT_HOME) is in `.env`. One per
    session: without xdist this process's own; under xdist one for every worker (see above)."""
    if not hasattr(request.config, "workerinput"):
        server = PrefectServer(tmp_path_factory.mktemp("prefect-home"))
        try:
            server.wait_healthy()
            yield server
        finally:
            server.stop()
        return
    import fcntl

    shared = _shared_prefect_server_dir(tmp_path_factory.getbasetemp().parent)  # a worker's: <controller's>/popen-gwN
    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = shared / "server.json"
        if record.exists():
            server = PrefectServer.attach(json.loads(record.read_text()))
        else:
            (shared / "home").mkdir()
            server = PrefectServer(shared / "home")
            record.write_text(json.dumps(server.record()))
    server.wait_healthy()
    yield server  # stopped by the controller, after every worker (pytest_unconfigure)


def _run_may_use_prefect_server(config) -> bool:
    """Whether the run collects anything outside tests/unit (whose tests never use the Prefect server)."""
    unit = REPO_ROOT / "tests" / "unit"
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::", 1)[0]).resolve()
        if path != unit and unit not in path.parents:
            return True
    return False


@pytest.hookimpl(trylast=True)  # after the tmpdir plugin's: the controller's basetemp, which the workers' sit in
def pytest_configure(config):
    """The xdist controller starts the session's Prefect server while the workers start and collect (the
    first test that needed it waited for it: 24.1 s of setup in a `-m "not slow" -n 2` run, 0.4 s with it
    started here); it does not wait for it, the workers do (prefect_server)."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", default=None):
        return
    if not _run_may_use_prefect_server(config) or any(
            getattr(config.option, name, False) for name in ("collectonly", "help", "showfixtures", "markers")):
        return
    shared = _shared_prefect_server_dir(config._tmp_path_factory.getbasetemp())
    (shared / "home").mkdir(parents=True)
    server = PrefectServer(shared / "home", dies_with_parent=True)
    (shared / "server.json").write_text(json.dumps(server.record()))
    config.stash[_CONTROLLERS_PREFECT_SERVER] = server


_CONTROLLERS_PREFECT_SERVER = pytest.StashKey[PrefectServer]()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """The xdist controller stops the session's shared Prefect server, its own or one a worker started (also
    after an interrupt: pytest unconfigures then too); a worker ends its process here (end_worker_process)."""
    if hasattr(config, "workerinput"):
        end_worker_process()
    gc.unfreeze()  # see pytest_collection
    if not config.getoption("numprocesses", default=None):
        return  # no xdist: a server of this process was stopped by its fixture
    if _CONTROLLERS_PREFECT_SERVER in config.stash:
        config.stash[_CONTROLLERS_PREFECT_SERVER].stop()  # and reaped
        return
    record = _shared_prefect_server_dir(config._tmp_path_factory.getbasetemp()) / "server.json"
    if record.exists():
        PrefectServer.attach(json.loads(record.read_text())).stop()


def end_worker_process() -> None:
    """An xdist worker has sent every report (its `workerfinished` went out at session finish) and stopped
    its fixtures' servers: the atexit handlers run (temporary directories, Prefect's log and event
    queues, logging), then the process exits without the interpreter's teardown, which finalizes the
    million objects that torch, Prefect and the SDK left (measured: 3 to 5 s per worker, and every
    worker's came at the end of the session, when the controller ends them together). Non-daemon
    threads are not waited for: every test and fixture has ended, and what they left idle dies with
    the process, as with kill."""
    import atexit

    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@pytest.fixture
def fake_tinker_service():
    """The FakeTinkerService class, for tests that must not `from conftest import` it."""
    return FakeTinkerService


# ---- one embedded backend for the whole session ----


@pytest.fixture(scope="session")
def embedded_server(tmp_path_factory):
    """The embedded Tinker-compatible backend with its default registry and no faults, started once
    for the session and reached over HTTP like any service. Tests that need faults, another exposure
    or a restart on the same port start their own (embedded_tinker.launch.start_server)."""
    from embedded_tinker.launch import start_server

    with start_server(checkpoint_dir=tmp_path_factory.mktemp("embedded-checkpoints")) as running:
        yield running


@pytest.fixture(scope="module")
def service_client(embedded_server):
    """A stock-SDK ServiceClient on the session's embedded backend, one per test module (closed after it)."""
    import tinker

    from embedded_tinker.launch import LOCAL_API_KEY

    client = tinker.ServiceClient(base_url=embedded_server.base_url, api_key=LOCAL_API_KEY)
    yield client
    client.close("success")
