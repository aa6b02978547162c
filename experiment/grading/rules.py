"""The grader's rule table: every rule id the grader can emit, with its category, severity and check.

One row per id. `category` is one of the exchange's six categories (a finding is an issue of that
category and sets its status) or `record` (a finding goes to `Grade.problems`: the record is not green,
whatever its categories say). `severity` is the statuses a finding of the rule gives, as the code gives
them today: `invalid`, `unverified`, `unknown`, or `problem` for a record-level finding that carries no
status word (the run-dir layer's checks, the spec attestation's sentences). A rule with no severity and
no check is one the run enforces and the grader cannot re-check from a record (RUN-1, CAP-1, ...); it is
listed so that every id of docs/contract-rules.md is here. Any check that cannot be applied to a
malformed record also gives `invalid` under its rule (experiment.grading.common.applied); that status
is not repeated in every row.

`checks` names where the rule is implemented, relative to experiment.grading: a check function
(`evaluator.EVAL_2`; a rule's sub-checks are named after it, `evaluator.EVAL_9_values`), a method of the
run-dir layer (`run_dir._Validator.check_evaluation`), or another function that emits the id. The ids of
the run-dir layer are `<section>.<check>` (experiment.grading.run_dir); `restates` says which contract
rule such a check re-checks from the run directory's files.

tests/unit/test_grading_rule_table.py holds the table to the code (every emitted id is a row, every
check function a row's, severities as emitted) and to docs/contract-rules.md (the same ids, the same
categories).
"""

from __future__ import annotations

from dataclasses import dataclass

from experiment.grading.common import CATEGORIES, INVALID, UNKNOWN, UNVERIFIED

RECORD = "record"  # record-level: findings go to Grade.problems
PROBLEM = "problem"  # a record-level finding without a status word
SEVERITIES = (INVALID, UNVERIFIED, UNKNOWN, PROBLEM)


@dataclass(frozen=True)
class Rule:
    id: str
    category: str  # one of CATEGORIES, or RECORD
    severity: tuple[str, ...]  # what a finding gives (SEVERITIES); () for a rule the grader does not check
    description: str  # one line
    checks: tuple[str, ...] = ()  # where it is implemented, relative to experiment.grading
    restates: str = ""  # run-dir checks: the contract rule re-checked


I, V, K, P = (INVALID,), (UNVERIFIED,), (UNKNOWN,), (PROBLEM,)
IV, IK, IVK = (INVALID, UNVERIFIED), (INVALID, UNKNOWN), (INVALID, UNVERIFIED, UNKNOWN)


def _contract(rule_id: str, category: str, severity: tuple[str, ...], description: str, *checks: str) -> Rule:
    return Rule(rule_id, category, severity, description, tuple(checks))


def _run_dir(check_id: str, restates: str, description: str, method: str) -> Rule:
    where = method if "." in method else f"_Validator.{method}"  # a method of the check class, or Class.method
    return Rule(check_id, RECORD, P, description, (f"run_dir.{where}",), restates)


C = _contract
E, D, R, CO, F, G = CATEGORIES  # evaluator, decision, restoration, correctness, feasibility, generation_audit

