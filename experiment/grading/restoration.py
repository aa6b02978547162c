"""Restoration category (REST-*): initialization provenance and optimizer checks.

Graded from `RESULT.initialization_provenance` and the evidence files its `evidence_ref`s name.
Requested optimizers come from the spec (`restoration_preflight.groups[].arms`, else the planned
arms), normalised like the run normalises them (`adam` is `adamw`, `lr` is `learning_rate`).
"""

from __future__ import annotations

from typing import Any

from experiment.contract.optimizer_defaults import step_defaults
from experiment.contract.plan import at_replica_seed
from experiment.contract.result_models import ArmProvenance
from experiment.contract.spec import OPTIMIZER_CONFIG_ALIASES as CONFIG_ALIASES, SERVER_STATE_KEYS, canonical_sha256
from experiment.grading.common import (
    HEX64, INVALID, MISSING_EVIDENCE, NOT_APPLICABLE, UNKNOWN, UNVERIFIED, CategoryGrade, GradeContext, Issue, as_dict, as_list, close,
    equal_json, is_integer, model_issues, run_checks, short, run_label,
)
from experiment.grading.initialization_provenance import (
    NOT_OPTIMIZER_KEYS, RUN_FILE_KEYS, provenance_arms, as_requested, optimizer_check_entries, evidence_info,
    evidence_load, family_of, fresh_optimizer_problems, output_sha256_of, planned_lrs, reported_optimizer, server_optimizer,
)
from experiment.grading.restoration_evidence import (
    REST10_ATOL, REST10_EVIDENCE, RESTORE_METHODS, STEP_SETTINGS, UPDATE_CHECK_KEYS, evidence_refs, is_time,
    max_difference, update_checks,
)
from experiment.grading.registry import implements, rule
from experiment.grading.traces import SFT_STEPS

NAME = "restoration"


def _requested(ctx: GradeContext) -> dict[str, dict[str, Any]]:
    """arm -> {family, config keys} the spec requests, for every arm of a restoration group."""
    section = as_dict((ctx.spec or {}).get("restoration_preflight"))
    wanted: dict[str, dict[str, Any]] = {}
    for group in as_list(section.get("groups")):
        for arm in as_list(as_dict(group).get("arms")):
            arm = as_dict(arm)
            config = {CONFIG_ALIASES.get(k, k): v for k, v in as_dict(arm.get("optimizer_config")).items()}
            wanted[str(arm.get("name"))] = {"family": family_of(arm.get("optimizer")), **config}
    if not wanted and ctx.plan is not None:
        for arm in ctx.plan.trained_arms:
            optimizer = as_dict(arm.optimizer)
            config = {CONFIG_ALIASES.get(k, k): v for k, v in as_dict(optimizer.get("config")).items()}
            wanted[arm.name] = {"family": family_of(optimizer.get("family")), **config}
    stated = dict(wanted)
    for replica in (r for r in getattr(ctx.plan, "replicas", []) if r.trained):
        if replica.arm in stated:  # the arm at each scheduled seed asks for the arm's config at that seed
            wanted[replica.label] = at_replica_seed(stated[replica.arm], replica.seed)
    return wanted


def _seed_replicas(ctx: GradeContext) -> list[Any]:
    """The arms' replicas at scheduled seeds after the first (the plan's labels, `<arm>-seed<s>`)."""
    plan = ctx.plan
    if plan is None or getattr(plan, "training_type", None) == "sft":
        return []  # an SFT arm's runs at every seed start from its one initialization: entries under its `runs`
    return [r for r in getattr(plan, "replicas", []) if r.trained and r.label != r.arm]


def _groups(ctx: GradeContext) -> list[list[str]]:
    section = as_dict((ctx.spec or {}).get("restoration_preflight"))
    groups = [[str(as_dict(a).get("name")) for a in as_list(as_dict(g).get("arms"))] for g in as_list(section.get("groups"))]
    if not groups and ctx.plan is not None:
        groups = [[arm.name for arm in ctx.plan.trained_arms]]
    replicas = _seed_replicas(ctx)
    groups += [[r.label for r in replicas if r.seed == seed and r.arm in group]  # each further seed's arms
               for seed in sorted({r.seed for r in replicas}) for group in list(groups)]  # form the groups again
    return [group for group in groups if group]


@rule("REST-1", "restoration", "invalid|unverified|unknown", "initialization_provenance has one entry per restoration arm (and per planned LR run)")
def REST_1(ctx: GradeContext) -> list[Issue]:
    record = ctx.result.get("initialization_provenance")
    if not isinstance(record, dict) or not equal_json(record.get("version"), 1):
        return [Issue("REST-1", UNVERIFIED, "initialization_provenance is missing or not version 1")]
    issues = []
    arms = provenance_arms(ctx)
    expected = sorted({arm for group in _groups(ctx) for arm in group})
    missing = [arm for arm in expected if arm not in arms]
    if missing:
        issues.append(Issue("REST-1", UNVERIFIED, f"missing arm evidence for {', '.join(missing)}"))
    untrained = [a.name for a in (ctx.plan.arms if ctx.plan else []) if not a.trained and a.name in arms]
    if untrained:
        issues.append(Issue("REST-1", INVALID, f"frozen untrained arm(s) {', '.join(untrained)} are in a restoration group"))
    for arm, entry in arms.items():
        issues += model_issues(ArmProvenance, entry, "REST-1", UNVERIFIED, f"arm {arm}")
    return issues


@implements("REST-1")
def REST_1_runs(ctx: GradeContext) -> list[Issue]:
    """REST-1, an LR grid *(project reading)*: an arm trained at several learning rates has one provenance entry
    per planned run under `runs` (each run is created and checked like an arm), labelled by its learning rate."""
    issues = []
    arms = {k: v for k, v in as_dict(as_dict(ctx.result.get("initialization_provenance")).get("arms")).items()
            if isinstance(v, dict)}
    if not any("runs" in entry for entry in arms.values()):
        return []  # a record without per-run entries: REST-5 grades each check's learning rate against the grid
    planned: dict[str, list[str]] = {}  # arm -> its runs' labels (`<lr>`, `<lr>-seed<s>` at a further seed)
    for run in (ctx.plan.training_runs if ctx.plan is not None else []):
        if run.lr is not None:
            planned.setdefault(run.arm, []).append(run_label(run))
    for arm, labels_planned in planned.items():
        if len(labels_planned) < 2 or arm not in arms:
            continue
        labels = list(as_dict(arms[arm].get("runs")))
        if sorted(labels) != sorted(labels_planned):
            issues.append(Issue("REST-1", UNVERIFIED, f"arm {arm}: provenance for runs {', '.join(labels) or 'none'}, the "
                                                      f"plan trains {', '.join(labels_planned)}"))
    return issues


