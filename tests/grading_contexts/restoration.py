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


class EvidenceFiles:
    def __init__(self, files):
        self.files = files  # name -> JSON value

    def json(self, name):
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