CONTRACT_RULES = (
    # RUN: enforced by the run (the run-dir layer re-checks the order: events.gate_order, events.stop_on_failure)
    C("RUN-1", RECORD, (), "the gates run in the contract's order and the first failed gate stops the run"),
    C("RUN-2", RECORD, (), "the preflight probe: one forward_backward and optim_step per arm with its exact settings"),
    # GEN: the RESULT object
    C("GEN-1", RECORD, (), "real numbers only: nothing estimated or invented; missing evidence is never verified"),
    C("GEN-2", RECORD, I, "status is running, succeeded or failed", "general.GEN_2"),
    C("GEN-3", RECORD, I, "direction+confidence vocabulary: verdict only at the end, supported or refuted, with confidence",
      "general.GEN_3"),
    C("GEN-4", RECORD, I, "three-way vocabulary: verdict and outcome_reason agree; none of the direction-only fields",
      "general.GEN_4"),
    C("GEN-5", RECORD, I, "per-arm numbers under metrics.arms; completed_arms names each trained arm once",
      "general.GEN_5"),
    C("GEN-6", RECORD, I, "deviations recorded before use; a changed experiment says original_hypothesis_tested false",
      "general.GEN_6", "general.GEN_6_hypothesis"),
    C("GEN-7", RECORD, I, "conditional fields (capacity_block, decision, loss_eval, adaptation_manifests) only when they apply",
      "general.GEN_7"),
    C("GEN-8", RECORD, I, "summary at most two sentences, reasoning two to four", "general.GEN_8"),
    C("GEN-9", RECORD, (), "a finished run never infers support or a tie from successful execution alone"),
    # SPEC: the spec graded against
    C("SPEC", RECORD, P, "the spec graded against cannot be read, parsed or planned: spec-dependent rules are unknown",
      "grade._attested", "grade.grade_record"),
    C("SPEC-1", RECORD, (UNVERIFIED, PROBLEM), "a record whose spec cannot be attested grades every category unverified",
      "grade._attested", "grade._unattested"),
    C("SPEC-2", RECORD, P, "a rehearsal record is the rehearsal the rules derive from the attested spec",
      "grade._attested", "grade._rehearsal_problems"),
    # EVID, SEC: evidence
    C("EVID-1", RECORD, IVK, "every evidence file carries its bytes inline (or an /attachments/ URL)", "general.EVID_1"),
    C("EVID-2", RECORD, V, "an evidence file's sha256 is the sha256 of its bytes", "general.EVID_2"),
    C("EVID-3", RECORD, I, "evidence caps: 10 MiB a file, 64 files, 40 MiB a run", "general.EVID_3"),
    C("EVID-4", RECORD, V, "a finished run retains script, effective config, code revision, predictions and metrics",
      "general.EVID_4"),
    C("EVID-5", RECORD, IV, "evidence.per_arm_metrics is metrics.arms", "general.EVID_5"),
    C("EVID-6", RECORD, I, "checkpoints are tinker:// references, listed once, every scored one listed", "general.EVID_6"),
    C("EVID-7", RECORD, I, "evidence file names are immutable: one name, one content", "general.EVID_7"),
    C("EVID-8", RECORD, (INVALID, UNVERIFIED, PROBLEM), "a run directory's events, tables and evidence agree with RESULT",
      "general.EVID_8", "grade.read_events"),
    C("EVID-9", RECORD, IV, "the retained execution plan is the plan of the spec graded against", "general.EVID_9"),
    C("EVID-10", RECORD, I, "the retained pipeline code is the code code-revision.json names", "general.EVID_10"),
    C("EVID-11", RECORD, V, "every planned training step has its event (run dir) and its sft-steps.jsonl row, once",
      "spec_anchor.EVID_11"),
    C("SEC-1", RECORD, I, "no credentials stored: keys, tokens, credential headers, signed URLs", "general.SEC_1"),
    # PLAN, PROSE: the record's stated settings and its words against the plan and the record
    C("PLAN-1", RECORD, I, "the steps completed, learning rates and seeds the record states are the plan's",
      "spec_anchor.PLAN_1"),
    C("PROSE-1", RECORD, I, "summary and reasoning state the record's verdict and outcome reason, never another",
      "spec_anchor.PROSE_1"),
    C("PROSE-2", RECORD, I, "a rehearsal's summary begins with the rehearsal mark the rules derive", "spec_anchor.PROSE_2"),
    C("PROSE-3", RECORD, I, "a rehearsal's tested_instead is the one the rules derive", "spec_anchor.PROSE_3"),
    C("PROSE-4", RECORD, I, "the item count the prose states is the evaluator's", "spec_anchor.PROSE_4"),
    C("PROSE-5", RECORD, I, "the effects and intervals the prose states are the record's", "spec_anchor.PROSE_5"),
    # EVAL, LOSS: evaluator category
    C("EVAL-1", E, IK, "evaluation = {version: 1, evaluators, scores, comparisons} with the contract's shape",
      "evaluator.EVAL_1"),
    C("EVAL-2", E, I, "evaluator_id is the sha256 of the canonical provenance stored under it", "evaluator.EVAL_2"),
    C("EVAL-3", E, I, "code_sha256 is a 64-hex hash, never prose", "evaluator.EVAL_3"),
    C("EVAL-4", E, IV, "items are an explicit items.ids list (a manifest: unverified with a decision_rule)",
      "evaluator.EVAL_4"),
    C("EVAL-5", E, I, "decoding gives temperature, max_tokens and stop as a list of strings", "evaluator.EVAL_5"),
    C("EVAL-6", E, I, "the provenance never names the scored arm or checkpoint", "evaluator.EVAL_6"),
    C("EVAL-7", E, IK, "every score names a defined evaluator, arm, metric, finite value and seed, once",
      "evaluator.EVAL_7", "evaluator.EVAL_7_metrics"),
    C("EVAL-8", E, V, "every score's predictions_ref is a retained evidence file with inline content", "evaluator.EVAL_8"),
    C("EVAL-9", E, IV, "prediction rows: one per item with the required fields, one checkpoint, the score their mean "
      "(the base model's, unverified without a spec)",
      "evaluator.EVAL_9", "evaluator.EVAL_9_values", "evaluator.EVAL_9_checkpoints"),
    C("EVAL-10", E, I, "the evaluator is frozen before the first score; compared arms share it", "evaluator.EVAL_10"),
    C("EVAL-11", E, (), "a grading timeout is recorded in its prediction row, never silently scored 0"),
    C("EVAL-12", E, I, "comparisons name every arm each criterion weights, the base too", "evaluator.EVAL_12"),
    C("EVAL-13", E, I, "the evaluator's items are the spec's eval set: n_examples items, the first rows of its eval data",
      "evaluator.EVAL_13"),
    C("EVAL-14", E, I, "the evaluator's prompt template, decoding and parser are the ones the spec fixes",
      "evaluator.EVAL_14"),
    C("EVAL-15", E, IV, "code_sha256 is the hash of the evaluator code retained in the pipeline-code evidence",
      "evaluator.EVAL_15"),
    C("EVAL-16", E, IV, "in a run directory, the evaluator_frozen event comes before the evaluation began",
      "evaluator.EVAL_16"),
    C("LOSS-1", E, V, "a loss endpoint reports loss_eval", "evaluator.LOSS_1"),
    C("LOSS-2", E, I, "loss_eval's values are consistent (aggregation, nll_sum / n_tokens, same token counts)",
      "evaluator.LOSS_2"),
    C("LOSS-3", E, IV, "loss_eval recomputes from the retained per-example prediction rows", "evaluator.LOSS_3"),
    C("LOSS-4", E, I, "loss_eval's aggregation is the spec's", "evaluator.LOSS_4"),
    # DEC, ADAPT: decision category
    C("DEC-1", D, IVK, "a decision object exactly when the spec has a decision_rule", "decision.DEC_1", "decision.grade"),
    C("DEC-2", D, I, "decision = {version: 1} with exactly one of observations and observations_file", "decision.DEC_2"),
    C("DEC-3", D, V, "the observations file is a retained, inline evidence file with its sha256", "decision.DEC_3"),
    C("DEC-4", D, V, "at most 10 MiB and 100 000 observations", "decision.DEC_4"),
    C("DEC-5", D, I, "each observation has item_id, arm, seed, metric, finite value, evaluator_id", "decision.DEC_5"),
    C("DEC-6", D, IV, "observations cover every compared arm, item and scheduled seed, and no other seed",
      "decision.DEC_6"),
    C("DEC-7", D, IV, "observations agree with the evaluation record and the retained predictions", "decision.DEC_7"),
    C("DEC-8", D, I, "the decision recomputed from the observations reproduces criteria, effect and ci",
      "decision.DEC_8"),
    C("DEC-9", D, I, "the verdict follows the recomputed decision in the spec's vocabulary", "decision.DEC_9"),
    C("DEC-10", D, I, "unrounded per-arm and per-seed means reproduce and match the scores", "decision.DEC_10"),
    C("DEC-11", D, I, "role-keyed weights mapped to arms from the spec, the mapping and adjustment recorded",
      "decision.DEC_11"),
    C("DEC-12", D, I, "a grid-edge LR sets grid_edge true with confidence weak", "decision.DEC_12"),
    C("DEC-13", D, IV, "seeds scheduled in advance; adaptive selection frozen before confirmation, recomputed",
      "decision.DEC_13"),
    C("DEC-14", D, V, "in a run directory, the events log the decision gate and the observations file",
      "decision.DEC_14"),
    C("ADAPT-1", D, I, "paired arms run their shared steps on identical batches (adaptation_batch_hash)",
      "decision.ADAPT_1"),
    # REST: restoration category
    C("REST-1", R, IVK, "initialization_provenance has one entry per restoration arm (and per planned LR run)",
      "restoration.REST_1", "restoration.REST_1_runs", "restoration.REST_1_evidence", "restoration.grade"),
    C("REST-2", R, IV, "initialization proof: a measured adapter hash or an immutable full-initialization checkpoint",
      "restoration.REST_2", "restoration.REST_2_seed"),
    C("REST-3", R, IV, "all arms of a group load the same initial adapter or checkpoint",
      "restoration.REST_3", "restoration.REST_3_checkpoint"),
    C("REST-4", R, IV, "optimizer_checks at creation and after every restore; restores counted from their evidence",
      "restoration.REST_4", "restoration.REST_4_restores"),
    C("REST-5", R, IV, "each check's requested optimizer is the spec's group arm's, at a planned learning rate",
      "restoration.REST_5"),
    C("REST-6", R, IV, "actual optimizer family and config from a retained server response, equal to the requested",
      "restoration.REST_6", "restoration.REST_6_response"),
    C("REST-7", R, IV, "initial_output with hashes and evidence, equal across the group, or unavailable with a reason",
      "restoration.REST_7", "restoration.REST_7_fixed_batch"),
    C("REST-8", R, V, "every evidence_ref names a retained evidence file with inline content", "restoration.REST_8"),
    C("REST-9", R, V, "a lone resumed arm forms a group only with a recorded actual restore", "restoration.REST_9"),
    C("REST-10", R, IV, "a create-save-restore fixed-gradient update matches the uninterrupted client",
      "restoration.REST_10", "restoration.REST_10_check"),
    # CORR: correctness category
    C("CORR-1", CO, IVK, "a correctness preflight when a custom or forked path runs; stock-only: required false",
      "correctness.CORR_1", "correctness.grade"),
    C("CORR-2", CO, IV, "one path record per spec path, with fixed input, revisions, precision, normalization, errors",
      "correctness.CORR_2"),
    C("CORR-3", CO, V, "measured errors for every tolerance key; a same-code parity check measures nothing",
      "correctness.CORR_3", "correctness.CORR_3_same_code"),
    C("CORR-4", CO, IV, "every check within the spec's tolerances (also on the read-back input)",
      "correctness.CORR_4", "correctness.CORR_4_on_input"),
    C("CORR-5", CO, IV, "LR scaling probes within the spec's tolerance, covering the planned rates", "correctness.CORR_5"),
    C("CORR-6", CO, IV, "reported revisions are the pins, compared exactly; unresolved or revision-file pins: unverified",
      "correctness.CORR_6", "correctness.CORR_6_revision_check"),
    C("CORR-7", CO, V, "a custom path with no accepted plan in the spec is required and unverified", "correctness.CORR_1"),
    C("CORR-8", CO, V, "no full run while the correctness preflight is unresolved or failed", "correctness.CORR_8"),
    C("CORR-9", CO, V, "probe scripts and the fixed input are retained as their own evidence", "correctness.CORR_9"),
    C("CORR-10", CO, IV, "every path names its implementation, precision and normalization", "correctness.CORR_10"),
    C("CORR-11", CO, V, "the path record is the probe's own retained record", "correctness.CORR_11"),
    # FEAS: feasibility category
    C("FEAS-1", F, K, "a measured feasibility record before the full comparison", "feasibility.FEAS_1"),
    C("FEAS-2", F, K, "config and effective_config record the ten projection keys identically", "feasibility.FEAS_2"),
    C("FEAS-3", F, K, "source names the pilot evidence", "feasibility.FEAS_3"),
    C("FEAS-4", F, K, "each measured phase gives seconds, units, planned_units, samples, gpu_count, allocation_source",
      "feasibility.FEAS_4"),
    C("FEAS-5", F, K, "recovery.seconds is a positive reserve", "feasibility.FEAS_5"),
    C("FEAS-6", F, K, "GPU counts only from allocation evidence, one count for the service", "feasibility.FEAS_6"),
    C("FEAS-7", F, IK, "generated tasks: a generation record whose yield and settings are the audit's and the spec's",
      "feasibility.FEAS_7"),
    C("FEAS-8", F, K, "primary_endpoint is the spec's", "feasibility.FEAS_8"),
    C("FEAS-9", F, I, "a projection that does not fit the budget gives no definitive verdict", "feasibility.FEAS_9"),
    C("FEAS-10", F, K, "the spec's stated pilot size is honoured and recorded", "feasibility.FEAS_10"),
    C("FEAS-11", F, (), "downsizing keeps the primary endpoint, each cut a recorded deviation"),
    C("FEAS-12", F, K, "the projection and recovery recompute from the measurements and the budget",
      "feasibility.FEAS_12"),
    # GA: generation_audit category
    C("GA-1", G, K, "the audit applies when generated training data is used (applicability unknown: unknown)",
      "generation_audit.grade"),
    C("GA-2", G, IK, "generation_audit has the contract's shape", "generation_audit.GA_2"),
    C("GA-3", G, IV, "the candidates file and the full frozen evaluation set are retained inline",
      "generation_audit.GA_3", "generation_audit.GA_3_evaluation_set"),
    C("GA-4", G, I, "counts and every disposition are what the candidates file and the filter give",
      "generation_audit.GA_4", "generation_audit.GA_4_filter"),
    C("GA-5", G, I, "the sample is the first accepted ids sorted by sha256(json.dumps([seed, item_id]))",
      "generation_audit.GA_5"),
    C("GA-6", G, IV, "each sample re-solved blind by a re-solver independent of generator, filter and base",
      "generation_audit.GA_6", "generation_audit.GA_6_independent_resolver"),
    C("GA-7", G, V, "answers compared by the spec's answer_comparison", "generation_audit.GA_7"),
    C("GA-8", G, I, "label errors and evaluation overlaps recompute", "generation_audit.GA_8"),
    C("GA-9", G, I, "the audit passes before any optimizer update on generated data", "generation_audit.GA_9"),
    C("GA-10", G, V, "the record's samples are the retained audit file's", "generation_audit.GA_10"),
    C("GA-11", G, I, "every audit round recomputes from its own retained files",
      "generation_audit.GA_11", "generation_audit.GA_11_files"),
    # REPRO: re-execution, only with `flows.validate --reproduce` (experiment/grading/reproduce; docs/reproduce.md)
    C("REPRO-1", E, IV, "retained text predictions re-scored by the grader's own parser against the data file's gold",
      "reproduce.offline.REPRO_1"),
    C("REPRO-2", G, IV, "audited generated tasks re-solved from their text by the grader's own re-solver",
      "reproduce.offline.REPRO_2"),
    C("REPRO-3", E, IV, "a seeded sample of RL items re-sampled greedily from the recorded checkpoints (service)",
      "reproduce.service.REPRO_3"),
    C("REPRO-4", E, IV, "a seeded sample of held-out rows re-scored by forward from the recorded checkpoints (service)",
      "reproduce.service.REPRO_4"),
    # ACT: the activation gate, graded record-level
    C("ACT-1", RECORD, I, "every activation check measured and in range before full training", "activation.ACT_1"),
    C("ACT-2", RECORD, IV, "only the pre-registered calibration; values recompute from the last pilot log",
      "activation.ACT_2", "activation.ACT_2_calibration"),
    C("ACT-3", RECORD, I, "every retained pilot log is what the pilot does", "activation.ACT_3"),
    # TRACE: the record against the traces that produced it (experiment.grading.traces, record-level)
    C("TRACE-1", RECORD, I, "per-arm training metrics are the plan's and recompute from the training log",
      "traces.TRACE_1"),
    C("TRACE-2", RECORD, I, "one final checkpoint per trained arm or run, saved by its training client, as logged",
      "traces.TRACE_2"),
    C("TRACE-3", RECORD, I, "restores in order and in time; an LR-grid arm restates its runs' restores", "traces.TRACE_3"),
    C("TRACE-4", RECORD, IV, "adaptation manifests restate the batches each run consumed in sft-steps.jsonl",
      "traces.TRACE_4"),
    C("TRACE-5", RECORD, IV, "service-routing.json is the plan's routing on the service used, as logged", "traces.TRACE_5"),
    C("TRACE-6", RECORD, IV, "the re-solver's code_sha256 is the hash of the retained code it names", "traces.TRACE_6"),
    C("TRACE-7", RECORD, I, "every evidence file is read by a rule or named by a field of RESULT", "traces.TRACE_7"),
    C("TRACE-8", RECORD, I, "RESULT.grade and RESULT.validation are what checking the record afresh gives",
      "traces.TRACE_8_validation", "traces.self_grade_problems"),
    C("ACT-4", RECORD, V, "the spec keeps failed pilot logs: every calibration candidate tried before the chosen one",
      "spec_anchor.ACT_4"),
    # CAP: enforced by the run (the run-dir layer checks capacity_block's shape: result.capacity_block)
    C("CAP-1", RECORD, (), "capacity refusals retried with backoff, then a failed run with capacity_block"),
    C("CAP-2", RECORD, (), "a deployment run stopped by capacity is re-queued within the spec's wall budget"),
)