@rule("REST-2", "restoration", "invalid|unverified", "initialization proof: a measured adapter hash or an immutable full-initialization checkpoint")
def REST_2(ctx: GradeContext) -> list[Issue]:
    issues = []
    for arm, entry in provenance_arms(ctx).items():
        init = as_dict(entry.get("initialization"))
        adapter = init.get("source") in ("server_response", "local_hash") and isinstance(init.get("adapter_sha256"), str) \
            and bool(HEX64.match(init["adapter_sha256"]))
        checkpoint = (init.get("source") == "server_response" and bool(init.get("checkpoint_uri"))
                      and init.get("checkpoint_immutable") is True and init.get("checkpoint_scope") == "full_initialization"
                      and init.get("loaded_checkpoint_uri") == init.get("checkpoint_uri") and init.get("load_succeeded") is True)
        if not init.get("base_checkpoint"):
            issues.append(Issue("REST-2", UNVERIFIED, f"arm {arm}: initialization has no base_checkpoint"))
        elif ctx.plan is not None and init.get("base_checkpoint") != ctx.plan.base_model:
            issues.append(Issue("REST-2", INVALID, f"arm {arm}: base_checkpoint {short(init.get('base_checkpoint'))} is not "
                                                   f"the spec's model {ctx.plan.base_model!r}"))
        if not (adapter or checkpoint):
            issues.append(Issue("REST-2", UNVERIFIED, f"arm {arm}: initialization is proven neither by a measured "
                                                      "adapter_sha256 nor by a loaded immutable full-initialization checkpoint"))
        if not init.get("evidence_ref") or init.get("before_first_update") is not True:
            issues.append(Issue("REST-2", UNVERIFIED, f"arm {arm}: initialization needs evidence_ref and "
                                                      "before_first_update true"))
    return issues


@rule("REST-3", "restoration", "invalid|unverified", "all arms of a group load the same initial adapter or checkpoint")
def REST_3(ctx: GradeContext) -> list[Issue]:
    issues, arms = [], provenance_arms(ctx)
    for group in _groups(ctx):
        present = [arm for arm in group if arm in arms]
        adapters = {arm: as_dict(arms[arm].get("initialization")).get("adapter_sha256") for arm in present}
        uris = {arm: as_dict(arms[arm].get("initialization")).get("loaded_checkpoint_uri")
                or as_dict(arms[arm].get("initialization")).get("checkpoint_uri") for arm in present}
        for what, values in (("adapter_sha256", adapters), ("checkpoint", uris)):
            known = {v for v in values.values() if v}
            if len(known) > 1:
                issues.append(Issue("REST-3", INVALID, f"group {'/'.join(group)}: arms load different initial {what}s"))
            elif known and not all(values.values()):  # one initialization: every arm names what the others name
                issues.append(Issue("REST-3", UNVERIFIED, f"group {'/'.join(group)}: arm(s) "
                                                          f"{', '.join(a for a, v in values.items() if not v)} name "
                                                          f"no initial {what} where the others name one"))
        for a in present:
            for b in present:
                if a < b and (adapters[a] or uris[a]) and (adapters[b] or uris[b]) and not ((adapters[a] and adapters[a] == adapters[b]) or (uris[a] and uris[a] == uris[b])):
                    issues.append(Issue("REST-3", INVALID, f"arms {a} and {b} share no initialization identity"))
    return issues


@rule("REST-4", "restoration", "invalid|unverified", "optimizer_checks at creation and after every restore; restores counted from their evidence")
def REST_4(ctx: GradeContext) -> list[Issue]:
    issues = []
    for arm, entry in provenance_arms(ctx).items():
        count = entry.get("restore_count")
        checks = [as_dict(c) for c in as_list(entry.get("optimizer_checks"))]
        covered = sorted(c.get("after_restore") for c in checks if is_integer(c.get("after_restore")))
        if not is_integer(count) or len(covered) != count + 1 or covered != list(range(len(covered))):
            issues.append(Issue("REST-4", UNVERIFIED, f"arm {arm}: optimizer_checks cover after_restore {covered}, not "
                                                      f"creation and each of {count!r} restores"))
        if any(c.get("before_next_update") is not True for c in checks):
            issues.append(Issue("REST-4", UNVERIFIED, f"arm {arm}: an optimizer check is not before_next_update"))
    return issues


@rule("REST-5", "restoration", "invalid|unverified", "each check's requested optimizer is the spec's group arm's, at a planned learning rate")
def REST_5(ctx: GradeContext) -> list[Issue]:
    """Requested optimizer settings are the spec's: family and config, and the learning rate is one
    the plan trains the arm (or the run) at."""
    issues, wanted, reported = [], _requested(ctx), set()
    for where, arm, check, lrs in optimizer_check_entries(ctx, planned_lrs(ctx)):
        spec_wants = wanted.get(arm)
        if spec_wants is None or where in reported:
            continue
        requested = as_requested(check)
        wrong = [k if k != "seed" or k not in requested else f"seed {short(requested[k])} (this replica's is {v})"
                 for k, v in spec_wants.items() if k not in ("family", "learning_rate")
                 and (k not in requested or not equal_json(requested[k], v))]
        # the record names the family as the pipeline requested it (experiment.rl.restoration.requested_optimizer:
        # the canonical form), so it is compared exactly; the spec's prose name is what gets normalised
        if requested.get("family") != spec_wants["family"]:
            wrong.insert(0, "family")
        allowed = lrs or ([spec_wants["learning_rate"]] if "learning_rate" in spec_wants else None)
        if allowed and "learning_rate" not in requested:
            issues.append(Issue("REST-5", UNVERIFIED, f"{where}: the requested optimizer names no learning rate"))
            reported.add(where)
            continue
        if allowed and not any(equal_json(requested.get("learning_rate"), lr) for lr in allowed):
            wrong.append(f"learning_rate {short(requested.get('learning_rate'))} (planned {', '.join(map(str, allowed))})")
        if wrong:
            issues.append(Issue("REST-5", INVALID, f"{where}: requested {', '.join(wrong)} differ from the spec's"))
            reported.add(where)
    return issues


