"""How a flow run is found in the Prefect UI: named after its spec and run id, tagged with what it is.

A flow run of `run-experiment` is named by its run id (`<spec-slug>[-rehearsal]-<UTC stamp>-<6 hex>`,
the directory of its RESULT) as soon as the run is claimed; before that (a deployment run parses its
spec first) it is named after the spec file. Its tags say which spec, whether it is a rehearsal or a
run of the spec as written, the service exposure profile and the rehearsal scale:

    spec:gs1_kernel_vs_grpo_gsm8k  rehearsal  exposure:embedded  scale:wiring
    spec:trimuon_vs_dimuon_no_robots  production  exposure:production  scale:as-written

so that `prefect flow-run ls --tag rehearsal` or the UI's tag filter finds them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

AS_WRITTEN_SCALE = "as-written"  # the scale tag of a run of the spec as written (not a rehearsal)


def run_tags(spec_stem: str, rehearsal: dict[str, Any] | None, exposure: str) -> list[str]:
    """The tags of a run of `spec_stem` (rehearsal: the spec's rehearsal record, or None)."""
    scale = str(rehearsal.get("scale", "standard")) if rehearsal else AS_WRITTEN_SCALE
    return [f"spec:{spec_stem}", "rehearsal" if rehearsal else "production", f"exposure:{exposure}",
            f"scale:{scale}"]


def initial_flow_run_name() -> str:
    """`@flow(flow_run_name=...)`: the spec file's name (plus "-rehearsal") until the run id is known."""
    from prefect.runtime import flow_run

    parameters = flow_run.parameters or {}
    stem = Path(str(parameters.get("spec_path", "run"))).name.removesuffix(".json")
    return stem + ("-rehearsal" if parameters.get("rehearse") else "")


def label_flow_run(name: str | None, tags: list[str]) -> None:
    """Rename the current flow run (unless `name` is None) and add `tags` to the tags it has (deployment
    tags are kept). Outside a flow run, nothing."""
    from prefect.client.orchestration import get_client
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return
    current = context.flow_run
    merged = sorted(set(current.tags or []) | set(tags))
    with get_client(sync_client=True) as client:
        client.update_flow_run(current.id, name=name, tags=merged)
    current.tags = merged
    if name is not None:
        current.name = name