_S = "_Validator.run"  # a check group that raised on a malformed record: `<group>.shape`
RUN_DIR_RULES = (
    _run_dir("run", "EVID-8", "the path is not a run directory that can be read (no result.json, bad JSON)",
             "_RunFiles.load"),
    _run_dir("run.plan", "EVID-9", "neither the retained spec/plan nor the spec file named by run_created can be read",
             "_RunFiles._load_plan_and_spec"),
    _run_dir("evidence.manifest", "EVID-8", "evidence/manifest.json is missing or not JSON", "_RunFiles.load"),
    _run_dir("events.format", "EVID-8", "every events.jsonl line is a JSON object", "check_events"),
    _run_dir("events.gate_order", "RUN-1", "gates were recorded in the contract's order", "check_events"),
    _run_dir("events.stop_on_failure", "RUN-1", "no gate ran after a failed one; a failed gate is no succeeded run",
             "check_events"),
    _run_dir("events.shape", "RUN-1", "the events check could not be applied to a malformed record", _S),
    _run_dir("result.status", "GEN-2", "status is running, succeeded or failed", "check_result_shape"),
    _run_dir("result.summary", "GEN-8", "summary is present", "check_result_shape"),
    _run_dir("result.metrics", "GEN-5", "metrics and metrics.arms are objects", "check_result_shape"),
    _run_dir("result.flat_arm_keys", "GEN-5", "no flat <arm>_<metric> keys in metrics", "check_result_shape"),
    _run_dir("result.completed_arms", "GEN-5", "completed_arms are plan arms with metrics", "check_result_shape"),
    _run_dir("result.tested_instead", "GEN-6", "original_hypothesis_tested false comes with tested_instead",
             "check_result_shape"),
    _run_dir("result.conditional", "GEN-7", "decision and loss_eval only when the spec asks for them",
             "check_result_shape"),
    _run_dir("result.capacity_block", "GEN-7", "capacity_block has its shape and appears only in a failed run",
             "check_result_shape"),
    _run_dir("result.shape", "GEN-2", "the RESULT check could not be applied to a malformed record", _S),
    _run_dir("vocabulary.every_arm_ran", "GEN-5", "a supported/refuted verdict only when every trained arm completed",
             "check_vocabulary"),
    _run_dir("vocabulary.unknown", "GEN-3", "the plan's vocabulary is a known one", "check_vocabulary"),
    _run_dir("vocabulary.verdict_timing", "GEN-3", "a verdict only in the final update",
             "_check_direction_confidence"),
    _run_dir("vocabulary.verdict", "GEN-3", "the verdict is one of the vocabulary's", "_check_direction_confidence"),
    _run_dir("vocabulary.confidence", "GEN-3", "confidence strong or weak, only with a verdict, weak at a grid edge",
             "_check_direction_confidence"),
    _run_dir("vocabulary.reasoning", "GEN-8", "a verdict comes with reasoning", "_check_direction_confidence"),
    _run_dir("vocabulary.outcome_reason", "GEN-4", "outcome_reason is one the vocabulary allows, agreeing with the verdict",
             "_check_direction_confidence"),
    _run_dir("vocabulary.three_way_fields", "GEN-4", "the three-way shape has none of the direction-only fields",
             "_check_three_way"),
    _run_dir("vocabulary.shape", "GEN-3", "the vocabulary check could not be applied to a malformed record", _S),
    _run_dir("deviations.shape", "GEN-6", "deviations is a list of {field, original, effective, reason}",
             "check_deviations"),
    _run_dir("deviations.model_in_summary", "GEN-6", "a substituted spec model is named in summary", "check_deviations"),
    _run_dir("deviations.hypothesis", "GEN-6", "a changed objective or endpoint sets original_hypothesis_tested false",
             "check_deviations"),
    _run_dir("deviations.unrecorded", "GEN-6", "every deviation was posted in a running update before use",
             "_check_deviations_recorded_before_use"),
    _run_dir("activation.missing", "ACT-1", "a passed activation gate posted a value for every check",
             "check_activation_calibration"),
    _run_dir("activation.separate", "ACT-1", "activation values live only in activation_calibration",
             "check_activation_calibration"),
    _run_dir("activation.range", "ACT-1", "every activation value of a passed gate is in its range",
             "check_activation_calibration"),
    _run_dir("activation.shape", "ACT-1", "the activation check could not be applied to a malformed record", _S),
    _run_dir("correctness.missing", "CORR-1", "a passed correctness gate left its record", "check_correctness"),
    _run_dir("correctness.shape", "CORR-2", "correctness_preflight is {required, paths}; stock-only has no paths",
             "check_correctness"),
    _run_dir("correctness.required", "CORR-1", "required is true when the plan says the preflight applies",
             "check_correctness"),
    _run_dir("correctness.paths", "CORR-2", "one record per spec path and no other", "check_correctness"),
    _run_dir("correctness.fixed_input", "CORR-9", "fixed_input.sha256 is a 64-hex hash", "check_correctness"),
    _run_dir("correctness.revisions", "CORR-6", "revisions pinned and equal to the spec's", "check_correctness"),
    _run_dir("correctness.lr_scaling", "CORR-5", "every LR probe has a numeric learning_rate and update_norm",
             "check_correctness"),
    _run_dir("correctness.unresolved_note", "CORR-6", "UNRESOLVED spec revisions are named as unverified in reasoning",
             "check_correctness"),
    _run_dir("correctness.errors", "CORR-3", "measured errors for every tolerance key", "_check_correctness_errors"),
    _run_dir("correctness.acceptance", "CORR-4", "no run went on past a check that fails its tolerance",
             "_check_correctness_errors"),
    _run_dir("provenance.missing", "REST-1", "a passed restoration gate left initialization_provenance",
             "check_initialization_provenance"),
    _run_dir("provenance.shape", "REST-1", "initialization_provenance is {version: 1, arms}",
             "check_initialization_provenance"),
    _run_dir("provenance.arm_missing", "REST-1", "every restoration arm has an entry", "check_initialization_provenance"),
    _run_dir("provenance.initialization", "REST-2", "initialization proof before the first update",
             "_check_initialization"),
    _run_dir("provenance.evidence_ref", "REST-8", "every evidence_ref names a retained evidence file",
             "_check_initialization"),
    _run_dir("provenance.restore_count", "REST-4", "restore_count is a non-negative integer", "_check_optimizer_checks"),
    _run_dir("provenance.optimizer_checks", "REST-4", "one optimizer check at creation and per restore, before updates",
             "_check_optimizer_checks"),
    _run_dir("provenance.unverified", "REST-6", "actual optimizer family and config come from a server response",
             "_check_optimizer_checks"),
    _run_dir("provenance.optimizer_mismatch", "REST-6", "actual family and config are the requested",
             "_check_optimizer_checks"),
    _run_dir("provenance.requested", "REST-5", "the requested optimizer is the spec group's", "_check_requested_matches_spec"),
    _run_dir("provenance.actual_config", "REST-6", "actual_config holds the requested values", "_check_actual_config"),
    _run_dir("provenance.initial_output", "REST-7", "initial_output with hashes before the first update, or a reason",
             "_check_initial_output"),
    _run_dir("provenance.group_mismatch", "REST-3", "a group's initialization and initial outputs are equal",
             "_check_group_consistency"),
    _run_dir("evaluation.missing", "EVAL-1", "a passed evaluation gate left its record", "check_evaluation"),
    _run_dir("evaluation.shape", "EVAL-1", "evaluation is {version: 1, evaluators, scores, comparisons}",
             "check_evaluation"),
    _run_dir("evaluation.scores", "EVAL-7", "every score names a known evaluator and a finite value", "check_evaluation"),
    _run_dir("evaluation.predictions_missing", "EVAL-8", "prediction files are retained for the scored arms",
             "check_evaluation"),
    _run_dir("evaluation.evaluator_id", "EVAL-2", "the evaluator id is the hash of its provenance", "_check_evaluator"),
    _run_dir("evaluation.code_sha256", "EVAL-3", "code_sha256 is a 64-hex hash", "_check_evaluator"),
    _run_dir("evaluation.item_ids", "EVAL-4", "items.ids is an explicit list of unique id strings", "_check_evaluator"),
    _run_dir("evaluation.decoding", "EVAL-5", "decoding.stop is a list of strings", "_check_evaluator"),
    _run_dir("evaluation.provenance", "EVAL-6", "the provenance names no scored arm or checkpoint", "_check_evaluator"),
    _run_dir("evaluation.predictions_format", "EVAL-9", "prediction files are JSONL rows with the required fields",
             "_check_predictions_cover"),
    _run_dir("evaluation.predictions_cover", "EVAL-9", "a prediction row for every item, arm and seed",
             "_check_predictions_cover"),
    _run_dir("evaluation.score_reproduces", "EVAL-9", "every score is the mean of its prediction rows",
             "_check_predictions_cover"),
    _run_dir("decision.missing", "DEC-1", "a decision object once the decision stage finished", "check_decision"),
    _run_dir("decision.shape", "DEC-2", "decision {version: 1} with exactly one of observations and observations_file",
             "check_decision"),
    _run_dir("decision.recompute", "DEC-8", "the decision recomputes from the observations to the recorded criteria",
             "check_decision"),
    _run_dir("decision.selection", "DEC-13", "the adaptive selection recomputes and holds confirmation items only",
             "check_decision"),
    _run_dir("decision.observations_file", "DEC-3", "observations_file is {name, sha256} of a metrics file",
             "_observations_from_file"),
    _run_dir("decision.observations_missing", "DEC-3", "the observations file is retained", "_observations_from_file"),
    _run_dir("decision.observations_sha256", "DEC-3", "the observations file hashes to the recorded and manifest sha256",
             "_observations_from_file"),
    _run_dir("decision.observations_cap", "DEC-4", "at most 10 MiB and 100 000 observations", "_observations_from_file"),
    _run_dir("decision.observations_format", "DEC-5", "observations parse as the contract's rows",
             "_observations_from_file"),
    _run_dir("decision.evaluator", "DEC-7", "observations name evaluators of RESULT.evaluation",
             "_check_observation_evaluators"),
    _run_dir("decision.observations_cover", "DEC-6", "observations cover the evaluator's items",
             "_check_observation_evaluators"),
    _run_dir("decision.effect", "DEC-8", "RESULT effect is the recomputed primary effect", "_compare_decision"),
    _run_dir("decision.ci", "DEC-8", "RESULT ci is the recomputed interval", "_compare_decision"),
    _run_dir("decision.margin", "DEC-8", "RESULT margin is the criterion's margin", "_compare_decision"),
    _run_dir("decision.verdict", "DEC-9", "the verdict is the recomputed one", "_compare_decision"),
    _run_dir("decision.confidence", "DEC-9", "no strong confidence when an interval straddles its margin",
             "_compare_decision"),
    _run_dir("decision.arm_means", "DEC-10", "per-arm, per-seed observation means are the scores", "_compare_arm_means"),
    _run_dir("loss_eval.missing", "LOSS-1", "a loss endpoint's passed evaluation left loss_eval", "check_loss_eval"),
    _run_dir("loss_eval.shape", "LOSS-1", "loss_eval is {aggregation, arms} with every arm key", "check_loss_eval"),
    _run_dir("loss_eval.aggregation", "LOSS-2", "one aggregation, token_mean or example_mean, the spec's",
             "check_loss_eval"),
    _run_dir("loss_eval.values", "LOSS-2", "value, nll_sum and n_tokens finite with n_tokens > 0", "check_loss_eval"),
    _run_dir("loss_eval.value", "LOSS-2", "value is nll_sum / n_tokens (token_mean) or example_mean", "check_loss_eval"),
    _run_dir("loss_eval.same_tokens", "LOSS-2", "every arm scored on the same (n_tokens, n_examples)", "check_loss_eval"),
    _run_dir("adaptation.missing", "ADAPT-1", "warmup adaptation left adaptation_manifests", "check_adaptation"),
    _run_dir("adaptation.shape", "ADAPT-1", "adaptation_manifests is a list of manifests with counts and ids",
             "check_adaptation"),
    _run_dir("adaptation.hash", "ADAPT-1", "adaptation_batch_hash is sha256(json.dumps(ids))", "check_adaptation"),
    _run_dir("adaptation.pair_mismatch", "ADAPT-1", "a pair on different batches limits the result", "check_adaptation"),
    _run_dir("generation_audit.missing", "GA-2", "a passed audit gate left its record", "check_generation_audit"),
    _run_dir("generation_audit.shape", "GA-2", "generation_audit {version: 1, stage before_training, integer seed}",
             "check_generation_audit"),
    _run_dir("generation_audit.files", "GA-3", "dataset, evaluation and audit files are retained and parse",
             "check_generation_audit"),
    _run_dir("generation_audit.counts", "GA-4", "counts are integers that add up and match the dataset file",
             "check_generation_audit"),
    _run_dir("generation_audit.sample", "GA-5", "the sample is the deterministic one, re-solved blind",
             "check_generation_audit"),
    _run_dir("generation_audit.limits", "GA-9", "a passed audit is within the spec's label-error and overlap limits",
             "check_generation_audit"),
    _run_dir("feasibility.missing", "FEAS-1", "a passed feasibility pilot left its record", "check_feasibility"),
    _run_dir("feasibility.shape", "FEAS-1", "feasibility is an object", "check_feasibility"),
    _run_dir("feasibility.config", "FEAS-2", "config and effective_config hold the projection keys", "check_feasibility"),
    _run_dir("feasibility.source", "FEAS-3", "source names the pilot evidence", "check_feasibility"),
    _run_dir("feasibility.primary_endpoint", "FEAS-8", "primary_endpoint is the spec's", "check_feasibility"),
    _run_dir("feasibility.phases", "FEAS-4", "every measured phase has its keys and measured seconds", "check_feasibility"),
    _run_dir("feasibility.recovery", "FEAS-5", "recovery.seconds is a positive reserve", "check_feasibility"),
    _run_dir("feasibility.generation", "FEAS-7", "generated training data has a generation record with its keys",
             "check_feasibility"),
    _run_dir("evidence.caps", "EVID-3", "evidence within its caps", "check_evidence"),
    _run_dir("evidence.missing_file", "EVID-8", "every manifest file is in evidence/", "check_evidence"),
    _run_dir("evidence.immutable", "EVID-7", "every evidence file still hashes to its manifest sha256", "check_evidence"),
    _run_dir("evidence.unlisted", "EVID-8", "every file in evidence/ is in the manifest", "check_evidence"),
    _run_dir("evidence.required_kinds", "EVID-4", "a succeeded run retains the required evidence kinds", "check_evidence"),
    _run_dir("evidence.checkpoints", "EVID-6", "checkpoints are tinker:// references without a query string",
             "check_evidence"),
    _run_dir("evidence.result_files", "EVID-8", "RESULT.evidence lists files with the manifest's sha256",
             "check_evidence"),
    _run_dir("evidence.shape", "EVID-8", "the evidence check could not be applied to a malformed record", _S),
    _run_dir("secrets.value", "SEC-1", "no file holds the value of a credential variable", "check_no_credentials"),
    _run_dir("secrets.url", "SEC-1", "no file holds a credential-bearing URL", "check_no_credentials"),
    _run_dir("secrets.header", "SEC-1", "no file holds a credential header with a value", "check_no_credentials"),
    _run_dir("secrets.shape", "SEC-1", "the secret scan could not be applied", _S),
)

RULES = CONTRACT_RULES + RUN_DIR_RULES
BY_ID = {rule.id: rule for rule in RULES}
assert len(BY_ID) == len(RULES), "a rule id is listed twice"
assert all(rule.category in (*CATEGORIES, RECORD) for rule in RULES)
assert all(set(rule.severity) <= set(SEVERITIES) for rule in RULES)

# The rule a category grade cites when the record is too malformed for the category's own guards
# (experiment.grading.grade._graded): the category's shape rule.
SHAPE_RULES = {E: "EVAL-1", D: "DEC-2", R: "REST-1", CO: "CORR-2", F: "FEAS-1", G: "GA-2"}