@rule("REST-6", "restoration", "invalid|unverified", "actual optimizer family and config from a retained server response, equal to the requested")
def REST_6(ctx: GradeContext) -> list[Issue]:
    issues = []
    for where_, _, check, _ in optimizer_check_entries(ctx):
        where = f"{where_}, after_restore {check.get('after_restore')}"
        requested = as_requested(check)
        if check.get("source") != "server_response" or check.get("actual_family") is None:
            issues.append(Issue("REST-6", UNVERIFIED, f"{where}: the optimizer is declared, not read from a server "
                                                      "response"))
            continue
        if not check.get("evidence_ref"):
            issues.append(Issue("REST-6", UNVERIFIED, f"{where}: no evidence_ref for the server response"))
        if family_of(check.get("actual_family")) != family_of(requested.get("family")):
            issues.append(Issue("REST-6", INVALID, f"{where}: the server reports family {check.get('actual_family')!r}, "
                                                   f"requested {requested.get('family')!r}"))
            continue
        actual = as_dict(check.get("actual_config"))
        response = server_optimizer(ctx.evidence.json(check.get("evidence_ref")))
        if response is None:
            issues.append(Issue("REST-6", UNVERIFIED, f"{where}: {check.get('evidence_ref')} holds no server response "
                                                      "with the optimizer"))
        else:
            differ = [k for k, v in actual.items() if k in response and not equal_json(response[k], v)]
            if differ:
                issues.append(Issue("REST-6", INVALID, f"{where}: actual {', '.join(differ)} are not what the retained "
                                                       "server response says"))
        issues += _reported_issues(ctx, where, check)
        keys = [k for k in requested if k not in ("family", *NOT_OPTIMIZER_KEYS)]
        hidden = [k for k in keys if k not in actual]
        differ = [k for k in keys if k in actual and not equal_json(actual[k], requested[k])]
        if differ:
            issues.append(Issue("REST-6", INVALID, f"{where}: the server reports other {', '.join(differ)} than requested"))
        if hidden:
            issues.append(Issue("REST-6", UNVERIFIED, f"{where}: the server response does not expose "
                                                      f"{', '.join(hidden)}, so the optimizer config stays unverified"))
    return issues


def _reported_issues(ctx: GradeContext, where: str, check: dict[str, Any]) -> list[Issue]:
    """REST-6: the family and every setting the check calls actual are in the retained response, as it says them
    (a response that names another seed than requested is wrong too)."""
    reported = reported_optimizer(ctx.evidence.json(check.get("evidence_ref")))
    if reported is None:
        return []
    family, config = reported
    requested, actual = as_requested(check), as_dict(check.get("actual_config"))
    issues = []
    if family_of(family) != family_of(check.get("actual_family")):
        issues.append(Issue("REST-6", INVALID, f"{where}: the retained response reports family {short(family)}, the check "
                                               f"says {short(check.get('actual_family'))}"))
    differ = [k for k in actual if k in config and not equal_json(config[k], actual[k])]
    if differ:
        issues.append(Issue("REST-6", INVALID, f"{where}: actual {', '.join(differ)} are not what the retained response "
                                               "reports"))
    seeds = [k for k in NOT_OPTIMIZER_KEYS if k in config and k in requested and not equal_json(config[k], requested[k])]
    if seeds:
        issues.append(Issue("REST-6", INVALID, f"{where}: the retained response reports another {', '.join(seeds)}"))
    unseen = [k for k in actual if k not in config and k not in ("type", "family")]
    if unseen:
        issues.append(Issue("REST-6", UNVERIFIED, f"{where}: actual {', '.join(unseen)} are not in the retained response"))
    omitted = [k for k in config if k not in actual and k not in NOT_OPTIMIZER_KEYS]
    if set(actual) - {"type", "family"} and omitted:  # a config reported at all is reported whole
        issues.append(Issue("REST-6", UNVERIFIED, f"{where}: actual_config leaves out {', '.join(omitted)}, which the "
                                                  "retained response reports"))
    return issues


@rule("REST-7", "restoration", "invalid|unverified", "initial_output with hashes and evidence, equal across the group, or unavailable with a reason")
def REST_7(ctx: GradeContext) -> list[Issue]:
    issues, arms = [], provenance_arms(ctx)
    fixed_batch = as_dict((ctx.spec or {}).get("restoration_preflight")).get("fixed_batch_required") is True
    for arm, entry in arms.items():
        output = as_dict(entry.get("initial_output"))
        if output.get("available") is True:
            ok = all(isinstance(output.get(k), str) and HEX64.match(output[k]) for k in ("batch_sha256", "output_sha256"))
            if not ok or not output.get("evidence_ref") or output.get("before_first_update") is not True:
                issues.append(Issue("REST-7", UNVERIFIED, f"arm {arm}: initial_output needs batch_sha256, output_sha256, "
                                                          "evidence_ref and before_first_update true"))
        elif fixed_batch or not output.get("reason"):
            issues.append(Issue("REST-7", UNVERIFIED, f"arm {arm}: initial output not captured"
                                                      + (" although the spec requires a fixed batch" if fixed_batch else "")))
        retained = as_dict(ctx.evidence.json(output.get("evidence_ref"))) if output.get("available") is True else {}
        logprobs = retained.get("initial_output_logprobs")
        if isinstance(logprobs, list):
            try:
                recomputed = output_sha256_of(logprobs)
            except (TypeError, ValueError):
                recomputed = None
            if recomputed != output.get("output_sha256"):
                issues.append(Issue("REST-7", INVALID, f"arm {arm}: output_sha256 is not the hash of the logprobs "
                                                       f"retained in {output.get('evidence_ref')}"))
    for group in _groups(ctx):
        for key in ("batch_sha256", "output_sha256"):
            values = {as_dict(arms[a].get("initial_output")).get(key) for a in group if a in arms} - {None}
            if len(values) > 1:
                issues.append(Issue("REST-7", INVALID, f"group {'/'.join(group)}: initial outputs differ ({key})"))
    return issues


FIXED_BATCH_EVIDENCE = "restoration-fixed-batch.json"


