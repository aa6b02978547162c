"""One optimizer step on given tensors, as a command: the backend half of the a-priori analysis' tests.

    python -m embedded_tinker.optimizer_probe IN.npz OUT.npz

tests/unit/test_update_tolerance.py runs this backend's optimizer on the synthetic fixed input
(experiment/stats/update_tolerance.fixed_optimizer_input) to hold the written error analysis against
it. The pipeline itself never runs it: its correctness preflight measures the service's optimizer
through the SDK (docs/optimizers.md, "Measured through the service"). IN.npz holds `jobs`
(JSON text: a list of {family, config, learning_rate, hyper, fresh}), `steps_taken`, and per LoRA
pair i the float32 arrays `pair{i}_{A,B,momentum_A,momentum_B,grad_A,grad_B}`. OUT.npz holds
`job{j}_{k}`: the float64 update (after - before) of factor k (A0, B0, A1, ...) for job j.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import torch

from embedded_tinker.launch import exit_process
from embedded_tinker.optimizers import create_optimizer

FIELDS = ("A", "B", "momentum_A", "momentum_B", "grad_A", "grad_B")


def step_updates(pairs: list[dict[str, np.ndarray]], steps_taken: int, family: str, config: dict,
                 learning_rate: float, hyper: dict[str, float], fresh: bool = False) -> list[np.ndarray]:
    """One step of this backend's optimizer on the fixed tensors; the float64 update of every factor."""
    params, grads, state = [], [], {"steps_taken": torch.tensor(0 if fresh else steps_taken)}
    for pair in pairs:
        for factor in ("A", "B"):
            index = len(params)
            params.append(torch.tensor(pair[factor]).requires_grad_())
            grads.append(torch.tensor(pair[f"grad_{factor}"]))
            momentum = np.zeros_like(pair[factor]) if fresh else pair[f"momentum_{factor}"]
            state[f"momentum.{index}"] = torch.tensor(momentum)
    optimizer = create_optimizer({"type": family, **config}, params)
    optimizer.load_state_dict(state)
    before = [p.detach().clone() for p in params]
    for p, g in zip(params, grads):
        p.grad = g
    optimizer.step({"type": family, "learning_rate": learning_rate, **hyper})
    return [(p.detach() - b).double().numpy() for p, b in zip(params, before)]


def main(argv: list[str]) -> int:
    source, target = argv
    with np.load(source) as data:
        jobs = json.loads(str(data["jobs"]))
        count = len({key.split("_")[0] for key in data.files if key.startswith("pair")})
        pairs = [{f: data[f"pair{i}_{f}"] for f in FIELDS} for i in range(count)]
        steps_taken = int(data["steps_taken"])
    out = {}
    for j, job in enumerate(jobs):
        updates = step_updates(pairs, steps_taken, job["family"], job["config"], job["learning_rate"], job["hyper"],
                               job.get("fresh", False))
        out.update({f"job{j}_{k}": u for k, u in enumerate(updates)})
    np.savez(target, **out)
    return 0


if __name__ == "__main__":
    exit_process(main(sys.argv[1:]))
