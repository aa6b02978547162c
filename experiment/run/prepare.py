"""prepare_run: a spec and its configuration in, one claimed run out; the one road into a run.

The CLI (flows.startup, after its preconditions) and a deployment's flow run (flows.experiment_flow, given no
prepared run) both call it: the plan is built once (or handed in by a caller that built it already for its
preconditions), the run is claimed once (RunStore.claim: new, resumed, or finished), and the embedded backend
keeps its checkpoints beside the run directories. What it returns is passed on explicitly (the CLI hands it to
the flow as a parameter), never through a module global.
"""

from __future__ import annotations

from typing import Iterator

from experiment.contract.plan import ExecutionPlan, build_plan
from experiment.contract.spec import Spec
from experiment.run.config import RunConfig
from experiment.run.store import RunStore


class PreparedRun:
    """A claimed run: its spec, plan and configuration, its store, and how it was claimed (`how`: "new",
    "resumed", or "finished": the newest run of this spec ended, returned untouched and unlocked).

    Handed to the flow as a parameter, which Prefect records: iterated, it gives only what may be recorded
    (run id, directory, how it was claimed), never the service target or the store's open lock."""

    def __init__(self, spec: Spec, plan: ExecutionPlan, config: RunConfig, store: RunStore, how: str):
        self.spec, self.plan, self.config, self.store, self.how = spec, plan, config, store, how

    def __iter__(self) -> Iterator[tuple[str, str]]:
        yield from (("run_id", self.store.run_id), ("run_dir", str(self.store.run_dir)), ("how", self.how))

    def __repr__(self) -> str:
        return f"PreparedRun(run_id={self.store.run_id!r}, how={self.how!r})"


def prepare_run(spec: Spec, config: RunConfig, *, fresh: bool = False, plan: ExecutionPlan | None = None) -> PreparedRun:
    """Build the spec's plan (unless the caller built it: `plan`) and claim its run under `config`'s runs dir and
    exposure; `fresh` starts a new replicate. Raises what RunStore.claim raises (RunInProgress when a live
    process holds the run; StoreError for a runs dir that cannot be used)."""
    plan = build_plan(spec) if plan is None else plan
    store, how = RunStore.claim(config.runs_dir, spec, plan, fresh=fresh, exposure=config.exposure)
    if how != "finished":
        config.keep_checkpoints_beside(store.run_dir.parent)
    return PreparedRun(spec, plan, config, store, how)
