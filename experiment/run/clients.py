"""Training-service sessions with a purpose, released when that purpose is done.

The contract asks a run to release probe and setup clients before the paired arms start,
and, on a capacity stop, to release the clients it created. In the SDK a session owns its
clients and `ServiceClient.close()` finishes the session, so each purpose gets its own
session: "setup" (probes, pilots, checks) and "arms" (the paired training clients).
"""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Any, Callable

import tinker
from tinker.types.optimizer import OptimizerConfigBase

from experiment.service.target import CLOSE_ANSWER_SECONDS, ServiceTarget

if TYPE_CHECKING:
    from experiment.run.context import RunContext


MODEL_KEYS = ("lora_rank", "seed")  # requested at model creation, not optimizer hyperparameters


def creation_optimizer_config(requested: dict[str, Any]) -> OptimizerConfigBase:
    """The optimizer config sent at model creation: family plus its hyperparameters.

    Sending the hyperparameters lets a server that records them report them back, so the
    optimizer check compares real values; a server that ignores them reports only the family
    (then the check lists those keys as not exposed, never as verified).
    """
    fields = {k: v for k, v in requested.items() if k not in ("family", *MODEL_KEYS)}
    return OptimizerConfigBase(type=requested["family"], **fields)


def open_session(ctx: RunContext, purpose: str, fork: bool = False) -> ClientSession:
    """A session for one purpose of this run, under its capacity policy, released on a capacity stop."""
    session = ClientSession(ctx.service, purpose, fork=fork, call=ctx.call_service)
    ctx.state.sessions.append(session)
    return session




def release_sessions(ctx: RunContext) -> bool:
    """Finish every session this run opened (its clients go with it); True when all confirmed."""
    return all([session.close("interrupted") for session in ctx.state.sessions])


class ClientSession:
    """One SDK session: creates training/sampling clients and finishes the session on close.

    Client creation goes through `call` (the run's capacity policy): "trainer capacity exhausted"
    is refused at model creation, so that is where a busy service is waited out.
    """

    def __init__(self, service: ServiceTarget, purpose: str, fork: bool = False,
                 call: Callable[[Callable[[], Any]], Any] = lambda fn: fn()):
        self.purpose = purpose
        self.call = call
        self.service = service
        self.fork = fork
        self.service_client = call(lambda: service.service_client(fork=fork))  # the SDK fetches its config here
        self.created_models: list[str] = []
        self.closed = False

    def lora_client(self, base_model: str, rank: int, seed: int | None,
                    requested: dict[str, Any]) -> tinker.TrainingClient:
        """A fresh LoRA client with the requested optimizer. A service that rejects a per-model
        seed (the production service does) is asked again without one, and that is recorded on
        the service target (`observed["seed_rejected"]`): every arm's proof of a shared initial
        state is then the loaded initialization checkpoint, never the seed."""
        if self.service.observed.get("seed_rejected"):
            seed = None

        def create(with_seed: int | None):
            return self.call(lambda: self.service_client.create_lora_training_client(
                base_model=base_model, rank=rank, seed=with_seed,
                optimizer=creation_optimizer_config(requested),
            ).result())

        try:
            client = create(seed)
        except Exception as err:
            if seed is None or "seed" not in str(err).lower():
                raise
            self.service.observed["seed_rejected"] = f"{type(err).__name__}: {str(err)[:300]}"
            client = create(None)
        self.created_models.append(client.model_id)
        return client

    def client_loaded_from(self, path: str, base_model: str, rank: int, seed: int | None,
                           requested: dict[str, Any]) -> tuple[tinker.TrainingClient, Any]:
        """A fresh client with the requested optimizer that then loads `path` (weights only),
        returned with the service's load response (what it says it loaded): the proof of an
        immutable initialization checkpoint on a service that exposes no adapter hash.
        `create_training_client_from_state` discards that response, so the load is the SDK's
        `load_state` on the new client (deprecated in tinker 0.38 but served; its warning is
        silenced here, once per call)."""
        client = self.lora_client(base_model, rank, seed, requested)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning)
            sdk_logger = logging.getLogger("tinker.lib.public_interfaces.training_client")
            level = sdk_logger.level
            sdk_logger.setLevel(logging.CRITICAL)  # the SDK logs its deprecation notice as an error
            try:
                response = self.call(lambda: client.load_state(path).result())
            finally:
                sdk_logger.setLevel(level)
        return client, response

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
            self.service_client.close(status).result(timeout=CLOSE_ANSWER_SECONDS)
            return True
        except Exception:  # gone (server restarted, capacity stop) or not answering (TimeoutError)
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
    return session.call(lambda: rest.get_weights_info_by_tinker_path(path).result())
