"""Training runs, checkpoint listings and adapter export: what the stock ``tinker`` CLI and
tinker-cookbook call besides training and sampling.

A *training run* is one training model (``model_id = "{session}:train:{seq}"``). Its record,
``<checkpoint_dir>/<model_id>/run.json`` (base_model, lora_config, user_metadata, created_at),
is written when the model is created, so a restarted server still lists it and the cookbook's
renderer lookup on resume (``user_metadata["renderer_name"]`` of the run that saved a checkpoint)
works across restarts. Routes (under ``/api/v1``):

    GET    training_runs?limit&offset                 -> TrainingRunsResponse (newest first)
    GET    training_runs/{run_id}                     -> TrainingRun (404 when unknown)
    GET    training_runs/{run_id}/checkpoints         -> CheckpointsListResponse
    GET    checkpoints?limit&offset                   -> every run's checkpoints, newest first
    POST   save_weights_external                      -> future: {"path": tinker://<run>/external_weights/<name>}
    GET    training_runs/{run_id}/checkpoints/external_weights/{name}/external_weights_urls
                                                      -> {"urls": {file: signed URL}, "expires"}
    GET    external_weights_files/{run_id}/{name}/{file}?expires&signature   (the signed URL)
    PUT    training_runs/{run_id}/checkpoints/{checkpoint_id}/ttl   (recorded; exports only)
    DELETE training_runs/{run_id}/checkpoints/{checkpoint_id}       (exports only)

An external-weights export is the adapter in PEFT layout: ``adapter_model.safetensors`` (keys
``base_model.model.<module>.lora_A.weight`` / ``lora_B.weight``), ``adapter_config.json``
(``r``, ``lora_alpha`` = 32, ``target_modules``, ``base_model_name_or_path``) and
``checkpoint.json`` (the embedded metadata, with ``adapter_sha256`` of the exported bytes, same
definition as everywhere else). ``tinker checkpoint download tinker://<run>/weights/<name>`` loads the
checkpoint into a new model, exports it, downloads the files through the signed URLs and deletes
the export. Training and sampler checkpoints are immutable and are never deleted by this server.
Signed URLs carry an HMAC over (run, name, file, expiry) keyed by a secret drawn at server start.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from safetensors.torch import save_file

from . import access
from .checkpoints import CheckpointError, TinkerPath, read_metadata
from .model import LORA_ALPHA, adapter_sha256



class TrainingModel(Protocol):
    """A training model the server holds (embedded_tinker.server.TrainingModel: server.py imports this
    module, so these routes name what they read of it instead of importing it)."""

    model_id: str
    adapter: Any  # its LoRA adapter module (state_dict)
    base: Any  # its base model (name)
    lora: Any  # its LoRA config (rank, to_json)


class EmbeddedService(Protocol):
    """What these routes use of the server's state (embedded_tinker.server.EmbeddedService)."""

    runs: RunRegistry
    models: dict[str, Any]

    def _checkpoint_metadata(self, model: Any) -> dict: ...

    def _submit_to_model(self, model_id: str, seq_id: Any, kind: str, work: Any, cost: tuple[str, int]) -> Any: ...

RUN_RECORD = "run.json"
EXPORT_KIND = "external_weights"
URL_LIFETIME_SECONDS = 3600
MODEL_OWNER = "local"
_CHECKPOINT_TYPES = {"weights": "training", "sampler_weights": "sampler", EXPORT_KIND: "external"}


class RunNotFound(LookupError):
    """No training run or checkpoint by that id (HTTP 404)."""


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def valid_component(value: str) -> bool:
    try:
        TinkerPath.parse(f"tinker://{value}/weights/x")
    except CheckpointError:
        return False
    return True