@implements("REST-7")
def REST_7_fixed_batch(ctx: GradeContext) -> list[Issue]:
    """REST-7, the batch *(project reading)*: where the run retains its fixed batch, every arm's initial output
    (and the create-save-restore check) was taken on it: their batch_sha256 is the batch's canonical hash."""
    if not ctx.evidence.usable(FIXED_BATCH_EVIDENCE):
        return []
    try:
        digest = canonical_sha256(ctx.evidence.json(FIXED_BATCH_EVIDENCE))
    except (TypeError, ValueError):
        return [Issue("REST-7", INVALID, f"{FIXED_BATCH_EVIDENCE} is not a JSON batch")]
    named = {arm: as_dict(entry.get("initial_output")).get("batch_sha256") for arm, entry in provenance_arms(ctx).items()
             if as_dict(entry.get("initial_output")).get("available") is True}
    wrong = sorted(arm for arm, value in named.items() if value != digest)
    return [Issue("REST-7", INVALID, f"arm {', '.join(wrong)}: batch_sha256 is not the hash of the retained "
                                     f"{FIXED_BATCH_EVIDENCE}")] if wrong else []


@implements("REST-3")
def REST_3_checkpoint(ctx: GradeContext) -> list[Issue]:
    """REST-3, the initialization checkpoint *(project reading)*: where an arm names the adapter hash of the
    checkpoint it was created from, it is the arm's own adapter hash and the one the retained checkpoint
    response reports."""
    issues = []
    for arm, entry in provenance_arms(ctx).items():
        init = as_dict(entry.get("initialization"))
        if "checkpoint_adapter_sha256" not in init:
            continue
        reported = as_dict(as_dict(as_dict(ctx.evidence.json(init.get("evidence_ref"))).get("checkpoint_weights_info"))
                           .get("optimizer_config")).get("adapter_sha256", init.get("checkpoint_adapter_sha256"))
        if not (init.get("checkpoint_adapter_sha256") == init.get("adapter_sha256", init["checkpoint_adapter_sha256"])
                == reported):
            issues.append(Issue("REST-3", INVALID, f"arm {arm}: checkpoint_adapter_sha256 is not the arm's adapter hash "
                                                   "and the one the retained checkpoint response reports"))
    return issues


@rule("REST-8", "restoration", "unverified", "every evidence_ref names a retained evidence file with inline content")
def REST_8(ctx: GradeContext) -> list[Issue]:
    refs = evidence_refs(provenance_arms(ctx))
    return [Issue("REST-8", UNVERIFIED, f"evidence_ref {short(ref)}: {ctx.evidence.why(ref)}", MISSING_EVIDENCE)
            for ref in sorted(refs) if not ctx.evidence.usable(ref)]


@implements("REST-1")
def REST_1_evidence(ctx: GradeContext) -> list[Issue]:
    """REST-1 per arm, in the exchange's words (REST-1): an arm whose provenance names evidence the
    record does not retain has missing arm evidence."""
    return [Issue("REST-1", UNVERIFIED, f"{arm}: missing or duplicate arm evidence", MISSING_EVIDENCE)
            for arm, entry in provenance_arms(ctx).items()
            if any(not ctx.evidence.usable(ref) for ref in evidence_refs(entry))]


@rule("REST-9", "restoration", "unverified", "a lone resumed arm forms a group only with a recorded actual restore")
def REST_9(ctx: GradeContext) -> list[Issue]:
    groups = _groups(ctx)
    lone = [g for g in groups if len(g) == 1]
    if not lone:
        return []
    features = as_dict((ctx.spec or {}).get("experiment_features"))
    arms = provenance_arms(ctx)
    issues = []
    for (arm,) in lone:
        restored = as_dict(arms.get(arm)).get("restore_count")
        if not (features.get("checkpoint_restore") is True and features.get("paired_training_arms") is False
                and is_integer(restored) and restored >= 1):
            issues.append(Issue("REST-9", UNVERIFIED, f"arm {arm} forms a group alone without checkpoint_restore, "
                                                      "unpaired arms and an actual restore"))
    return issues


@rule("REST-11", "restoration", "invalid|unverified", "checkpoint_restore declared: every trained arm records a proven mid-run restore of its state")
def REST_11(ctx: GradeContext) -> list[Issue]:
    """checkpoint_restore declared *(project reading, issue 46)*: every trained arm (each trained replica; for
    training_type sft every training run of every arm's LR grid at every seed, its entry under the arm's `runs`)
    records a designed mid-run restore, a restore from a state it saved (not its initialization checkpoint) with the
    optimizer state, whose optimizer check after that restore is read from the server's response with no mismatch,
    and whose retained evidence file names the same state; an SFT run's training log (sft-steps.jsonl, where
    retained) shows its last step on the restored client (the restored state continued). None recorded: unverified
    (the declared restore is not proven); one that is not such a restore, or whose evidence contradicts it: invalid."""
    if as_dict((ctx.spec or {}).get("experiment_features")).get("checkpoint_restore") is not True or not ctx.trained \
            or ctx.plan is None:
        return []
    arms, issues = provenance_arms(ctx), []
    last_client: dict[str, Any] = {}  # an SFT run -> the client of its last logged step (its last attempt's)
    if getattr(ctx.plan, "training_type", None) == "sft":  # each run is created, trained and restored like an arm
        labels = {f"{run.arm} run {run_label(run)}": run.name for run in ctx.plan.training_runs}
        for row in (ctx.evidence.jsonl(SFT_STEPS) or []) if ctx.evidence.usable(SFT_STEPS) else []:
            last_client[str(as_dict(row).get("run"))] = as_dict(row).get("model_id")
    else:
        labels = dict.fromkeys([r.label for r in getattr(ctx.plan, "replicas", []) if r.trained] or
                               [a.name for a in ctx.plan.trained_arms])
    for label, run_name in labels.items():
        entry = as_dict(arms.get(label))
        init_uri = as_dict(entry.get("initialization")).get("checkpoint_uri")
        designed = [as_dict(r) for r in as_list(entry.get("restores"))
                    if as_dict(r).get("loaded_from") not in (None, init_uri)]
        if not designed:
            issues.append(Issue("REST-11", UNVERIFIED, f"arm {label}: checkpoint_restore is declared, but no mid-run "
                                                       "restore from a state the arm saved is recorded"))
            continue
        restore = designed[0]
        check = next((as_dict(c) for c in as_list(entry.get("optimizer_checks"))
                      if as_dict(c).get("after_restore") == restore.get("restore")), {})
        ref = restore.get("evidence_ref")
        retained = ctx.evidence.json(ref) if ctx.evidence.usable(ref) else None
        wrong = [what for what, ok in (
            ("the optimizer state", restore.get("with_optimizer_state") is True),
            ("an optimizer check after it, before the next update, without mismatches",
             check.get("before_next_update") is True and check.get("mismatches") == []),
            ("retained evidence naming the same state",
             retained is None or (as_dict(retained).get("restored_from") == restore.get("loaded_from")
                                  and as_dict(retained).get("with_optimizer_state") is True)),
            (f"its run's last step on the restored client ({SFT_STEPS})",
             run_name not in last_client or last_client[run_name] == restore.get("client"))) if not ok]
        if wrong:
            issues.append(Issue("REST-11", INVALID, f"arm {label}: the mid-run restore {short(restore.get('restore'))} "
                                                    f"(checkpoint_restore) lacks {'; '.join(wrong)}"))
        elif retained is None or check.get("source") != "server_response":
            issues.append(Issue("REST-11", UNVERIFIED, f"arm {label}: the mid-run restore "
                                                       f"{short(restore.get('restore'))} (checkpoint_restore) is not "
                                                       "proven by a retained server response"))
    return issues


