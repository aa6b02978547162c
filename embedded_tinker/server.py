"""The embedded Tinker service: /api/v1/* as the stock tinker 0.38 SDK expects it.

Requests that do work (create_model, forward_backward, optim_step, save/load, asample, ...) return
``{"request_id": ...}`` at once; the SDK then long-polls ``retrieve_future``, which answers HTTP
408 ``try_again`` while the work is pending, the result when done (protobuf for forward_backward
and sample, JSON otherwise) or ``{"error", "category"}`` when it failed.

Each training model has one worker thread that runs its requests one at a time in the SDK's
``seq_id`` order; sampling runs on the batching sampler thread (sampling.py); the HTTP event loop
only decodes, enqueues and waits.

Provenance (where the gates read it). ``get_info`` and ``weights_info`` answer with

    optimizer_config = {"type": <family>, <family config fields>,
                        "adapter_sha256": <hex>, "optimizer_step": <int>,
                        "last_optim_params": <params of the last optim_step or null>}

The SDK keeps these extra keys (``OptimizerConfigBase`` allows extra fields; its other response
models drop unknown fields), so ``training_client.get_info().optimizer_config.adapter_sha256`` and
``rest_client.get_weights_info_by_tinker_path(p).result().optimizer_config.adapter_sha256`` work.
In get_info they describe the model when get_info was answered (the SDK fetches it once, at client
creation); in weights_info they describe the checkpoint. The same keys also appear at the top
level of the raw JSON. Keys in PROVENANCE_KEYS are ignored when a config is sent back to create a
model.
"""

from __future__ import annotations

import asyncio
import ctypes
import heapq
import itertools
import json
import os
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from fastapi import FastAPI, Request
from starlette.requests import ClientDisconnect
from fastapi.responses import JSONResponse, Response

from . import access, rest_api, wire
from .checkpoints import CheckpointError, CheckpointStore, TinkerPath
from .exposure import DEFAULT_EXPOSURE, Exposure, SeedRejected
from .faults import FaultConfig, FaultInjector
from .losses import LossInputError, elementwise_loss, input_names, resolve_config
from .model import (
    REGISTRY,
    BaseModel,
    LoraAdapter,
    LoraConfig,
    UnknownBaseModel,
    load_base_model,
    resolve_base_model,
)
from .optimizers import OptimizerError, create_optimizer
from .results import ResultStore
from .sampling import SampleJob, SamplerWeights, SamplingEngine, SamplingError, SamplingSpec
from .service_profile import ServiceProfile, ServiceSchedule
from .session_time import SessionClock

LONG_POLL_SECONDS = 25.0
# Request size caps: a JSON request of the SDK is a few KiB (a sampling prompt of the longest context
# ~200 KiB). forward_backward bodies, measured (embedded_tinker/request_sizes.py, tinker 0.38): the largest
# batch of the three seed specs at standard scale is one 2,633,648-byte body (selfgen, 128 x 1024 tokens,
# importance_sampling; SFT 64 x 2048 is 2,101,674), and the SDK itself splits a batch into bodies of about
# 5,000,000 bytes (fwdbwd_max_chunk_bytes_count). 16 MiB is 6x the largest and 3x the SDK's chunk, and a
# zstd bomb (decompressed as a stream, stopped at the cap) costs the server at most that much.
MAX_JSON_BODY_BYTES = 8 * 1024 * 1024
MAX_PROTOBUF_BODY_BYTES = 16 * 1024 * 1024
MAX_DECOMPRESSED_BODY_BYTES = 16 * 1024 * 1024  # a zstd body never expands past this
ZSTD_MAX_WINDOW_BYTES = 8 * 1024 * 1024  # a frame asking for a larger window (memory) is refused
PROTOBUF_ENDPOINTS = frozenset({"forward_backward"})
# One sampling request decodes at most this many tokens (num_samples x max_tokens): 64 times the largest
# request of the seed specs (8 samples x 512 tokens); 20000 x 1000 asked the server for about 40 GB.
MAX_SAMPLED_TOKENS_PER_REQUEST = 512 * 512
# Live training models per process, and the memory their adapters and optimizer state may take together
# (a rank-32 adapter of tiny-arith is a few MiB with its optimizer state; 16 rank-1024 models took 2.4 GB).
# A session's models are freed when it finishes (sessions/{id}/finish: ServiceClient.close()).
MAX_LIVE_MODELS = 64
MAX_LIVE_MODEL_BYTES = 1024 * 1024 * 1024
PYQWEST_ENV = "EMBEDDED_TINKER_CLIENT_PYQWEST"  # "0": tell SDK clients to use plain httpx (client/config)
RESULT_SWEEP_SECONDS = 10.0  # how often unretrieved results are expired (results.py)
FINISH_JOIN_SECONDS = 5.0  # a finished session's model may first end the request it is running
PROVENANCE_KEYS = ("adapter_sha256", "optimizer_step", "last_optim_params")
PROTOBUF = "application/x-protobuf"


class UserError(ValueError):
    """The request cannot be served as sent (reported with category "user")."""


class RequestTooLarge(UserError):
    """A request body (or its decompressed form) past the caps; answered 413."""


class UnsupportedEncoding(UserError):
    """A content-encoding this server cannot decode; answered 415."""


class RequestBody(dict):
    """A JSON request object whose missing or mistyped fields are the client's error (HTTP 400), not a
    server crash: `body["x"]` of a missing field raises UserError naming it."""

    def __missing__(self, key: str) -> Any:
        raise UserError(f"request field {key!r} is missing")

    def integer(self, key: str, default: int | None = None) -> int:
        value = self[key] if default is None or key in self else default
        if isinstance(value, bool) or not isinstance(value, int):
            raise UserError(f"request field {key!r} must be an integer (got {_preview(value)})")
        return value

    def text(self, key: str) -> str:
        value = self[key]
        if not isinstance(value, str):
            raise UserError(f"request field {key!r} must be a string (got {_preview(value)})")
        return value


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def decompress_zstd(body: bytes, limit: int | None = None) -> bytes:
    """A zstd body decompressed as a stream, never past `limit` bytes (default MAX_DECOMPRESSED_BODY_BYTES;
    RequestTooLarge: a decompression bomb)."""
    limit = MAX_DECOMPRESSED_BODY_BYTES if limit is None else limit
    try:
        import zstandard
    except ImportError:
        raise UnsupportedEncoding("content-encoding zstd is not supported by this server (no zstandard module); "
                                  "send the body uncompressed") from None
    import io

    chunks, size = [], 0
    try:
        decompressor = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW_BYTES)
        with decompressor.stream_reader(io.BytesIO(body)) as reader:
            while chunk := reader.read(1024 * 1024):
                size += len(chunk)
                if size > limit:
                    raise RequestTooLarge(f"the zstd body expands past {limit} bytes; the cap is {limit}")
                chunks.append(chunk)
    except zstandard.ZstdError as error:
        raise UserError(f"the zstd body is not valid zstd: {error}") from None
    return b"".join(chunks)


