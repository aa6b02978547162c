"""Immutable checkpoints on disk, addressed by tinker paths.

    tinker://<model_id>/weights/<name>          save_weights (LoRA + optimizer state)
    tinker://<model_id>/sampler_weights/<name>  save_weights_for_sampler (LoRA only)

live in ``<root>/<model_id>/<kind>/<name>/``:

    adapter.safetensors    LoRA tensors (float32)
    optimizer.safetensors  optimizer state (``weights`` kind only)
    checkpoint.json        base_model, lora_config, optimizer (family + config), optimizer_step,
                           adapter_tensor_order, adapter_sha256, optimizer_state_sha256, kind, path

A checkpoint is written to a temporary directory and renamed into place, and is never changed
afterwards: saving an existing name again succeeds only when the bytes are identical (a retried
request) and fails otherwise. A server restarted on the same root finds every checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .model import adapter_sha256

KINDS = ("weights", "sampler_weights")
_NAME_PATTERN = re.compile(r"^[A-Za-z0-9._:=+-]+$")


class CheckpointError(ValueError):
    """Bad checkpoint path or name, missing or unreadable checkpoint, or an attempt to overwrite one."""


def read_metadata(file: Path, what: str) -> dict:
    """A checkpoint's (or run's) JSON record; CheckpointError (HTTP 400, naming `what`) when it is not a JSON
    object: a damaged file is reported, not a server error."""
    try:
        record = json.loads(file.read_text())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CheckpointError(f"the record of {what} is unreadable ({type(error).__name__}): the file is damaged") \
            from None
    if not isinstance(record, dict):
        raise CheckpointError(f"the record of {what} is not a JSON object: the file is damaged")
    return record


_REQUIRED_METADATA = ("base_model", "lora_config", "adapter_tensor_order", "adapter_sha256", "optimizer",
                      "optimizer_step")


@dataclass(frozen=True)
class TinkerPath:
    model_id: str
    kind: str
    name: str

    @classmethod
    def parse(cls, path: str) -> TinkerPath:
        if not path.startswith("tinker://"):
            raise CheckpointError(
                f"not a tinker path: {path!r} (expected tinker://<model_id>/weights/<name>)"
            )
        parts = path[len("tinker://") :].split("/")
        if len(parts) != 3 or parts[1] not in KINDS:
            raise CheckpointError(
                f"malformed tinker path {path!r}: expected tinker://<model_id>/{{weights|sampler_weights}}/<name>"
            )
        model_id, kind, name = parts
        for part in (model_id, name):
            if not _NAME_PATTERN.match(part) or part in (".", ".."):
                raise CheckpointError(f"invalid component {part!r} in tinker path {path!r}")
        return cls(model_id, kind, name)

    def __str__(self) -> str:
        return f"tinker://{self.model_id}/{self.kind}/{self.name}"


@dataclass
class Checkpoint:
    path: TinkerPath
    metadata: dict
    adapter_tensors: dict[str, torch.Tensor]  # in adapter_tensor_order
    optimizer_state: dict[str, torch.Tensor] | None


def _state_sha256(state: dict[str, torch.Tensor] | None) -> str | None:
    if state is None:
        return None
    digest = hashlib.sha256()
    for key in sorted(state):
        digest.update(key.encode())
        digest.update(state[key].contiguous().numpy().tobytes())
    return digest.hexdigest()


class CheckpointStore:
    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def directory(self, path: TinkerPath) -> Path:
        return self.root / path.model_id / path.kind / path.name

    def save(
        self,
        path: TinkerPath,
        adapter_tensors: dict[str, torch.Tensor],
        metadata: dict,
        optimizer_state: dict[str, torch.Tensor] | None,
    ) -> dict:
        """Write a checkpoint; returns its metadata (with the sha256 fields filled in)."""
        if not _NAME_PATTERN.match(path.name):
            raise CheckpointError(f"invalid checkpoint name {path.name!r}: use letters, digits and ._:=+-")
        metadata = {
            **metadata,
            "path": str(path),
            "kind": path.kind,
            "adapter_tensor_order": list(adapter_tensors),
            "adapter_sha256": adapter_sha256(list(adapter_tensors.values())),
            "optimizer_state_sha256": _state_sha256(optimizer_state),
        }
        target = self.directory(path)
        with self._lock:
            if target.exists():
                existing = read_metadata(target / "checkpoint.json", str(path))
                same = all(
                    existing.get(key) == metadata[key]
                    for key in ("adapter_sha256", "optimizer_state_sha256", "base_model")
                )
                if same:
                    return existing
                raise CheckpointError(
                    f"checkpoint {path} already exists with different contents; checkpoints are immutable, "
                    "save under a new name"
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=target.parent))
            try:
                save_file(adapter_tensors, str(staging / "adapter.safetensors"))
                if optimizer_state is not None:
                    save_file(optimizer_state, str(staging / "optimizer.safetensors"))
                (staging / "checkpoint.json").write_text(json.dumps(metadata, indent=2, sort_keys=True))
                os.rename(staging, target)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        return metadata

    def load(self, path: TinkerPath | str, with_optimizer_state: bool = False) -> Checkpoint:
        path = TinkerPath.parse(path) if isinstance(path, str) else path
        directory = self.directory(path)
        metadata = self.metadata(path)
        loaded = load_file(str(directory / "adapter.safetensors"))
        adapter_tensors = {name: loaded[name] for name in metadata["adapter_tensor_order"]}
        optimizer_state = None
        if with_optimizer_state:
            if not (directory / "optimizer.safetensors").is_file():
                raise CheckpointError(f"{path} holds no optimizer state (sampler checkpoints never do)")
            optimizer_state = load_file(str(directory / "optimizer.safetensors"))
        return Checkpoint(path, metadata, adapter_tensors, optimizer_state)

    def metadata(self, path: TinkerPath | str) -> dict:
        path = TinkerPath.parse(path) if isinstance(path, str) else path
        file = self.directory(path) / "checkpoint.json"
        if not file.is_file():
            raise CheckpointError(f"no checkpoint at {path}")
        metadata = read_metadata(file, str(path))
        missing = [key for key in _REQUIRED_METADATA if key not in metadata]
        if missing:
            raise CheckpointError(f"the record of {path} lacks {', '.join(missing)}: the file is damaged")
        return metadata

    def list(self, model_id: str) -> list[dict]:
        found = []
        for kind in KINDS:
            kind_dir = self.root / model_id / kind
            if kind_dir.is_dir():
                for file in sorted(kind_dir.glob("*/checkpoint.json")):
                    found.append(read_metadata(file, f"tinker://{model_id}/{kind}/{file.parent.name}"))
        return found