# ---- restore counts from the load evidence (REST-4) and the create-save-restore update (REST-10) ----


@implements("REST-4")
def REST_4_restores(ctx: GradeContext) -> list[Issue]:
    """restore_count is the number of recorded loads of saved state into the arm's clients (`restores`:
    which client, which checkpoint, how, when, evidence), and an arm whose initialization is a saved
    checkpoint has a restore of it: a count of 0 there is false."""
    issues = []
    for arm, entry in provenance_arms(ctx).items():
        count, restores = entry.get("restore_count"), entry.get("restores")
        init = as_dict(entry.get("initialization"))
        created_from = init.get("loaded_checkpoint_uri") or init.get("checkpoint_uri")
        if not isinstance(restores, list):
            if created_from:
                issues.append(Issue("REST-4", INVALID, f"arm {arm}: created from saved state {short(created_from)} but "
                                                       f"records no restore (restore_count {count!r}, no restores)"))
            elif isinstance(count, int) and count > 0:
                issues.append(Issue("REST-4", UNVERIFIED, f"arm {arm}: restore_count {count} without load evidence "
                                                          "(no restores)"))
            continue
        if not is_integer(count) or count != len(restores):
            issues.append(Issue("REST-4", INVALID, f"arm {arm}: restore_count {count!r} but {len(restores)} restores "
                                                   "are recorded"))
        others = {as_dict(other.get("initialization")).get("evidence_ref") for name, other in provenance_arms(ctx).items()
                  if name.split(" run ")[0] != arm.split(" run ")[0]} - {init.get("evidence_ref"), None}  # its runs' are its
        for number, restore in enumerate(restores, 1):
            restore = as_dict(restore)
            where = f"arm {arm}, restore {number}"
            if restore.get("evidence_ref") in others:
                issues.append(Issue("REST-4", INVALID, f"{where}: evidence_ref {short(restore['evidence_ref'])} is another "
                                                       "arm's evidence"))
            numbered = is_integer(restore.get("restore")) and restore["restore"] == number  # true is no number
            if not numbered or restore.get("method") not in RESTORE_METHODS or not all(
                    restore.get(key) for key in ("client", "loaded_from", "at", "evidence_ref")) or not is_time(restore["at"]):
                issues.append(Issue("REST-4", UNVERIFIED, f"{where}: needs its number, the client, the checkpoint "
                                                          "loaded, the load method, when, and an evidence_ref"))
                continue
            if not ctx.evidence.usable(restore["evidence_ref"]):
                issues.append(Issue("REST-4", UNVERIFIED, f"{where}: evidence_ref {short(restore['evidence_ref'])}: "
                                                          f"{ctx.evidence.why(restore['evidence_ref'])}"))
                continue
            if restore.get("with_optimizer_state") is not (restore["method"] == RESTORE_METHODS[1]):
                issues.append(Issue("REST-4", INVALID, f"{where}: with_optimizer_state {short(restore.get('with_optimizer_state'))}"
                                                       f" but loaded by {restore['method']}"))
            method = as_dict(ctx.evidence.json(restore["evidence_ref"])).get("load_method")
            if method is not None and method != restore["method"]:
                issues.append(Issue("REST-4", INVALID, f"{where}: the evidence loaded by {short(method)}, the restore says "
                                                       f"{restore['method']}"))
            client, loaded = evidence_load(ctx, restore["evidence_ref"])
            if client is None and evidence_info(ctx, restore["evidence_ref"]):
                issues.append(Issue("REST-4", UNVERIFIED, f"{where}: the evidence's get_info names no client"))
            if client is not None and client != restore["client"]:
                issues.append(Issue("REST-4", INVALID, f"{where}: the evidence's get_info names client {short(client)}, "
                                                       f"the restore says {short(restore['client'])}"))
            if loaded is not None and loaded != restore["loaded_from"]:
                issues.append(Issue("REST-4", INVALID, f"{where}: the evidence loaded {short(loaded)}, the restore says "
                                                       f"{short(restore['loaded_from'])}"))
        if created_from and not any(as_dict(r).get("loaded_from") == created_from for r in restores):
            issues.append(Issue("REST-4", INVALID, f"arm {arm}: created from saved state {short(created_from)} but no "
                                                   "restore loads it"))
    return issues