class CapacityExhausted(RuntimeError):
    """Injected fault: no trainer available (reported with category "server")."""


USER_ERRORS = (
    UserError,
    LossInputError,
    OptimizerError,
    CheckpointError,
    SamplingError,
    UnknownBaseModel,
    wire.WireError,
    SeedRejected,
)


def error_status(error: BaseException) -> int:
    """The HTTP status of a request that failed with `error` (USER_ERRORS only)."""
    return 413 if isinstance(error, RequestTooLarge) else 415 if isinstance(error, UnsupportedEncoding) else 400


def error_payload(error: BaseException) -> dict:
    if isinstance(error, USER_ERRORS):
        return {"error": str(error), "category": "user"}
    return {"error": f"{type(error).__name__}: {error}", "category": "server"}


class OrderedWorker:
    """Runs one training model's requests one at a time, in seq_id order.

    The SDK numbers a model's requests 1, 2, 3, ... and may send parallel forward_backward chunks
    out of order. A request whose predecessor has not arrived waits for it up to
    GAP_WAIT_SECONDS, then runs anyway (the predecessor may never come)."""

    GAP_WAIT_SECONDS = 2.0

    def __init__(self, name: str, lock: threading.Lock):
        self._lock = lock  # held while a request runs; readers (get_info) take it too
        self._pending: list[tuple[int, int, Callable[[], Any], Future]] = []
        self._arrivals = itertools.count()
        self._cond = threading.Condition()
        self._last_seq_id = 0
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=f"worker-{name}", daemon=True)
        self._thread.start()

    def submit(self, seq_id: int | None, work: Callable[[], Any]) -> Future:
        future: Future = Future()
        with self._cond:
            order = self._last_seq_id + 1 if seq_id is None else seq_id
            heapq.heappush(self._pending, (order, next(self._arrivals), work, future))
            self._cond.notify()
        return future

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            for _, _, _, future in self._pending:
                future.set_exception(UserError("the server stopped before this request ran"))
            self._pending.clear()
            self._cond.notify()

    def join(self, timeout: float) -> None:
        """Wait (up to `timeout`) for a stopped worker to finish the request it was running."""
        self._thread.join(timeout)

    def _take_next(self):
        with self._cond:
            gap_started = None
            while not self._stopped:
                if self._pending and self._pending[0][0] <= self._last_seq_id + 1:
                    break
                if self._pending:
                    gap_started = gap_started or time.monotonic()
                    remaining = self.GAP_WAIT_SECONDS - (time.monotonic() - gap_started)
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining)
                else:
                    self._cond.wait()
            if self._stopped:
                return None
            seq_id, _, work, future = heapq.heappop(self._pending)
            self._last_seq_id = max(self._last_seq_id, seq_id)
            return work, future

    def _run(self) -> None:
        while (item := self._take_next()) is not None:
            work, future = item
            try:
                with self._lock:
                    result = work()
            except BaseException as error:  # noqa: BLE001 - delivered through the future
                future.set_exception(error)
            else:
                future.set_result(result)


@dataclass
class TrainingModel:
    model_id: str
    base: BaseModel
    lora: LoraConfig
    adapter: LoraAdapter
    optimizer: Any  # an optimizers.OPTIMIZER_FAMILIES instance
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_optim_params: dict | None = None
    owner: str | None = None  # the client (access.py) that created it
    worker: OrderedWorker = field(init=False)

    def __post_init__(self):
        self.worker = OrderedWorker(self.model_id, self.lock)

    def memory_bytes(self) -> int:
        return model_memory_bytes(self.base, self.lora)

    def optimizer_report(self) -> dict:
        """Family, config and provenance from the server's own state (see module doc)."""
        return {
            **self.optimizer.config,
            "adapter_sha256": self.adapter.sha256(),
            "optimizer_step": self.optimizer.steps_taken,
            "last_optim_params": self.last_optim_params,
        }


@dataclass
class SamplingSession:
    sampling_session_id: str
    base_model: str
    model_path: str | None
    weights: SamplerWeights
    owner: str | None = None  # the client (access.py) that created it


def model_memory_bytes(base: BaseModel, lora: LoraConfig) -> int:
    """What a training model holds beyond the shared base weights, known before it is made: four adapter-sized
    float32 copies (weights, gradients, two Adam moments)."""
    adapter = sum(lora.rank * (linear.in_features + linear.out_features)
                  for name, linear in base.linears.items() if lora.targets(name))
    return 4 * 4 * adapter


def _strip_provenance(config: dict | None) -> dict:
    config = dict(config or {"type": "adamw"})
    return {k: v for k, v in config.items() if k not in PROVENANCE_KEYS}


def _max_context_length(name: str) -> int | None:
    config_file = REGISTRY[name].checkpoint_dir / "config.json"
    if not config_file.is_file():
        return None
    return json.loads(config_file.read_text()).get("max_position_embeddings")


