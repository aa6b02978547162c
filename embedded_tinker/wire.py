"""Protobuf bodies of the Tinker protocol: forward_backward requests in, ForwardBackwardOutput and
SampleResponse out (schema: ``tinker.proto.tinker_public_pb2``, shipped with the SDK)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from tinker.proto import tinker_public_pb2 as pb

_NUMPY_DTYPES = {
    pb.DTYPE_FLOAT32: np.float32,
    pb.DTYPE_INT64: np.int64,
    pb.DTYPE_INT32: np.int32,
}


class WireError(ValueError):
    """A request body that does not decode to what the endpoint needs (a user error)."""


@dataclass
class Datum:
    tokens: list[int]
    loss_fn_inputs: dict[str, np.ndarray]


@dataclass
class ForwardBackwardRequest:
    model_id: str
    seq_id: int
    data: list[Datum]
    loss_fn: str
    loss_fn_config: dict[str, float]
    forward_only: bool


def _tensor_to_numpy(tensor: pb.Tensor, name: str) -> np.ndarray:
    if tensor.dtype not in _NUMPY_DTYPES:
        raise WireError(f"loss_fn_inputs[{name!r}]: unsupported dtype {tensor.dtype}")
    dtype = _NUMPY_DTYPES[tensor.dtype]
    shape = list(tensor.shape)
    if tensor.HasField("sparse_csr"):
        csr = tensor.sparse_csr
        values = np.frombuffer(csr.values, dtype=dtype)
        row_starts = np.frombuffer(csr.crow_indices, dtype=np.int64)
        columns = np.frombuffer(csr.col_indices, dtype=np.int64)
        dense = np.zeros(shape, dtype=dtype)
        for row in range(len(row_starts) - 1):
            span = slice(row_starts[row], row_starts[row + 1])
            dense[row, columns[span]] = values[span]
        return dense
    array = np.frombuffer(tensor.dense, dtype=dtype)
    return array.reshape(shape) if shape else array


def decode_forward_backward(body: bytes) -> ForwardBackwardRequest:
    message = pb.ForwardBackwardRequest()
    try:
        message.ParseFromString(body)
    except Exception as error:  # noqa: BLE001 - protobuf raises its own DecodeError
        raise WireError(f"forward_backward body is not a ForwardBackwardRequest protobuf: {error}") from error
    data = []
    for index, datum in enumerate(message.data):
        tokens: list[int] = []
        for chunk in datum.model_input:
            if chunk.WhichOneof("chunk") != "encoded_text":
                raise WireError(
                    f"datum {index}: only encoded_text chunks are supported, got {chunk.WhichOneof('chunk')}"
                )
            tokens.extend(np.frombuffer(chunk.encoded_text.tokens, dtype=np.int32).tolist())
        inputs = {name: _tensor_to_numpy(t, name) for name, t in datum.loss_fn_inputs.items()}
        data.append(Datum(tokens, inputs))
    config: dict[str, float] = dict(message.loss_fn_config)
    for key, value in message.loss_fn_config_v2.items():
        if value.WhichOneof("value") == "text":
            raise WireError(f"loss_fn_config[{key!r}]: string values are not supported")
        config[key] = value.number
    return ForwardBackwardRequest(
        model_id=message.model_id,
        seq_id=message.seq_id,
        data=data,
        loss_fn=message.loss_fn,
        loss_fn_config=config,
        forward_only=message.forward_only,
    )


def _batched_float32(per_datum: list[torch.Tensor]) -> pb.BatchedTensor:
    arrays = [t.detach().to(torch.float32).contiguous().numpy() for t in per_datum]
    offsets = np.cumsum([0] + [a.nbytes for a in arrays]).astype(np.int64)
    return pb.BatchedTensor(
        data=b"".join(a.tobytes() for a in arrays),
        offsets=offsets.tobytes(),
        dtype=pb.DTYPE_FLOAT32,
    )


def encode_forward_backward_output(
    outputs: dict[str, list[torch.Tensor]], metrics: dict[str, float], num_datums: int
) -> bytes:
    """``outputs``: field name (logprobs, elementwise_loss) -> one 1-D tensor per datum."""
    record = pb.ArrayRecord(type_tag="ArrayRecord", num_datums=num_datums)
    for name, per_datum in outputs.items():
        record.fields[name].CopyFrom(_batched_float32(per_datum))
    message = pb.ForwardBackwardOutput(loss_fn_output_type="ArrayRecord", metrics=metrics)
    message.loss_fn_outputs.append(record)
    return message.SerializeToString()


_STOP_REASONS = {"stop": pb.STOP_REASON_STOP, "length": pb.STOP_REASON_LENGTH}


def encode_sample_response(
    sequences: list[tuple[list[int], list[float], str]], prompt_logprobs: list[float] | None
) -> bytes:
    message = pb.SampleResponse()
    for tokens, logprobs, stop_reason in sequences:
        message.sequences.append(
            pb.SampledSequence(
                stop_reason=_STOP_REASONS[stop_reason],
                tokens=np.asarray(tokens, dtype=np.int32).tobytes(),
                logprobs=np.asarray(logprobs, dtype=np.float32).tobytes(),
            )
        )
    if prompt_logprobs is not None:
        message.prompt_logprobs = np.asarray(prompt_logprobs, dtype=np.float32).tobytes()
    return message.SerializeToString()