@rule("REST-10", "restoration", "invalid|unverified", "a create-save-restore fixed-gradient update matches the uninterrupted client")
def REST_10(ctx: GradeContext) -> list[Issue]:
    """A create-save-restore fixed-gradient update (one optimizer step before the save, so moments are
    restored) against the uninterrupted client, recomputed from the retained logprobs of both clients
    after the same second step; one check per optimizer family of the restoration groups."""
    if not ctx.evidence.usable(REST10_EVIDENCE):
        return [Issue("REST-10", UNVERIFIED, f"no create-save-restore check retained ({REST10_EVIDENCE}: "
                                             f"{ctx.evidence.why(REST10_EVIDENCE)})")]
    issues, families = [], set()
    for label, check in update_checks(ctx.evidence.json(REST10_EVIDENCE)).items():
        where = f"create-save-restore check {label}"
        optimizer = as_dict(check.get("optimizer_check_after_restore"))
        families.add(family_of(as_dict(optimizer.get("requested")).get("family")))
        clients = as_dict(check.get("clients"))
        if not (is_integer(check.get("steps_before_save")) and check["steps_before_save"] >= 1
                and check.get("optimizer_state_restored") is True and check.get("restored_from")
                and check.get("restored_from") != check.get("checkpoint_uri")):
            issues.append(Issue("REST-10", INVALID, f"{where}: not a restore of state saved after an optimizer step "
                                                    "with its optimizer state"))
        if not clients.get("restored") or clients.get("restored") == clients.get("uninterrupted"):
            issues.append(Issue("REST-10", UNVERIFIED, f"{where}: the restored and the uninterrupted client are not "
                                                       "two named clients"))
        if optimizer.get("source") != "server_response" or optimizer.get("mismatches"):
            issues.append(Issue("REST-10", INVALID if optimizer.get("mismatches") else UNVERIFIED,
                                f"{where}: the restored optimizer is not verified from a server response"))
        outputs = as_dict(check.get("logprobs_after_second_step"))
        difference = max_difference(outputs.get("uninterrupted"), outputs.get("restored"))
        if difference is None:
            issues.append(Issue("REST-10", UNVERIFIED, f"{where}: the two clients' outputs are not retained, so the "
                                                       "difference cannot be recomputed"))
            continue
        if not close(check.get("max_abs_difference"), difference):
            issues.append(Issue("REST-10", INVALID, f"{where}: recorded max_abs_difference "
                                                    f"{short(check.get('max_abs_difference'))} is not the recomputed {difference!r}"))
        if difference > REST10_ATOL:
            issues.append(Issue("REST-10", INVALID, f"{where}: the restored client's update differs from the "
                                                    f"uninterrupted one by {difference:.3g} > {REST10_ATOL:g}"))
    missing = sorted({want["family"] for want in _requested(ctx).values()} - families)
    if missing:
        issues.append(Issue("REST-10", UNVERIFIED, f"no create-save-restore check for optimizer family "
                                                   f"{', '.join(missing)}"))
    return issues


def _check_problems(ctx: GradeContext, key: str, check: dict[str, Any], keyed: bool) -> list[tuple[str, str]]:
    """(status, problem) for one retained create-save-restore check beyond its recomputed difference: whose
    check it is, the clients and the restore it names, the optimizer it requested (the spec's) and the
    service reported, the update it took, the fixed tolerance, and its outputs' hashes.

    Long because: one retained check's problems, each a short condition in the order of the rule's text.
    """
    problems: list[tuple[str, str]] = []
    label, wanted = check.get("label"), _requested(ctx)
    if (keyed and label != key) or label not in wanted:
        problems.append((INVALID, f"label {short(label)} is not a restoration arm{'' if not keyed else ' (nor its key)'}"))
    clients = as_dict(check.get("clients"))
    names = [clients.get(k) for k in ("uninterrupted", "interrupted", "restored")]
    if not all(isinstance(n, str) and n for n in names) or len(set(names)) != 3:
        problems.append((UNVERIFIED, "the uninterrupted, interrupted and restored clients are not three named clients"))
    missing = [key for key in UPDATE_CHECK_KEYS if key not in check]
    if missing:
        problems.append((UNVERIFIED, f"it holds no {', '.join(missing)}"))
    init = as_dict(as_dict(provenance_arms(ctx).get(str(label))).get("initialization"))
    if init.get("checkpoint_uri") is None:
        problems.append((UNVERIFIED, f"checkpoint_uri {short(check.get('checkpoint_uri'))} cannot be compared: the arm's "
                                     "initialization names no checkpoint"))
    elif check.get("checkpoint_uri") != init.get("checkpoint_uri"):
        problems.append((INVALID, f"checkpoint_uri {short(check.get('checkpoint_uri'))} is not the arm's initialization "
                                  f"checkpoint ({short(init.get('checkpoint_uri'))})"))
    restore = check.get("restore")
    if restore is None:
        problems.append((UNVERIFIED, "it records no restore (which client loaded which saved state, how and when)"))
    elif clients.get("restored"):
        restore = as_dict(restore)
        if (restore.get("restore"), restore.get("client"), restore.get("loaded_from"), restore.get("method"),
                restore.get("with_optimizer_state"), restore.get("evidence_ref")) != (
                1, clients.get("restored"), check.get("restored_from"), RESTORE_METHODS[1], True, REST10_EVIDENCE):
            problems.append((INVALID, "its restore record is not the restored client loading restored_from with its "
                                      "optimizer state"))
    optimizer = as_dict(check.get("optimizer_check_after_restore"))
    requested, actual = as_dict(optimizer.get("requested")), as_dict(optimizer.get("actual_config"))
    spec_wants = wanted.get(str(label))
    if spec_wants is not None:
        wrong = [k for k, v in spec_wants.items() if k not in ("family", "learning_rate") and not equal_json(requested.get(k), v)]
        wrong += [k for k in requested if k not in spec_wants and k not in ("family", "learning_rate")]
        allowed = planned_lrs(ctx).get(str(label), []) + ([spec_wants["learning_rate"]] if "learning_rate" in spec_wants else [])
        if allowed and not any(equal_json(requested.get("learning_rate"), lr) for lr in allowed):
            wrong.append("learning_rate")
        # the record names the family as the pipeline requested it (experiment.rl.restoration.requested_optimizer:
        # the canonical form), so it is compared exactly; the spec's prose name is what gets normalised
        if requested.get("family") != spec_wants["family"]:
            wrong.insert(0, "family")
        if wrong:
            problems.append((INVALID, f"requested {', '.join(wrong)} differ from the spec's"))
    if optimizer.get("after_restore") != 1 or optimizer.get("before_next_update") is not True or \
            not isinstance(optimizer.get("mismatches"), list) or optimizer.get("evidence_ref") != REST10_EVIDENCE:
        problems.append((UNVERIFIED, "the optimizer check is not the one after the restore, before the next update, "
                                     f"with its mismatches listed and {REST10_EVIDENCE} as its evidence"))
    if family_of(optimizer.get("actual_family")) != family_of(requested.get("family")):
        problems.append((INVALID, f"the service reports family {short(optimizer.get('actual_family'))}, requested "
                                  f"{short(requested.get('family'))}"))
    keys = [k for k in requested if k not in ("family", *NOT_OPTIMIZER_KEYS)]
    if any(k in actual and not equal_json(actual[k], requested[k]) for k in keys):
        problems.append((INVALID, "the service reports another optimizer config than requested"))
    elif any(k not in actual for k in keys):
        problems.append((UNVERIFIED, "the service does not expose the whole requested optimizer config"))
    problems += _reported_rank_problems(ctx, str(label), optimizer)
    update = check.get("update")
    if "update" in check and not (isinstance(update, dict) and "learning_rate" in update):
        problems.append((INVALID, "the update it took names no learning rate"))
    elif isinstance(update, dict):
        defaults = step_defaults(requested.get("family"))  # what an unstated setting means: the SDK's documented value
        wrong = [k for k, v in update.items() if not (
            family_of(v) == family_of(requested.get("family")) if k in ("type", "family")
            else equal_json(v, requested[k]) if k in requested else k in defaults and equal_json(v, defaults[k]))]
        wrong += [k for k in requested if k in STEP_SETTINGS and k not in update]  # every requested step setting taken
        if wrong:
            problems.append((INVALID, f"the update it took ({', '.join(wrong)}) is not the requested optimizer's"))
    if not close(check.get("atol"), REST10_ATOL):
        problems.append((INVALID, f"atol {short(check.get('atol'))} is not the tolerance fixed before measuring "
                                  f"({REST10_ATOL:g})"))
    outputs = as_dict(check.get("logprobs_after_second_step"))
    hashes = check.get("output_sha256")
    if hashes is not None and outputs and as_dict(hashes) != {name: canonical_sha256(values) for name, values in outputs.items()}:
        problems.append((INVALID, "output_sha256 is not the hash of the retained outputs"))
    batches = {as_dict(entry.get("initial_output")).get("batch_sha256") for entry in provenance_arms(ctx).values()} - {None}
    if "batch_sha256" in check and len(batches) == 1 and check.get("batch_sha256") not in batches:
        problems.append((INVALID, "batch_sha256 is not the fixed batch the arms' initial outputs were taken on"))
    difference = max_difference(outputs.get("uninterrupted"), outputs.get("restored"))
    if "passed" in check and difference is not None and check.get("passed") is not (
            difference <= REST10_ATOL and not optimizer.get("mismatches")):
        problems.append((INVALID, f"passed {short(check.get('passed'))} is not what its outputs and optimizer check give"))
    if "problems" in check and check.get("problems") != optimizer.get("mismatches"):
        problems.append((INVALID, "problems are not its optimizer check's mismatches"))
    return problems


