"""The pipeline half of the optimizer update check: run the backend's optimizer on the fixed input.

The SDK exposes no weights download, so one optimizer step on the fixed tensors is run by the
backend's own code, as a command in its checkout (`python -m embedded_tinker.optimizer_probe`;
on a remote fork the same command runs in the fork's checkout). The pipeline imports nothing of the
backend here: tensors go in and updates come back as .npz files.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from experiment import PROJECT_ROOT

PROBE_MODULE = "embedded_tinker.optimizer_probe"
PROBE_TIMEOUT_S = 600


class ProbeError(RuntimeError):
    """The backend's optimizer command failed; its last output lines say why."""


def probe_job(family: str, config: dict[str, Any], learning_rate: float, hyper: dict[str, float],
              fresh: bool = False) -> dict[str, Any]:
    """One optimizer step to run: family and config at creation, learning rate and hyperparameters at the step."""
    return {"family": family, "config": config, "learning_rate": learning_rate, "hyper": hyper, "fresh": fresh}


def implementation_updates(fixed: dict[str, Any], jobs: list[dict[str, Any]],
                           checkout: Path = PROJECT_ROOT) -> list[list[np.ndarray]]:
    """Per job, the float64 update of every factor (A0, B0, A1, ...) computed by the backend's optimizer."""
    with tempfile.TemporaryDirectory(prefix="optimizer-probe-") as tmp:
        source, target = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        arrays = {f"pair{i}_{k}": v for i, pair in enumerate(fixed["pairs"]) for k, v in pair.items()}
        np.savez(source, jobs=np.array(json.dumps(jobs)), steps_taken=np.array(fixed["steps_taken"]), **arrays)
        done = subprocess.run([sys.executable, "-m", PROBE_MODULE, str(source), str(target)], cwd=checkout,
                              capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
            raise ProbeError(f"{PROBE_MODULE} exited {done.returncode}: {tail}")
        factors = 2 * len(fixed["pairs"])
        with np.load(target) as data:
            return [[data[f"job{j}_{k}"] for k in range(factors)] for j in range(len(jobs))]