class EmbeddedService:
    """All server state and operations; the FastAPI routes below are thin wrappers."""

    def __init__(
        self, checkpoint_dir: str | Path, faults: FaultConfig | None = None, exposure: str = DEFAULT_EXPOSURE,
        profile: ServiceProfile | None = None, api_keys: tuple[str, ...] | None = None,
    ):
        self.api_keys = tuple(api_keys) if api_keys else access.configured_keys()  # access.py
        self.checkpoints = CheckpointStore(checkpoint_dir)
        self.exposure = Exposure(exposure)  # exposure.py: what clients are shown
        self.runs = rest_api.RunRegistry(self.checkpoints.root)  # training-run records (rest_api.py)
        self.faults = FaultInjector(faults)
        self.busy_clock = BusyClock()  # measured by the ExposureAndFaults middleware
        self.schedule = ServiceSchedule(profile)  # service_profile.py: per-call service time (None: none)
        self.session_time = SessionClock()  # session_time.py: each session's calls in service, as measured here
        self.sampler = SamplingEngine()
        self.executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="embedded-setup")
        self.sessions: dict[str, dict] = {}
        self.models: dict[str, TrainingModel] = {}
        self.sampling_sessions: dict[str, SamplingSession] = {}
        self.results = ResultStore()  # results.py: held until retrieved, unretrieved ones expire
        self._sampler_weights_cache: dict[str, SamplerWeights] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        threading.Thread(target=self._sweep_results, name="embedded-result-sweeper", daemon=True).start()

    def _sweep_results(self) -> None:
        while not self._stopped.wait(RESULT_SWEEP_SECONDS):
            expired = self.results.expired
            self.results.sweep()
            if self.results.expired != expired:
                release_freed_memory()

    # ------------------------------------------------------------------ futures
    def _register(
        self, request_id: str, start: Callable[[], Future], lane: str | None = None, kind: str = "", units: int = 1
    ) -> dict:
        """Start work once per request_id (a retried submission gets the same future). With a service
        profile, the future is held until the call's service time of `kind` on `lane` has passed. The call counts
        as in service for its lane's session until that future is done (session_time.py)."""

        def begin() -> Future:
            work = start()
            return self.session_time.track(lane, self.schedule.hold(lane, kind, units, work) if lane else work)

        if not self.results.register(request_id, access.current_client(), begin):
            raise UserError(f"request_id {request_id!r} belongs to another client")
        return {"request_id": request_id}

    async def retrieve(self, request_id: str) -> Response:
        future = self.results.get(request_id, access.current_client())
        if future is None:
            return JSONResponse(
                {"error": f"unknown request_id {request_id!r} (never made, another client's, or expired "
                 "unretrieved)", "category": "user"}, status_code=404
            )
        await asyncio.wait([asyncio.wrap_future(future)], timeout=LONG_POLL_SECONDS)
        if not future.done():
            return JSONResponse(
                {"type": "try_again", "request_id": request_id, "queue_state": "active"}, status_code=408
            )
        self.results.retrieved(request_id)
        error = future.exception()
        if error is not None:
            return JSONResponse(error_payload(error))
        result = future.result()
        if isinstance(result, bytes):
            return Response(content=result, media_type=PROTOBUF)
        return json_result(result)

    # ------------------------------------------------------------------ sessions
    def touch_session(self, session_id: str) -> dict:
        """Sessions are bookkeeping only; unknown ids (e.g. after a restart) are adopted, by the client that
        first names them (access.py)."""
        with self._lock:
            return self.sessions.setdefault(
                session_id, {"finished": False, "created": time.time(), "owner": access.current_client()})

    def create_session(self) -> str:
        session_id = f"sess-{uuid.uuid4().hex[:12]}"
        self.touch_session(session_id)
        return session_id

    def finish_session(self, session_id: str) -> dict:
        """The client is done with the session (ServiceClient.close()): its training models and sampling
        sessions are freed; their saved checkpoints stay. Another client's session is left alone."""
        session = self.touch_session(session_id)
        if not access.may_access(session["owner"]):
            return {"freed_models": 0}
        session["finished"] = True
        prefix = f"{session_id}:train:"
        with self._lock:
            models = [self.models.pop(model_id) for model_id in list(self.models) if model_id.startswith(prefix)]
            freed = len(models)
            for sampling_id in [i for i in self.sampling_sessions if i.startswith(f"sample-{session_id}-")]:
                del self.sampling_sessions[sampling_id]
        for model in models:
            model.worker.stop()
        for model in models:
            model.worker.join(timeout=FINISH_JOIN_SECONDS)
        del models
        release_freed_memory()
        return {"freed_models": freed}

    # ------------------------------------------------------------------ models
    def _new_training_model(
        self, model_id: str, base_model: str, lora: LoraConfig, optimizer_config: dict, owner: str | None
    ) -> TrainingModel:
        if self.faults.capacity_exhausted():
            raise CapacityExhausted(
                "trainer capacity exhausted: no trainer is available for a new model, retry later"
            )
        base = load_base_model(base_model)
        self._check_model_capacity(model_memory_bytes(base, lora))
        adapter = LoraAdapter(base, lora)
        optimizer = create_optimizer(_strip_provenance(optimizer_config), adapter.parameters())
        return TrainingModel(model_id=model_id, base=base, lora=lora, adapter=adapter, optimizer=optimizer,
                             owner=owner)

    def _check_model_capacity(self, new_bytes: int) -> None:
        """Refuse a model past MAX_LIVE_MODELS or MAX_LIVE_MODEL_BYTES (the live models' own memory), before any of
        it is allocated."""
        with self._lock:  # counted, not listed: a list here would live on in the refusal's traceback
            live, held = len(self.models), sum(m.memory_bytes() for m in self.models.values())
        if live >= MAX_LIVE_MODELS or held + new_bytes > MAX_LIVE_MODEL_BYTES:
            raise UserError(
                f"this server holds {live} training models ({held / 2**20:.0f} MiB of adapters and optimizer "
                f"state); a new one of {new_bytes / 2**20:.0f} MiB would pass its limit of "
                f"{MAX_LIVE_MODELS} models or {MAX_LIVE_MODEL_BYTES / 2**20:.0f} MiB: close a ServiceClient "
                "(sessions/{id}/finish) to free its models"
            )

    def _claim_model_id(self, model_id: str, owner: str | None) -> None:
        """Refuse a model id that is no path component (its run record is written under it: a session id of
        "../x" wrote outside the checkpoint directory) or whose live model or run record is another client's."""
        if not rest_api.valid_component(model_id):
            raise UserError(f"invalid session id in model id {model_id!r}: use letters, digits and ._:=+-")
        live = self.models.get(model_id)
        if (live is not None and live.owner != owner) or not access.may_access(self.runs.owner(model_id)):
            raise UserError(f"model id {model_id!r} belongs to another client: use a session of your own")

    def create_model(self, body: dict) -> dict:
        body = RequestBody(body)
        session_id, model_seq_id = body.text("session_id"), body.integer("model_seq_id")
        self.touch_session(session_id)
        model_id = f"{session_id}:train:{model_seq_id}"
        owner = access.current_client()
        self._claim_model_id(model_id, owner)
        resolve_base_model(body.text("base_model"))  # unknown names: HTTP 400 naming the served models
        self.exposure.check_lora_config(body.get("lora_config"))
        try:
            lora = LoraConfig.from_request(body.get("lora_config"))
        except ValueError as error:
            raise UserError(str(error)) from error
        optimizer_config = self.exposure.declared_optimizer(_strip_provenance(body.get("optimizer_config")))
        create_optimizer(optimizer_config, [])  # refuse unknown families before queueing work

        def create() -> dict:
            with self._lock:
                if model_id in self.models:
                    return {"model_id": model_id, "type": "create_model"}
            model = self._new_training_model(model_id, body["base_model"], lora, optimizer_config, owner)
            self.runs.created(model_id, model.base.name, lora.to_json(), body.get("user_metadata"), owner)
            with self._lock:
                self.models[model_id] = model
            return {"model_id": model_id, "type": "create_model"}

        return self._register(f"{model_id}:create", lambda: self.executor.submit(create), model_id, "create_model")

    def model(self, model_id: str) -> TrainingModel:
        if not isinstance(model_id, str):
            raise UserError(f"request field 'model_id' must be a string (got {_preview(model_id)})")
        model = self.models.get(model_id)
        if model is None or not access.may_access(model.owner):
            raise UserError(
                f"unknown model_id {model_id!r} (models live until the server stops; create or load one)"
            )
        return model

    def get_info(self, model_id: str) -> dict:
        model = self.model(model_id)
        with model.lock:
            report = model.optimizer_report()
        return self.exposure.get_info({
            "type": "get_info",
            "model_id": model_id,
            "model_data": {
                "arch": "qwen3",
                "model_name": model.base.name,
                "tokenizer_id": model.base.tokenizer_dir,
            },
            "model_name": model.base.name,
            "is_lora": True,
            "lora_rank": model.lora.rank,
            "lora_config": model.lora.to_json(),
            "optimizer_config": report,
            **{key: report[key] for key in PROVENANCE_KEYS},
        }, PROVENANCE_KEYS)

    def _submit_to_model(
        self, model_id: str, seq_id: int | None, kind: str, work: Callable[[TrainingModel], Any],
        cost: tuple[str, int],
    ) -> dict:
        """`cost`: the call's kind and sequences for the service profile (service_profile.CALL_KINDS);
        every caller states it (a missing one made a profiled export an HTTP 500)."""
        model = self.model(model_id)
        if seq_id is not None and (isinstance(seq_id, bool) or not isinstance(seq_id, int)):
            raise UserError(f"request field 'seq_id' must be an integer (got {_preview(seq_id)})")
        self.runs.touch(model_id)
        request_id = f"{model_id}:{kind}:{seq_id}"
        return self._register(request_id, lambda: model.worker.submit(seq_id, lambda: work(model)), model_id, *cost)

    # ------------------------------------------------------------------ training
    def forward_backward(self, request: wire.ForwardBackwardRequest) -> dict:
        config = resolve_config(request.loss_fn, request.loss_fn_config)
        vocab_size = self.model(request.model_id).base.config.vocab_size
        if not request.data:
            raise UserError("forward_backward needs at least one datum")
        for index, datum in enumerate(request.data):
            if not datum.tokens:
                raise UserError(f"datum {index}: model_input is empty")
            if min(datum.tokens) < 0 or max(datum.tokens) >= vocab_size:
                raise UserError(f"datum {index}: model_input has token ids outside [0, {vocab_size})")
            for name in input_names(request.loss_fn):
                if name not in datum.loss_fn_inputs:
                    raise UserError(f"datum {index}: {request.loss_fn} needs loss_fn_inputs[{name!r}]")
            targets = datum.loss_fn_inputs["target_tokens"]
            if targets.shape != (len(datum.tokens),):
                raise UserError(
                    f"datum {index}: target_tokens has shape {targets.shape}, "
                    f"expected ({len(datum.tokens)},) "
                    "(one target per input token)"
                )
            if targets.min() < 0 or targets.max() >= vocab_size:
                raise UserError(f"datum {index}: target_tokens outside [0, {vocab_size})")

        def run(model: TrainingModel) -> bytes:
            return _forward_backward(model, request, config)

        kind = "forward" if request.forward_only else "forward_backward"
        return self._submit_to_model(request.model_id, request.seq_id, kind, run, (kind, len(request.data)))

    def optim_step(self, body: dict) -> dict:
        family, params = self.exposure.optim_params(body)

        def run(model: TrainingModel) -> dict:
            if family != model.optimizer.family:
                raise UserError(
                    f"optimizer params {family!r} do not match the model's optimizer {model.optimizer.config}"
                )
            refuse_non_finite_gradients(model)
            metrics = model.optimizer.step(params)
            model.adapter.zero_grad()
            model.last_optim_params = {"type": family, **{k: v for k, v in params.items() if k != "type"}}
            return {"type": "optim_step", "metrics": metrics}

        return self._submit_to_model(body["model_id"], body.get("seq_id"), "optim_step", run, ("optim_step", 1))

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint_metadata(self, model: TrainingModel) -> dict:
        return {
            "base_model": model.base.name,
            "lora_config": model.lora.to_json(),
            "optimizer": dict(model.optimizer.config),
            "optimizer_step": model.optimizer.steps_taken,
            "last_optim_params": model.last_optim_params,
            "created_at": time.time(),
        }

    def save_weights(self, body: dict) -> dict:
        name = body.get("path") or f"step-{body.get('seq_id')}"

        def run(model: TrainingModel) -> dict:
            path = TinkerPath(model.model_id, "weights", name)
            self.checkpoints.save(
                path,
                model.adapter.state_dict(),
                self._checkpoint_metadata(model),
                model.optimizer.state_dict(),
            )
            return {"path": str(path), "type": "save_weights"}

        return self._submit_to_model(body["model_id"], body.get("seq_id"), "save_weights", run, ("save_checkpoint", 1))

    def save_weights_for_sampler(self, body: dict) -> dict:
        name, sampling_seq_id = body.get("path"), body.get("sampling_session_seq_id")
        if name is None and sampling_seq_id is None:
            raise UserError("save_weights_for_sampler needs a path (name) or a sampling_session_seq_id")

        def run(model: TrainingModel) -> dict:
            if name is not None:
                path = TinkerPath(model.model_id, "sampler_weights", name)
                self.checkpoints.save(
                    path, model.adapter.state_dict(), self._checkpoint_metadata(model), None
                )
                return {"path": str(path), "type": "save_weights_for_sampler"}
            snapshot = model.adapter.frozen_copy()
            weights = SamplerWeights(model.base, snapshot, f"{model.base.name}@{snapshot.sha256()}")
            session_id = model.model_id.split(":train:")[0]
            sampling_session_id = f"sample-{session_id}-{sampling_seq_id}"
            with self._lock:
                self.sampling_sessions[sampling_session_id] = SamplingSession(
                    sampling_session_id, model.base.name, None, weights, model.owner
                )
            return {"sampling_session_id": sampling_session_id, "type": "save_weights_for_sampler"}

        cost = ("save_checkpoint" if name is not None else "sampler_weights", 1)
        return self._submit_to_model(body["model_id"], body.get("seq_id"), "save_weights_for_sampler", run, cost)

    def load_weights(self, body: dict) -> dict:
        path = self._readable(TinkerPath.parse(body["path"]))
        with_optimizer = bool(body.get("optimizer"))
        metadata = self.checkpoints.metadata(path)  # fail fast (user error) on a missing checkpoint
        if with_optimizer and path.kind != "weights":
            raise UserError(f"{path} is a sampler checkpoint and holds no optimizer state")

        if body.get("model_id"):  # legacy form: load into an existing model, in seq_id order

            def run(model: TrainingModel) -> dict:
                checkpoint = self.checkpoints.load(path, with_optimizer_state=with_optimizer)
                saved_lora = LoraConfig(**checkpoint.metadata["lora_config"])
                saved_base = checkpoint.metadata["base_model"]
                if not saved_lora.same_layout(model.lora) or saved_base != model.base.name:
                    raise UserError(f"{path} ({saved_base}, {saved_lora}) does not fit this model")
                model.adapter.load_state_dict(checkpoint.adapter_tensors)
                model.adapter.zero_grad()
                if with_optimizer:
                    optimizer = create_optimizer(checkpoint.metadata["optimizer"], model.adapter.parameters())
                    optimizer.load_state_dict(checkpoint.optimizer_state)
                    model.optimizer = optimizer
                    model.last_optim_params = checkpoint.metadata.get("last_optim_params")
                return {"type": "load_weights", "path": str(path), "model_id": model.model_id}

            return self._submit_to_model(
                body["model_id"], body.get("seq_id"), "load_weights", run, ("load_checkpoint", 1)
            )

        # create-from-checkpoint form: a new model "{session_id}:train:{model_seq_id}"
        body = RequestBody(body)
        session_id, model_seq_id = body.text("session_id"), body.integer("model_seq_id")
        self.touch_session(session_id)
        model_id = f"{session_id}:train:{model_seq_id}"
        owner = access.current_client()
        self._claim_model_id(model_id, owner)
        base_model = body.get("base_model") or metadata["base_model"]
        resolve_base_model(base_model)
        lora = LoraConfig(**metadata["lora_config"])
        optimizer_config = (
            metadata["optimizer"]
            if with_optimizer
            else self.exposure.declared_optimizer(_strip_provenance(body.get("optimizer_config")))
        )
        create_optimizer(optimizer_config, [])

        def create() -> dict:
            with self._lock:
                if model_id in self.models:
                    return {"type": "load_weights", "path": str(path), "model_id": model_id}
            checkpoint = self.checkpoints.load(path, with_optimizer_state=with_optimizer)
            model = self._new_training_model(model_id, base_model, lora, optimizer_config, owner)
            self.runs.created(model_id, model.base.name, lora.to_json(), body.get("user_metadata"), owner)
            model.adapter.load_state_dict(checkpoint.adapter_tensors)
            if with_optimizer:
                model.optimizer.load_state_dict(checkpoint.optimizer_state)
                model.last_optim_params = checkpoint.metadata.get("last_optim_params")
            with self._lock:
                self.models[model_id] = model
            return {"type": "load_weights", "path": str(path), "model_id": model_id}

        return self._register(
            f"{model_id}:load", lambda: self.executor.submit(create), model_id, "create_from_checkpoint"
        )

    def _readable(self, path: TinkerPath) -> TinkerPath:
        """`path` when the current client may read it; another client's checkpoint does not exist for it."""
        if not access.may_access(self.runs.owner(path.model_id)):
            raise CheckpointError(f"no checkpoint at {path}")
        return path

    def weights_info(self, tinker_path: str) -> dict:
        metadata = self.checkpoints.metadata(self._readable(TinkerPath.parse(tinker_path)))
        lora = metadata["lora_config"]
        report = {
            **metadata["optimizer"],
            "adapter_sha256": metadata["adapter_sha256"],
            "optimizer_step": metadata["optimizer_step"],
            "last_optim_params": metadata.get("last_optim_params"),
        }
        return self.exposure.weights_info({
            "base_model": metadata["base_model"],
            "optimizer_config": report,
            "is_lora": True,
            "lora_rank": lora["rank"],
            "train_unembed": lora["train_unembed"],
            "train_mlp": lora["train_mlp"],
            "train_attn": lora["train_attn"],
            "checkpoint": metadata,
            **{key: report[key] for key in PROVENANCE_KEYS},
        })

    # ------------------------------------------------------------------ sampling
    def sampler_weights_for_path(self, model_path: str) -> SamplerWeights:
        """The exact weights of a checkpoint (verified against its recorded adapter_sha256)."""
        path = self._readable(TinkerPath.parse(model_path))
        with self._lock:
            cached = self._sampler_weights_cache.get(str(path))
        if cached is not None:
            return cached
        checkpoint = self.checkpoints.load(path)
        metadata = checkpoint.metadata
        base = load_base_model(metadata["base_model"])
        adapter = LoraAdapter(base, LoraConfig(**metadata["lora_config"]))
        adapter.load_state_dict(checkpoint.adapter_tensors)
        adapter = adapter.frozen_copy()
        if adapter.sha256() != metadata["adapter_sha256"]:
            raise CheckpointError(f"{path}: adapter bytes do not match the recorded adapter_sha256")
        weights = SamplerWeights(base, adapter, f"{base.name}@{metadata['adapter_sha256']}")
        with self._lock:
            self._sampler_weights_cache[str(path)] = weights
        return weights

    def base_sampler_weights(self, base_model: str) -> SamplerWeights:
        base = load_base_model(base_model)
        return SamplerWeights(base, None, f"{base.name}@base")

    def create_sampling_session(self, body: dict) -> dict:
        self.touch_session(body["session_id"])
        sampling_session_id = f"sample-{body['session_id']}-{body['sampling_session_seq_id']}"
        owner = access.current_client()
        existing = self.sampling_sessions.get(sampling_session_id)
        if existing is not None and existing.owner != owner:
            raise UserError(f"sampling session {sampling_session_id!r} belongs to another client")
        if body.get("model_path"):
            weights = self.sampler_weights_for_path(body["model_path"])
            self.schedule.hold_here(sampling_session_id, "sampler_load")  # in a worker thread (the route)
        elif body.get("base_model"):
            weights = self.base_sampler_weights(body["base_model"])  # the base model is always served
        else:
            raise UserError("create_sampling_session needs model_path or base_model")
        with self._lock:
            self.sampling_sessions[sampling_session_id] = SamplingSession(
                sampling_session_id, weights.base.name, body.get("model_path"), weights, owner
            )
        return {"type": "create_sampling_session", "sampling_session_id": sampling_session_id}

    def sampling_session(self, sampling_session_id: str) -> SamplingSession:
        session = self.sampling_sessions.get(sampling_session_id)
        if session is None or not access.may_access(session.owner):
            raise UserError(f"unknown sampling session {sampling_session_id!r}")
        return session

    def asample(self, body: dict) -> dict:
        if body.get("sampling_session_id"):
            weights = self.sampling_session(body["sampling_session_id"]).weights
            request_id = f"{body['sampling_session_id']}:{body.get('seq_id')}"
            lane = body["sampling_session_id"]
        elif body.get("model_path"):
            weights = self.sampler_weights_for_path(body["model_path"])
            request_id = f"sample-{uuid.uuid4().hex[:12]}"
            lane = f"path:{body['model_path']}"
        elif body.get("base_model"):
            weights = self.base_sampler_weights(body["base_model"])
            request_id = f"sample-{uuid.uuid4().hex[:12]}"
            lane = f"base:{body['base_model']}"
        else:
            raise UserError("asample needs sampling_session_id, model_path or base_model")
        for unsupported in ("topk_prompt_logprobs", "topk_sample_logprobs", "prompt_alt_tokens_k"):
            if body.get(unsupported):
                raise UserError(f"{unsupported} is not supported by the embedded backend")
        if body.get("target_prompt_logprobs") is not None:
            raise UserError("target_prompt_logprobs is not supported by the embedded backend")
        prompt = _prompt_tokens(body["prompt"])
        if not prompt:
            raise UserError("the prompt is empty")
        vocab_size = weights.base.config.vocab_size
        if min(prompt) < 0 or max(prompt) >= vocab_size:
            raise UserError(f"prompt has token ids outside [0, {vocab_size})")
        if len(prompt) >= weights.base.max_context_length:
            raise UserError(
                f"prompt of {len(prompt)} tokens does not fit the "
                f"{weights.base.max_context_length}-token context"
            )
        num_samples = RequestBody(body).integer("num_samples", default=1)
        if num_samples < 1:
            raise UserError("num_samples must be >= 1")
        spec = SamplingSpec.from_request(body.get("sampling_params") or {}, weights.base)
        if num_samples * spec.max_tokens > MAX_SAMPLED_TOKENS_PER_REQUEST:
            raise UserError(
                f"num_samples x max_tokens = {num_samples} x {spec.max_tokens} passes this server's limit of "
                f"{MAX_SAMPLED_TOKENS_PER_REQUEST} sampled tokens per request: split it into smaller requests"
            )
        job = SampleJob(
            weights=weights,
            prompt=prompt,
            num_samples=num_samples,
            spec=spec,
            want_prompt_logprobs=bool(body.get("prompt_logprobs")),
            prompt_logprobs_last_n=body.get("prompt_logprobs_last_n"),
        )

        def start() -> Future:
            done: Future = Future()

            def encode(sampled: Future) -> None:
                if sampled.exception() is not None:
                    done.set_exception(sampled.exception())
                else:
                    result = sampled.result()
                    done.set_result(wire.encode_sample_response(result.sequences, result.prompt_logprobs))

            self.sampler.submit(job).add_done_callback(encode)
            return done

        # greedy answers and prompt scoring (compute_logprobs: prompt logprobs, one token) cost a greedy
        # item each; a sampled rollout costs a rollout (docs/service-profile.md)
        scoring = job.want_prompt_logprobs and job.spec.max_tokens <= 1
        kind = "sample_greedy" if job.spec.temperature == 0 or scoring else "sample"
        response = self._register(request_id, start, lane, kind, num_samples)
        response["sample_sequence_ids"] = [f"{request_id}:{i}" for i in range(num_samples)]
        return response

    def stop(self) -> None:
        self._stopped.set()
        self.sampler.stop()
        for model in list(self.models.values()):
            model.worker.stop()
        self.executor.shutdown(wait=False, cancel_futures=True)


