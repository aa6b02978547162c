"""Training-service sessions with a purpose, released when that purpose is done.

The contract asks a run to release probe and setup clients before the paired arms start,
and, on a capacity stop, to release the clients it created. In the SDK a session owns its
clients and `ServiceClient.close()` finishes the session, so each purpose gets its own
session: "setup" (probes, pilots, checks) and "arms" (the paired training clients).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable

import tinker

from experiment.restoration import creation_optimizer_config
from experiment.service import ServiceTarget

if TYPE_CHECKING:
    from experiment.gates import RunContext


def open_session(ctx: RunContext, purpose: str, fork: bool = False) -> ClientSession:
    """A session for one purpose of this run, under its capacity policy, released on a capacity stop."""
    session = ClientSession(ctx.service, purpose, fork=fork, call=ctx.call_service)
    ctx.state.setdefault("sessions", []).append(session)
    return session


def release_sessions(ctx: RunContext) -> bool:
    """Finish every session this run opened (its clients go with it); True when all confirmed."""
    return all([session.close("interrupted") for session in ctx.state.get("sessions", [])])


class ClientSession:
    """One SDK session: creates training/sampling clients and finishes the session on close.

    Client creation goes through `call` (the run's capacity policy): "trainer capacity exhausted"
    is refused at model creation, so that is where a busy service is waited out.
    """

    def __init__(self, service: ServiceTarget, purpose: str, fork: bool = False,
                 call: Callable[[Callable[[], Any]], Any] = lambda fn: fn()):
        self.purpose = purpose
        self.call = call
        self.service_client = service.service_client(fork=fork)
        self.created_models: list[str] = []
        self.closed = False

    def lora_client(self, base_model: str, rank: int, seed: int, requested: dict[str, Any]) -> tinker.TrainingClient:
        client = self.call(lambda: self.service_client.create_lora_training_client(
            base_model=base_model, rank=rank, seed=seed,
            optimizer=creation_optimizer_config(requested),
        ).result())
        self.created_models.append(client.model_id)
        return client

    def client_from_state(self, path: str, requested: dict[str, Any], with_optimizer: bool = False) -> tinker.TrainingClient:
        """A client loaded from a checkpoint: weights only with the requested optimizer, or weights
        plus the checkpoint's own optimizer state (whose family the caller must verify)."""
        if with_optimizer:
            client = self.call(lambda: self.service_client.create_training_client_from_state_with_optimizer(path).result())
        else:
            client = self.call(lambda: self.service_client.create_training_client_from_state(
                path, optimizer=creation_optimizer_config(requested)).result())
        self.created_models.append(client.model_id)
        return client

    def base_sampler(self, base_model: str) -> tinker.SamplingClient:
        return self.call(lambda: self.service_client.create_sampling_client(base_model=base_model).result())

    def sampler_from_path(self, path: str) -> tinker.SamplingClient:
        return self.call(lambda: self.service_client.create_sampling_client(model_path=path).result())

    def close(self, status: str = "success") -> bool:
        """Finish the session (releases every client it created); True when the service confirmed."""
        if self.closed:
            return True
        self.closed = True
        try:
            self.service_client.close(status).result()
            return True
        except Exception:  # the session may already be gone (server restarted, capacity stop)
            return False

    def __enter__(self) -> ClientSession:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close("errored" if exc[0] else "success")


def session_weights_info(session: ClientSession, path: str) -> Any:
    """The service's weights_info for a checkpoint (base model, optimizer, adapter hash if exposed)."""
    with warnings.catch_warnings():
        # tinker 0.38's RestClient() takes no default_headers_overrides; the route through the
        # ServiceClient keeps the Modal headers (see ServiceTarget.served_models).
        warnings.filterwarnings("ignore", message=".*create_rest_client.*", category=FutureWarning)
        rest = session.service_client.create_rest_client()
    return rest.get_weights_info_by_tinker_path(path).result()
