"""RunConfig: how one run is carried out, composed once at the flow's entry and handed down.

Where runs go, which service the run talks to (and the exposure profile it asked for), the
capacity policy every service call goes through, and the re-queue chain the run belongs to. The
flow composes it (`RunConfig.compose`) from its parameters and the environment before anything
runs; everything below reads it from here instead of composing its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from experiment.service.capacity import CapacityPolicy
from experiment.service.target import EarlyEmbedded, ServiceTarget

CHECKPOINTS_SUBDIR = ".embedded-checkpoints"  # the embedded backend's checkpoints, beside the runs


def embedded_checkpoint_dir(runs_dir: Path) -> str:
    """Where the embedded backend of runs under `runs_dir` keeps its checkpoints (resumable across
    processes); the CLI's early-started backend and the flow's service target both use it."""
    return str(runs_dir / CHECKPOINTS_SUBDIR)


@dataclass
class RunConfig:
    backend: str  # the `backend` parameter as given, never with credentials: a re-queued run gets it again
    runs_dir: str | None  # as given (None: $RX_RUNS_DIR or ./runs); the store resolves it
    exposure: str  # the service exposure profile asked for ("embedded" or "production")
    service: ServiceTarget
    capacity: CapacityPolicy
    requeue_count: int = 0  # how many capacity blocks re-queued this run's chain so far
    chain_started_at: str | None = None  # when the first run of a re-queue chain started

    @classmethod
    def compose(cls, backend: str, full_backend: str, runs_dir: str | None, exposure: str,
                requeue_count: int = 0, chain_started_at: str | None = None,
                early_embedded: EarlyEmbedded | None = None) -> RunConfig:
        """The one composition: the service target from `full_backend` (the backend with the credentials
        the environment holds), the capacity policy from the environment. `early_embedded`: the embedded
        backend the CLI started ahead of the run, which the service target takes over."""
        service = ServiceTarget.from_backend(full_backend, exposure=exposure)
        service.early = early_embedded
        return cls(backend=backend, runs_dir=runs_dir, exposure=exposure, service=service,
                   capacity=CapacityPolicy.from_env(), requeue_count=requeue_count, chain_started_at=chain_started_at)

    def keep_checkpoints_beside(self, runs_dir: Path) -> None:
        """The embedded backend keeps its checkpoints beside the run directories (resumable across processes)."""
        self.service.checkpoint_dir = embedded_checkpoint_dir(runs_dir)