def _reported_rank_problems(ctx: GradeContext, label: str, optimizer: dict[str, Any]) -> list[tuple[str, str]]:
    """The LoRA rank the service reports after the restore (actual_config.lora_rank, which the run reads from the
    same get_info as the optimizer config) is the rank the spec asks for, where the request does not already name
    it (an RL group's optimizer_config does, and is compared above; an SFT run asks for it at model creation)."""
    requested, actual = as_dict(optimizer.get("requested")), optimizer.get("actual_config")
    rank = as_dict(_requested(ctx).get(label)).get("lora_rank", (ctx.spec or {}).get("lora_rank"))
    if rank is None or "lora_rank" in requested or not isinstance(actual, dict) or \
            optimizer.get("source") != "server_response":
        return []
    if "lora_rank" not in actual:
        return [(UNVERIFIED, f"the service's LoRA rank after the restore is not in its actual_config (the spec asks "
                             f"for rank {short(rank)})")]
    if not equal_json(actual["lora_rank"], rank):
        return [(INVALID, f"the service reports LoRA rank {short(actual['lora_rank'])} after the restore, the spec "
                          f"asks for {short(rank)}")]
    return []


@implements("REST-10")
def REST_10_check(ctx: GradeContext) -> list[Issue]:
    """REST-10, the retained check itself: every field a reviewer reads is the arm's, the spec's, or
    recomputes (see `_check_problems`)."""
    data = ctx.evidence.json(REST10_EVIDENCE) if ctx.evidence.usable(REST10_EVIDENCE) else None
    if not isinstance(data, dict):
        return []
    keyed = "max_abs_difference" not in data
    return [Issue("REST-10", status, f"create-save-restore check {label}: {problem}")
            for label, check in update_checks(data).items()
            for status, problem in _check_problems(ctx, label, check, keyed)]


def _response_problems(ctx: GradeContext, arm: str, entry: dict[str, Any], data: dict[str, Any],
                       checkpoint_infos: dict[Any, list[Any]]) -> list[tuple[str, str]]:
    """(status, problem) for one arm's retained restoration response, field by field: the load it names is the
    arm's initialization and first restore (checkpoint, method, time, the service's load response), the get_info
    after creation is the restored client's (its id, the spec's model, a LoRA of the requested rank, the arm's
    adapter hash, an optimizer before any update), and the initialization checkpoint's weights info is the spec's
    model, a LoRA of the requested rank, the checkpoint's adapter hash, an optimizer before any update whose family
    and the settings a request names are a restoration arm's (the run saves it with its first arm's; the service
    may report more settings, the same for every arm loading it)."""
    init = as_dict(entry.get("initialization"))
    ref = init.get("evidence_ref")
    restore = next((as_dict(r) for r in as_list(entry.get("restores")) if as_dict(r).get("evidence_ref") == ref), {})
    missing = [key for key in RUN_FILE_KEYS if key not in data]
    problems = [(UNVERIFIED, f"it holds no {', '.join(missing)}")] if missing else []
    base = ctx.plan.base_model if ctx.plan is not None else init.get("base_checkpoint")
    wanted = _requested(ctx)
    rank = as_dict(wanted.get(arm)).get("lora_rank", (ctx.spec or {}).get("lora_rank"))
    if "loaded_from" in data and data["loaded_from"] != init.get("checkpoint_uri"):
        problems.append((INVALID, f"loaded_from {short(data['loaded_from'])} is not the initialization checkpoint"))
    for key, field_ in (("loaded_from", "loaded_from"), ("load_method", "method"), ("loaded_at", "at")):
        if key in data and restore and data[key] != restore.get(field_):
            problems.append((INVALID, f"{key} {short(data[key])} is not its restore's {field_} "
                                      f"({short(restore.get(field_))})"))
    if "load_response" in data and data["load_response"] != init.get("load_response"):
        problems.append((INVALID, "load_response is not the initialization's load response"))
    if "loaded_path" in restore and restore["loaded_path"] != as_dict(data.get("load_response")).get("path"):
        problems.append((INVALID, "its restore's loaded_path is not the path the load response names"))
    info = data.get("get_info_after_creation")
    if "get_info_after_creation" in data:
        info = as_dict(info)
        optimizer = as_dict(info.get("optimizer_config"))
        wrong = [key for key, ok in (
            ("type", info.get("type") == "get_info"),
            ("model_id", not restore or info.get("model_id") == restore.get("client")),
            ("model_name", info.get("model_name") == base),
            ("model_data.model_name", as_dict(info.get("model_data")).get("model_name") == base),
            ("is_lora", info.get("is_lora") is True),
            ("lora_rank", rank is None or equal_json(info.get("lora_rank"), rank)),
            ("adapter_sha256", optimizer.get("adapter_sha256") == init.get("adapter_sha256")
             or (optimizer.get("adapter_sha256") is None and init.get("adapter_sha256") is None))) if not ok]
        wrong += fresh_optimizer_problems(optimizer)
        checkpoint_state = as_dict(as_dict(data.get("checkpoint_weights_info")).get("optimizer_config"))
        wrong += [key for key in SERVER_STATE_KEYS if key in checkpoint_state and key not in optimizer]  # one service
        if wrong:
            problems.append((INVALID, f"its get_info after creation reports another {', '.join(wrong)} than the arm's "
                                      "client, the spec's model and its initialization"))
    if "checkpoint_weights_info" in data:
        info = as_dict(data["checkpoint_weights_info"])
        optimizer = as_dict(info.get("optimizer_config"))
        requested = list(wanted.values())  # the run saves the initialization with its first arm's optimizer
        settings = {k: v for k, v in optimizer.items() if k not in ("type", "family", "adapter_sha256", *SERVER_STATE_KEYS)}
        wrong = [key for key, ok in (
            ("base_model", info.get("base_model") == base),
            ("is_lora", info.get("is_lora") is True),
            ("lora_rank", rank is None or equal_json(info.get("lora_rank"), rank)),
            ("adapter_sha256", optimizer.get("adapter_sha256") == init.get("checkpoint_adapter_sha256")),
            ("optimizer", not requested or any(
                family_of(optimizer.get("type", optimizer.get("family"))) == want["family"]
                and all(equal_json(v, want[k]) for k, v in settings.items() if k in want) for want in requested))) if not ok]
        wrong += fresh_optimizer_problems(optimizer)
        if wrong:
            problems.append((INVALID, f"its initialization checkpoint's weights info reports another "
                                      f"{', '.join(wrong)} than the spec's model, the requested rank and optimizer, "
                                      "and the checkpoint's adapter hash before any update"))
        others = [other for other in checkpoint_infos.get(init.get("checkpoint_uri"), []) if other != info]
        if others:
            problems.append((INVALID, "its initialization checkpoint's weights info is not what the other arms loading "
                                      "that checkpoint retained"))
    return problems


