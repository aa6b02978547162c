"""Minimal restoration contexts (experiment/grading/restoration.py, REST-1..REST-10): arms' initialization
provenance, the plan, retained evidence files, restores and the update check, and the finding reader."""

from __future__ import annotations

from types import SimpleNamespace

from experiment.grading import restoration as rules


def context(arms, plan=None, spec=None):
    return SimpleNamespace(result={"initialization_provenance": {"version": 1, "arms": arms}}, plan=plan, spec=spec)


def restoration_plan(arms=("T", "B"), base_model="org/base", runs=(), untrained=()):
    return SimpleNamespace(base_model=base_model, replicas=[],
                           trained_arms=[SimpleNamespace(name=a, optimizer={}) for a in arms],
                           arms=[SimpleNamespace(name=a, trained=True) for a in arms]
                           + [SimpleNamespace(name=a, trained=False) for a in untrained],
                           training_runs=list(runs))


def messages(issues):
    return [(issue.rule, issue.status, issue.message) for issue in issues]


ADAPTER = "a" * 64


def initialization(**changes):
    """An arm's initialization record: measured by the server before the first update."""
    return {"base_checkpoint": "org/base", "source": "server_response", "adapter_sha256": ADAPTER,
            "evidence_ref": "info.json", "before_first_update": True, **changes}


# REST-2's finding for an arm whose initialization neither a hash nor a loaded checkpoint proves, and a checkpoint
# initialization that proves it
NEITHER_PROVEN = ("unverified", "arm T: initialization is proven neither by a measured adapter_sha256 nor by a loaded "
                                "immutable full-initialization checkpoint")
CHECKPOINT_INITIALIZATION = {"adapter_sha256": None, "checkpoint_uri": "tinker://init", "checkpoint_immutable": True,
                             "checkpoint_scope": "full_initialization", "loaded_checkpoint_uri": "tinker://init",
                             "load_succeeded": True}


def initial_output(**changes):
    """An arm's initial output, taken on the fixed batch before the first update."""
    return {"available": True, "batch_sha256": "b" * 64, "output_sha256": "c" * 64, "evidence_ref": "out.json",
            "before_first_update": True, **changes}


# the retained get_info after a client's creation, and the optimizer check that reads it
CREATION_INFO = {"get_info_after_creation": {"optimizer_config": {"type": "adamw", "learning_rate": 0.01, "beta1": 0.9},
                                             "lora_rank": 8}}


def optimizer_check(**changes):
    return {"after_restore": 0, "source": "server_response", "actual_family": "adamw", "evidence_ref": "info.json",
            "requested": {"family": "adamw", "learning_rate": 0.01, "beta1": 0.9},
            "actual_config": {"learning_rate": 0.01, "beta1": 0.9, "lora_rank": 8}, **changes}


class EvidenceFiles:
    def __init__(self, files):
        self.files = files  # name -> JSON value

    def json(self, name):
        return self.files.get(name)

    def jsonl(self, name):  # a JSONL file held as its list of rows
        return self.files.get(name)

    def usable(self, name):
        return name in self.files

    def why(self, name):
        return f"{name} is not retained"


def restore(number=1, **changes):
    return {"restore": number, "method": "load_state", "client": "client-T", "loaded_from": "tinker://ckpt",
            "at": "2026-12-03T10:00:00Z", "evidence_ref": f"load{number}.json", "with_optimizer_state": False, **changes}


LOAD = {"load_method": "load_state", "get_info_after_restore": {"model_id": "client-T"},
        "load_response": {"path": "tinker://ckpt"}}


def restores(entry, files=None, arms=None):
    ctx = context({"T": entry, **(arms or {})})
    ctx.evidence = EvidenceFiles(files if files is not None else {"load1.json": LOAD, "load2.json": LOAD})
    return [(s, m) for _, s, m in messages(rules.REST_4_restores(ctx))]


NEEDS = "arm T, restore 1: needs its number, the client, the checkpoint loaded, the load method, when, and an evidence_ref"


def update_check(**changes):
    return {"label": "adamw", "checkpoint_uri": "tinker://saved", "restored_from": "tinker://state",
            "steps_before_save": 1, "optimizer_state_restored": True,
            "clients": {"restored": "client-R", "uninterrupted": "client-U"},
            "optimizer_check_after_restore": {"source": "server_response", "requested": {"family": "adamw"}},
            "logprobs_after_second_step": {"uninterrupted": [[-0.5, -1.0]], "restored": [[-0.5, -1.0 + 4e-7]]},
            "max_abs_difference": 4e-7, **changes}


def rest10_findings(check, spec_family="adamw"):
    spec = {"restoration_preflight": {"groups": [{"arms": [{"name": "T", "optimizer": spec_family}]}]}}
    ctx = context({}, spec=spec)
    ctx.evidence = EvidenceFiles({"restoration-update-check.json": check} if check is not None else {})
    return [(s, m) for _, s, m in messages(rules.REST_10(ctx))]


WHERE10 = "create-save-restore check adamw"