def release_freed_memory() -> None:
    """Give freed heap memory back to the system (glibc's malloc_trim; nothing elsewhere). Freed models' tensors go
    back to malloc's arenas, which glibc keeps: without this, finishing a session with three rank-1024 models
    left the process at 656 MiB instead of 350 MiB (measured in process)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.malloc_trim(0)


def refuse_non_finite_gradients(model: TrainingModel) -> None:
    """UserError (the optim_step future fails with category "user", retrievable as any result) when the accumulated
    gradients hold a NaN or an infinity: the step is not taken and the gradients are cleared, so the adapter and the
    optimizer state stay finite. Before, the step ran and its NaN grad_norm made the answer an HTTP 500."""
    if not all(bool(torch.isfinite(p.grad).all()) for p in model.adapter.parameters() if p.grad is not None):
        model.adapter.zero_grad()
        raise UserError("the accumulated gradients are not finite (NaN or infinity; e.g. a NaN advantage or logprob "
                        "in forward_backward): the step was not taken and the gradients were cleared")


def json_result(result: Any) -> Response:
    """A JSON result as retrieve_future answers it; one that JSON cannot carry (a non-finite float) is answered as
    a failed request (category "server"), never an HTTP 500."""
    try:
        return JSONResponse(result)
    except ValueError as error:
        return JSONResponse({"error": f"the result cannot be sent as JSON: {error}", "category": "server"})


def _prompt_tokens(prompt: dict) -> list[int]:
    tokens: list[int] = []
    for chunk in prompt.get("chunks", []):
        if chunk.get("type", "encoded_text") != "encoded_text":
            raise UserError(f"only encoded_text prompt chunks are supported, got {chunk.get('type')!r}")
        tokens.extend(int(t) for t in chunk["tokens"])
    return tokens


def _forward_backward(model: TrainingModel, request: wire.ForwardBackwardRequest, config: dict) -> bytes:
    inputs = [datum.tokens for datum in request.data]
    targets = [datum.loss_fn_inputs["target_tokens"].astype("int64").tolist() for datum in request.data]
    float_inputs = [
        {
            name: torch.from_numpy(array.astype("float32"))
            for name, array in datum.loss_fn_inputs.items()
            if name != "target_tokens"
        }
        for datum in request.data
    ]
    with torch.set_grad_enabled(not request.forward_only):
        logprobs = model.base.target_logprobs(inputs, targets, model.adapter)
        losses = [
            elementwise_loss(request.loss_fn, lp, datum_inputs, config)
            for lp, datum_inputs in zip(logprobs, float_inputs, strict=True)
        ]
        total = torch.stack([loss.sum() for loss in losses]).sum()
        if not request.forward_only:
            total.backward()
    return wire.encode_forward_backward_output(
        {"logprobs": logprobs, "elementwise_loss": losses},
        {"loss:sum": total.item()},
        num_datums=len(request.data),
    )


# ---------------------------------------------------------------------- HTTP


class BusyClock:
    """How long at least one API call was in flight, and how many calls there were (event loop only)."""

    def __init__(self):
        self.in_flight = 0
        self.max_in_flight = 0  # the most API calls in flight at once so far
        self.since = 0.0
        self.seconds = 0.0
        self.calls = 0

    def begin(self) -> None:
        self.calls += 1
        if self.in_flight == 0:
            self.since = time.monotonic()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def end(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self.seconds += time.monotonic() - self.since

    def report(self) -> dict:
        """Busy seconds so far (an interval still open counts up to now) and API calls counted."""
        open_interval = time.monotonic() - self.since if self.in_flight else 0.0
        return {"busy_seconds": round(self.seconds + open_interval, 6), "api_calls": self.calls,
                "max_in_flight": self.max_in_flight}


def capped_receive(receive, limit: int, endpoint: str):
    """`receive` that raises RequestTooLarge once a body (chunked, or longer than it declared) passes `limit`."""
    seen = 0

    async def counted():
        nonlocal seen
        message = await receive()
        if message.get("type") == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise RequestTooLarge(f"request body past {limit} bytes; the cap for {endpoint} is {limit}")
        return message

    return counted


class ExposureAndFaults:
    """ASGI middleware in front of every route: a route the production service lacks answers 404
    (exposure "production"), a request access.py refuses (Host, Origin, Content-Type, key) is answered
    before any route runs, the request's client is made current for the route (access.serve_as), and the
    injected latency and 429/503 faults (faults.py) are applied.

    A plain ASGI callable rather than ``@app.middleware("http")``: that wrapper runs each request
    through extra tasks and memory streams, which costs more than the routes of a small request.

    It also measures how long the service was busy for its clients: the time during which at least
    one API call (background calls excepted: healthz, heartbeats, telemetry, client config) was in
    flight, injected latency and long polls for pending work included. ``healthz`` reports it as
    ``busy_seconds`` with ``api_calls`` and ``max_in_flight`` (the most calls in flight at once); a
    client's wall time minus busy_seconds is time spent elsewhere."""

    BACKGROUND = frozenset({"healthz", "session_heartbeat", "telemetry", "client", "service_time"})

    def __init__(self, app, service: EmbeddedService):
        self.app = app
        self.service = service
        config = service.faults.config
        self.injecting = bool(config.latency_ms or config.rate_429 or config.rate_503
                              or config.stop_answering_after is not None)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        if self.service.exposure.hides(path):
            return await JSONResponse({"detail": "Not Found"}, status_code=404)(scope, receive, send)
        endpoint = path[len("/api/v1/"):].split("/", 1)[0] if path.startswith("/api/v1/") else ""
        if refused := access.refusal(scope, endpoint, self.service.api_keys, PROTOBUF_ENDPOINTS):
            status, message = refused
            return await JSONResponse({"error": message, "category": "user"}, status_code=status)(scope, receive, send)
        token = access.serve_as(scope)
        try:
            await self._count_and_serve(scope, receive, send, path, endpoint)
        finally:
            access.reset(token)

    async def _count_and_serve(self, scope, receive, send, path: str, endpoint: str) -> None:
        limit = MAX_PROTOBUF_BODY_BYTES if endpoint in PROTOBUF_ENDPOINTS else MAX_JSON_BODY_BYTES
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:  # refused unread
            error = RequestTooLarge(f"request body of {int(declared)} bytes; the cap for {endpoint or path} is {limit}")
            return await JSONResponse(error_payload(error), status_code=413)(scope, receive, send)
        receive = capped_receive(receive, limit, endpoint or path)
        if endpoint in self.BACKGROUND:
            return await self._serve(scope, receive, send, endpoint)
        clock = self.service.busy_clock
        clock.begin()
        answered = False

        async def send_then_count_the_end(message) -> None:
            # a call ends as its answer's last bytes go out: the client may hold the answer (and send its next
            # call) before this coroutine runs again, so counting the end after the send would overlap the two
            nonlocal answered
            if message["type"] == "http.response.body" and not message.get("more_body") and not answered:
                answered = True
                clock.end()
            await send(message)

        try:
            await self._serve(scope, receive, send_then_count_the_end, endpoint)
        finally:
            if not answered:
                clock.end()

    async def _serve(self, scope, receive, send, endpoint: str) -> None:
        if self.injecting:
            faults = self.service.faults
            if delay := faults.latency_seconds(endpoint):
                await asyncio.sleep(delay)
            if faults.stops_answering(endpoint):
                return await no_proper_answer(faults.config.stop_answering_mode, send)
            if status := faults.draw_status(endpoint):
                message = (
                    "rate limited (injected fault)" if status == 429 else "service unavailable (injected fault)"
                )
                response = JSONResponse(
                    {"error": message, "category": "server"}, status_code=status, headers=faults.fault_headers()
                )
                return await response(scope, receive, send)
        await self.app(scope, receive, send)