@implements("REST-6")
def REST_6_response(ctx: GradeContext) -> list[Issue]:
    """REST-6, the retained response *(project reading)*: every field of each arm's restoration evidence (the run's
    file: the load, the get_info after creation, the initialization checkpoint's weights info) is the arm's, its
    initialization's, its restore's or the spec's (see `_response_problems`)."""
    files: dict[str, dict[str, Any]] = {}
    for arm, entry in provenance_arms(ctx).items():
        ref = as_dict(entry.get("initialization")).get("evidence_ref")
        data = ctx.evidence.json(ref) if ref and ctx.evidence.usable(ref) else None
        if isinstance(data, dict) and any(key in data for key in RUN_FILE_KEYS):
            files[arm] = data
    checkpoint_infos: dict[Any, list[Any]] = {}
    for arm, data in files.items():
        uri = as_dict(provenance_arms(ctx)[arm].get("initialization")).get("checkpoint_uri")
        if uri is not None and "checkpoint_weights_info" in data:
            checkpoint_infos.setdefault(uri, []).append(as_dict(data["checkpoint_weights_info"]))
    issues = [Issue("REST-6", status, f"arm {arm}: {as_dict(provenance_arms(ctx)[arm].get('initialization')).get('evidence_ref')}: "
                                      f"{problem}")
              for arm, data in files.items()
              for status, problem in _response_problems(ctx, arm, provenance_arms(ctx)[arm], data, checkpoint_infos)]
    models = {arm: as_dict(data.get("get_info_after_creation")).get("model_data") for arm, data in files.items()}
    if len({canonical_sha256(model) for model in models.values()}) > 1:  # every arm is a LoRA of the one base model
        issues.append(Issue("REST-6", INVALID, f"the arms' get_info responses describe different models (model_data of "
                                               f"{', '.join(sorted(models))})"))
    return issues


@implements("REST-2")
def REST_2_seed(ctx: GradeContext) -> list[Issue]:
    """REST-2, the seed *(project reading)*: an arm's `init_seed`, where the service took one, is the seed its
    replica is scheduled at (the arm at the first seed, `<arm>-seed<s>` at s)."""
    scheduled = {r.label: r.seed for r in getattr(ctx.plan, "replicas", []) if r.trained}
    issues = []
    for arm, entry in provenance_arms(ctx).items():
        init = as_dict(entry.get("initialization"))
        seed = init.get("init_seed")
        retained = ctx.evidence.json(init.get("evidence_ref")) if ctx.evidence.usable(init.get("evidence_ref")) else None
        if "init_seed" not in init and isinstance(retained, dict) and any(key in retained for key in RUN_FILE_KEYS):
            issues.append(Issue("REST-2", UNVERIFIED, f"arm {arm}: the initialization does not say which seed the "
                                                      "service took (init_seed, null where it took none)"))
        if seed is not None and arm in scheduled and seed != scheduled[arm]:
            issues.append(Issue("REST-2", INVALID, f"arm {arm}: init_seed {seed!r} is not the seed it is scheduled at "
                                                   f"({scheduled[arm]})"))
    return issues


CHECKS = [REST_1, REST_1_runs, REST_1_evidence, REST_2, REST_2_seed, REST_3, REST_3_checkpoint, REST_4, REST_4_restores, REST_5, REST_6, REST_6_response, REST_7, REST_7_fixed_batch, REST_8, REST_9, REST_10, REST_10_check,
          REST_11]


@implements("REST-1")
def grade(ctx: GradeContext) -> CategoryGrade:
    applicable = ctx.gate_applicable("restoration_preflight")
    if ctx.spec is None:
        return CategoryGrade(NAME, UNKNOWN, [Issue("REST-1", UNKNOWN, "no spec to grade restoration against")])
    if applicable is False:
        return CategoryGrade(NAME, NOT_APPLICABLE, notes=[ctx.gate_reason("restoration_preflight")])
    if ctx.result.get("initialization_provenance") is None and not ctx.trained:
        return CategoryGrade(NAME, UNKNOWN, [Issue("REST-1", UNKNOWN, "no initialization provenance (the run stopped "
                                                                     "before the restoration preflight)")])
    return run_checks(NAME, CHECKS, ctx)