class RunRegistry:
    """Training-run records on disk plus the last request time of live models (in memory)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._last_request: dict[str, float] = {}
        self._ttl: dict[str, float] = {}
        self._lock = threading.Lock()
        self.url_secret = secrets.token_bytes(32)

    # ------------------------------------------------------------------ records
    def created(self, model_id: str, base_model: str, lora_config: dict, user_metadata: Any,
                owner: str | None = None) -> None:
        """`owner`: the client (access.py) that created the run; only it may use, list or load what it saves."""
        metadata = {str(k): str(v) for k, v in (user_metadata or {}).items()} or None
        record = {
            "owner": owner,
            "training_run_id": model_id,
            "base_model": base_model,
            "lora_config": lora_config,
            "user_metadata": metadata,
            "created_at": time.time(),
        }
        directory = self.root / model_id
        directory.mkdir(parents=True, exist_ok=True)
        staging = directory / f".{RUN_RECORD}.{os.getpid()}.{threading.get_ident()}"
        staging.write_text(json.dumps(record, indent=2, sort_keys=True))
        os.replace(staging, directory / RUN_RECORD)
        self.touch(model_id)

    def touch(self, model_id: str) -> None:
        with self._lock:
            self._last_request[model_id] = time.time()

    def _record(self, run_id: str) -> dict | None:
        file = self.root / run_id / RUN_RECORD
        if file.is_file():
            return read_metadata(file, f"training run {run_id!r}")
        return None

    def owner(self, run_id: str) -> str | None:
        """The client that created the run (None: no record, or one written before owners were recorded)."""
        return (self._record(run_id) or {}).get("owner")

    def visible(self, run_id: str) -> bool:
        """Whether the run is a valid id the current client may see (another client's runs do not exist for it)."""
        return valid_component(run_id) and access.may_access(self.owner(run_id))

    def run_ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return [
            entry.name
            for entry in self.root.iterdir()
            if entry.is_dir() and not entry.name.startswith(".") and valid_component(entry.name)
            and ((entry / RUN_RECORD).is_file() or any((entry / kind).is_dir() for kind in _CHECKPOINT_TYPES))
        ]

    # ------------------------------------------------------------------ checkpoints
    def checkpoints(self, run_id: str) -> list[dict]:
        """SDK ``Checkpoint`` objects of a run, oldest first."""
        found = []
        for kind, checkpoint_type in _CHECKPOINT_TYPES.items():
            kind_dir = self.root / run_id / kind
            if not kind_dir.is_dir():
                continue
            for file in kind_dir.glob("*/checkpoint.json"):
                directory = file.parent
                if directory.name.startswith("."):
                    continue
                metadata = read_metadata(file, f"tinker://{run_id}/{kind}/{directory.name}")
                created = metadata.get("created_at") or file.stat().st_mtime
                checkpoint_id = f"{kind}/{directory.name}"
                expires = self._ttl.get(f"{run_id}/{checkpoint_id}")
                found.append(
                    {
                        "checkpoint_id": checkpoint_id,
                        "checkpoint_type": checkpoint_type,
                        "time": _iso(created),
                        "tinker_path": f"tinker://{run_id}/{checkpoint_id}",
                        "size_bytes": sum(f.stat().st_size for f in directory.iterdir() if f.is_file()),
                        "public": False,
                        "expires_at": _iso(expires) if expires else None,
                        "_created": created,
                    }
                )
        found.sort(key=lambda c: (c["_created"], c["checkpoint_id"]))
        return found

    @staticmethod
    def _public(checkpoint: dict) -> dict:
        return {k: v for k, v in checkpoint.items() if not k.startswith("_")}

    def training_run(self, run_id: str, live: TrainingModel | None) -> dict:
        record = self._record(run_id)
        checkpoints = self.checkpoints(run_id)
        if record is None and live is None and not checkpoints:
            raise RunNotFound(f"no training run {run_id!r} on this server")
        record = record or {}
        if live is not None:
            base_model, lora = live.base.name, live.lora.to_json()
        else:
            first = self._first_checkpoint_metadata(run_id)
            base_model = record.get("base_model") or first.get("base_model", "unknown")
            lora = record.get("lora_config") or first.get("lora_config") or {}
        times = [record.get("created_at") or 0.0] + [c["_created"] for c in checkpoints]
        with self._lock:
            times.append(self._last_request.get(run_id, 0.0))

        def last(kind: str) -> dict | None:
            matching = [c for c in checkpoints if c["checkpoint_type"] == kind]
            return self._public(matching[-1]) if matching else None

        return {
            "training_run_id": run_id,
            "base_model": base_model,
            "model_owner": MODEL_OWNER,
            "is_lora": True,
            "corrupted": False,
            "lora_rank": lora.get("rank"),
            "last_request_time": _iso(max(times)),
            "last_checkpoint": last("training"),
            "last_sampler_checkpoint": last("sampler"),
            "user_metadata": record.get("user_metadata"),
        }

    def _first_checkpoint_metadata(self, run_id: str) -> dict:
        for kind in _CHECKPOINT_TYPES:
            for file in sorted((self.root / run_id / kind).glob("*/checkpoint.json")):
                return read_metadata(file, f"tinker://{run_id}/{kind}/{file.parent.name}")
        return {}

    # ------------------------------------------------------------------ exports
    def export_directory(self, run_id: str, name: str) -> Path:
        return self.root / run_id / EXPORT_KIND / name

    def write_export(self, model: TrainingModel, name: str, metadata: dict) -> dict:
        """Write the adapter of ``model`` in PEFT layout; exports are replaced when re-saved."""
        target = self.export_directory(model.model_id, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        tensors = model.adapter.state_dict()
        peft = {}
        for key, tensor in tensors.items():
            module, matrix = key.rsplit(".", 1)
            peft[f"base_model.model.{module}.{matrix}.weight"] = tensor
        config = {
            "peft_type": "LORA",
            "task_type": "CAUSAL_LM",
            "base_model_name_or_path": model.base.name,
            "r": model.lora.rank,
            "lora_alpha": LORA_ALPHA,
            "lora_dropout": 0.0,
            "bias": "none",
            "target_modules": sorted({key.rsplit(".", 1)[0].rsplit(".", 1)[-1] for key in tensors}),
        }
        record = {
            **metadata,
            "path": f"tinker://{model.model_id}/{EXPORT_KIND}/{name}",
            "kind": EXPORT_KIND,
            "format": "peft",
            "adapter_tensor_order": list(tensors),
            "adapter_sha256": adapter_sha256(list(tensors.values())),
        }
        staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=target.parent))
        try:
            save_file(peft, str(staging / "adapter_model.safetensors"))
            (staging / "adapter_config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
            (staging / "checkpoint.json").write_text(json.dumps(record, indent=2, sort_keys=True))
            with self._lock:
                if target.exists():
                    shutil.rmtree(target)
                os.rename(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        size = sum(f.stat().st_size for f in target.iterdir())
        return {"path": record["path"], "size_bytes": size, "type": "save_weights_external"}

    def sign(self, run_id: str, name: str, file: str, expires: int) -> str:
        message = f"{run_id}\n{name}\n{file}\n{expires}".encode()
        return hmac.new(self.url_secret, message, hashlib.sha256).hexdigest()

    def set_ttl(self, run_id: str, checkpoint_id: str, ttl_seconds: int | None) -> None:
        with self._lock:
            key = f"{run_id}/{checkpoint_id}"
            if ttl_seconds is None:
                self._ttl.pop(key, None)
            else:
                self._ttl[key] = time.time() + int(ttl_seconds)


def _export_name(checkpoint_id: str) -> str:
    kind, _, name = checkpoint_id.partition("/")
    if kind != EXPORT_KIND or not name or "/" in name or not valid_component(name):
        raise RunNotFound(f"no external weights checkpoint {checkpoint_id!r}")
    return name


def _not_found(error: Exception) -> JSONResponse:
    return JSONResponse({"error": str(error), "category": "user"}, status_code=404)


def install(app: FastAPI, service: EmbeddedService) -> None:
    """Add the training-run, checkpoint and export routes to the service's app.

    Long because: the REST routes are declared in one place, a few lines each, as the protocol document lists them.
    """
    runs: RunRegistry = service.runs
    api = "/api/v1"

    def live(run_id: str):
        return service.models.get(run_id)

    def checked_run(run_id: str) -> dict:
        """The run's record: RunNotFound for an invalid id (a path component check: ``%2e%2e`` is ``..``)
        and for another client's run."""
        if not runs.visible(run_id):
            raise RunNotFound(f"no training run {run_id!r} on this server")
        return runs.training_run(run_id, live(run_id))

    def visible_run_ids() -> list[str]:
        return [run_id for run_id in runs.run_ids() if runs.visible(run_id)]

    app.add_exception_handler(RunNotFound, lambda request, error: _not_found(error))

    @app.get(f"{api}/training_runs")
    async def list_training_runs(limit: int = 20, offset: int = 0):
        every = [checked_run(run_id) for run_id in visible_run_ids()]
        every.sort(key=lambda run: run["last_request_time"], reverse=True)
        page = every[offset : offset + limit] if limit > 0 else every[offset:]
        return {
            "training_runs": page,
            "cursor": {"offset": offset, "limit": limit, "total_count": len(every)},
        }

    @app.get(f"{api}/training_runs/{{run_id}}")
    async def get_training_run(run_id: str):
        return checked_run(run_id)

    @app.get(f"{api}/training_runs/{{run_id}}/checkpoints")
    async def list_checkpoints(run_id: str):
        checked_run(run_id)
        return {"checkpoints": [runs._public(c) for c in runs.checkpoints(run_id)]}

    @app.get(f"{api}/checkpoints")
    async def list_user_checkpoints(limit: int = 100, offset: int = 0):
        every = [c for run_id in visible_run_ids() for c in runs.checkpoints(run_id)]
        every.sort(key=lambda c: c["_created"], reverse=True)
        page = every[offset : offset + limit] if limit > 0 else every[offset:]
        return {
            "checkpoints": [runs._public(c) for c in page],
            "cursor": {"offset": offset, "limit": limit, "total_count": len(every)},
        }

    @app.post(f"{api}/save_weights_external")
    async def save_weights_external(request: Request):
        body = await request.json()
        name = body.get("path") or f"export-{body.get('seq_id')}"
        if not valid_component(name):
            raise CheckpointError(f"invalid export name {name!r}: use letters, digits and ._:=+-")

        def run(model: TrainingModel) -> dict:
            return runs.write_export(model, name, service._checkpoint_metadata(model))

        # an export writes the adapter as a checkpoint save does: the profile charges it a save's service time
        response = service._submit_to_model(body["model_id"], body.get("seq_id"), "save_weights_external", run,
                                            ("save_checkpoint", 1))
        if body.get("ttl_seconds"):
            runs.set_ttl(body["model_id"], f"{EXPORT_KIND}/{name}", body["ttl_seconds"])
        return response

    @app.get(f"{api}/training_runs/{{run_id}}/checkpoints/{{checkpoint_id:path}}/external_weights_urls")
    async def external_weights_urls(run_id: str, checkpoint_id: str, request: Request):
        name = _export_name(checkpoint_id)
        directory = runs.export_directory(run_id, name)
        if not runs.visible(run_id) or not (directory / "checkpoint.json").is_file():
            raise RunNotFound(f"no external weights checkpoint tinker://{run_id}/{checkpoint_id}")
        expires = int(time.time()) + URL_LIFETIME_SECONDS
        base = str(request.base_url).rstrip("/")
        urls = {
            file.name: (
                f"{base}{api}/external_weights_files/{run_id}/{name}/{file.name}"
                f"?expires={expires}&signature={runs.sign(run_id, name, file.name, expires)}"
            )
            for file in sorted(directory.iterdir())
            if file.is_file()
        }
        return {"urls": urls, "expires": _iso(expires)}

    @app.get(f"{api}/external_weights_files/{{run_id}}/{{name}}/{{file}}")
    async def external_weights_file(run_id: str, name: str, file: str, expires: int = 0, signature: str = ""):
        expected = runs.sign(run_id, name, file, expires)
        if not hmac.compare_digest(expected, signature) or expires < time.time():
            return JSONResponse({"error": "invalid or expired signature", "category": "user"}, status_code=403)
        path = runs.export_directory(run_id, name) / file
        if not (valid_component(run_id) and valid_component(name) and valid_component(file)) or not path.is_file():
            raise RunNotFound("no such file")
        return FileResponse(path, media_type="application/octet-stream")

    @app.put(f"{api}/training_runs/{{run_id}}/checkpoints/{{checkpoint_id:path}}/ttl")
    async def set_checkpoint_ttl(run_id: str, checkpoint_id: str, request: Request):
        if checkpoint_id.partition("/")[0] in ("weights", "sampler_weights"):
            raise CheckpointError(
                f"tinker://{run_id}/{checkpoint_id}: checkpoints of the embedded backend are immutable "
                "and never expire (only external-weights exports take a TTL)"
            )
        name = _export_name(checkpoint_id)
        if not runs.visible(run_id) or not (runs.export_directory(run_id, name) / "checkpoint.json").is_file():
            raise RunNotFound(f"no external weights checkpoint tinker://{run_id}/{checkpoint_id}")
        body = await request.json() if await request.body() else {}
        runs.set_ttl(run_id, checkpoint_id, body.get("ttl_seconds"))
        return Response(status_code=204)

    @app.delete(f"{api}/training_runs/{{run_id}}/checkpoints/{{checkpoint_id:path}}")
    async def delete_checkpoint(run_id: str, checkpoint_id: str):
        kind = checkpoint_id.partition("/")[0]
        if kind in ("weights", "sampler_weights"):
            raise CheckpointError(
                f"tinker://{run_id}/{checkpoint_id}: checkpoints of the embedded backend are immutable "
                "and are not deleted (only external-weights exports are)"
            )
        name = _export_name(checkpoint_id)
        directory = runs.export_directory(run_id, name)
        if not runs.visible(run_id) or not directory.is_dir():
            raise RunNotFound(f"no external weights checkpoint tinker://{run_id}/{checkpoint_id}")
        shutil.rmtree(directory)
        runs.set_ttl(run_id, checkpoint_id, None)
        return Response(status_code=204)


__all__ = ["RunNotFound", "RunRegistry", "install"]