async def no_proper_answer(mode: str, send) -> None:
    """Injected fault (faults.py, stop_answering_after): a backend that broke mid-run."""
    if mode == "hang":  # held open until the server stops
        await asyncio.Event().wait()
    if mode == "garbage":
        body = b"\x00not json at all"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"4096")]})
    await send({"type": "http.response.body", "body": b'{"type": "', "more_body": True})
    raise ConnectionAbortedError("injected fault: connection closed mid-response")


def create_app(
    checkpoint_dir: str | Path, faults: FaultConfig | None = None, exposure: str = DEFAULT_EXPOSURE,
    profile: ServiceProfile | None = None, api_keys: tuple[str, ...] | None = None,
) -> FastAPI:
    """`profile`: a service profile (service_profile.py) giving each call a service time; None: none.
    `api_keys`: the keys clients must send (access.py; None: EMBEDDED_TINKER_API_KEYS, else tml-local).

    Long because: the service's routes are declared in one place, a few lines each, in the order of the tinker
    protocol; the request handling itself lives in the modules they call.
    """
    service = EmbeddedService(checkpoint_dir, faults, exposure, profile, api_keys)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        service.stop()

    app = FastAPI(title="embedded tinker", lifespan=lifespan)
    app.state.service = service

    app.add_middleware(ExposureAndFaults, service=service)

    async def report_user_error(request: Request, error: Exception):
        return JSONResponse(error_payload(error), status_code=error_status(error))

    async def report_server_error(request: Request, error: Exception):
        return JSONResponse(error_payload(error), status_code=500)

    for error_class in USER_ERRORS:
        app.add_exception_handler(error_class, report_user_error)
    app.add_exception_handler(Exception, report_server_error)

    async def json_body(request: Request) -> RequestBody:
        try:
            body = await request.json()
        except RequestTooLarge:
            raise
        except ClientDisconnect:  # e.g. a client process that exited with a long poll open: no one to answer
            raise UserError("the client disconnected before its request body arrived") from None
        except (ValueError, RecursionError) as error:
            raise UserError(f"request body is not JSON: {type(error).__name__}") from None
        if not isinstance(body, dict):
            raise UserError(f"request body must be a JSON object (got {type(body).__name__})")
        return RequestBody(body)

    in_thread = asyncio.to_thread
    api = "/api/v1"

    @app.get(f"{api}/healthz")
    async def healthz():
        injected = service.faults.injected
        return {
            "status": "ok",
            "exposure": service.exposure.name,
            "faults_injected": {"429": injected[429], "503": injected[503], "unanswered": service.faults.unanswered},
            **service.busy_clock.report(),
            "sampler": service.sampler.report(),
            "results": service.results.report(),
            "live_models": len(service.models),
            **({"service_profile": report} if (report := service.schedule.report()) else {}),
        }

    @app.post(f"{api}/client/config")
    async def client_config():
        return {
            "pjwt_auth_enabled": False,
            "credential_default_source": "api_key",
            # the SDK's reqwest transport: less client CPU per request; it also leaves Rust (tokio) threads running
            # in every client process until it exits (docs/embedded-backend.md, "Client exit")
            "use_pyqwest_transport": os.environ.get(PYQWEST_ENV, "1") != "0",
            "parallel_fwdbwd_chunks": True,
            "proto_compress_fwdbwd": False,
            "sample_use_retrieve_futures": False,
            "custom_loss_server_side": False,
            "sample_join_sampling_session": False,
        }

    @app.post(f"{api}/client/dynamic_config")
    async def client_dynamic_config():
        return {"refresh_interval_sec": 300, "sample_cancel_enabled": False}

    @app.post(f"{api}/telemetry")
    async def telemetry():
        return {"status": "accepted"}

    @app.get(f"{api}/get_server_capabilities")
    async def get_server_capabilities():
        return {
            "supported_models": [
                {
                    "model_name": name,
                    "max_context_length": _max_context_length(name),
                    "trainable": True,
                    "sampleable": True,
                }
                for name in REGISTRY
            ]
        }

    @app.get(f"{api}/service_time/{{session_id}}")
    async def service_time(session_id: str):
        # the session's calls in service, as this server measured them (session_time.py); not in the production
        # exposure, which answers as the production service does (no such route)
        session = service.sessions.get(session_id)
        if session is None or not access.may_access(session["owner"]):
            return JSONResponse({"error": f"unknown session {session_id!r}", "category": "user"}, status_code=404)
        return service.session_time.report(session_id)

    @app.post(f"{api}/create_session")
    async def create_session():
        return {"type": "create_session", "session_id": service.create_session()}

    @app.post(f"{api}/session_heartbeat")
    async def session_heartbeat(request: Request):
        session = service.touch_session((await json_body(request))["session_id"])
        if session["finished"]:
            return JSONResponse({"error": "session finished", "category": "user"}, status_code=410)
        return {"type": "session_heartbeat"}

    @app.post(f"{api}/sessions/{{session_id}}/finish")
    async def finish_session(session_id: str):
        await in_thread(service.finish_session, session_id)
        return {}

    @app.post(f"{api}/create_model")
    async def create_model(request: Request):
        return service.create_model(await json_body(request))

    @app.post(f"{api}/get_info")
    async def get_info(request: Request):
        return await in_thread(service.get_info, (await json_body(request))["model_id"])

    @app.post(f"{api}/weights_info")
    async def weights_info(request: Request):
        return await in_thread(service.weights_info, (await json_body(request))["tinker_path"])

    @app.post(f"{api}/forward_backward")
    async def forward_backward(request: Request):
        body = await request.body()
        encoding = request.headers.get("content-encoding", "identity").strip().lower()
        if encoding == "zstd":
            body = await in_thread(decompress_zstd, body)
        elif encoding != "identity":
            raise UnsupportedEncoding(f"content-encoding {encoding!r} is not supported (zstd or none)")
        return service.forward_backward(wire.decode_forward_backward(body))

    @app.post(f"{api}/optim_step")
    async def optim_step(request: Request):
        return service.optim_step(await json_body(request))

    @app.post(f"{api}/save_weights")
    async def save_weights(request: Request):
        return service.save_weights(await json_body(request))

    @app.post(f"{api}/save_weights_for_sampler")
    async def save_weights_for_sampler(request: Request):
        return service.save_weights_for_sampler(await json_body(request))

    @app.post(f"{api}/load_weights")
    async def load_weights(request: Request):
        return await in_thread(service.load_weights, await json_body(request))

    @app.post(f"{api}/create_sampling_session")
    async def create_sampling_session(request: Request):
        return await in_thread(service.create_sampling_session, await json_body(request))

    @app.get(f"{api}/samplers/{{sampler_id}}")
    async def get_sampler(sampler_id: str):
        session = service.sampling_session(sampler_id)
        return {"sampler_id": sampler_id, "base_model": session.base_model, "model_path": session.model_path}

    @app.post(f"{api}/asample")
    async def asample(request: Request):
        # a request to a sampling session (how the SDK samples) is checked and queued on the event
        # loop, which costs less than a hop to a thread; other forms may load weights: in a thread
        body = await json_body(request)
        if body.get("sampling_session_id"):
            return JSONResponse(service.asample(body))  # plain JSON: no response-model encoding
        return await in_thread(service.asample, body)

    @app.post(f"{api}/retrieve_future")
    async def retrieve_future(request: Request):
        return await service.retrieve((await json_body(request))["request_id"])

    @app.post(f"{api}/cancel_future")
    async def cancel_future():
        return {}

    rest_api.install(app, service)  # training runs, checkpoint listings, adapter export
    return app
