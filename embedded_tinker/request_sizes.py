"""The largest request bodies the three seed specs make at standard scale, as the stock SDK encodes them.

    python -m embedded_tinker.request_sizes

forward_backward is the only large request. The stock SDK splits a batch into chunks of at most
`fwdbwd_max_chunk_bytes_count` (its estimate; 5,000,000 unless client/config says otherwise; the embedded
service does not) and sends each chunk as one protobuf body. This builds each seed spec's largest batch
(batch_size datums of max_seq_len tokens, with the loss inputs its loss takes; token ids drawn over a
151,936-token vocabulary, as a Qwen tokenizer's are) and runs the SDK's own chunking and encoding on it.
embedded_tinker.server.MAX_DECOMPRESSED_BODY_BYTES is sized from the largest body printed.
"""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import tinker
from tinker import types
from tinker.lib.public_interfaces.training_client import TrainingClient
from tinker.proto.request_conv import forward_backward_request_to_proto

from .server import MAX_DECOMPRESSED_BODY_BYTES, MAX_PROTOBUF_BODY_BYTES

VOCABULARY = 151_936
# (spec, batch_size, max_seq_len, loss, loss inputs besides target_tokens): specs/*.json at standard scale
SEED_BATCHES = [
    ("trimuon_vs_dimuon_no_robots (SFT)", 64, 2048, "cross_entropy", ("weights",)),
    ("gs1_kernel_vs_grpo_gsm8k (RL)", 64, 1024, "importance_sampling", ("logprobs", "advantages")),
    ("selfgen_tasks_vs_gsm8k (RL)", 16 * 8, 1024, "importance_sampling", ("logprobs", "advantages")),
]


def datum(rng: random.Random, length: int, inputs: tuple[str, ...]) -> types.Datum:
    tokens = [rng.randrange(VOCABULARY) for _ in range(length + 1)]
    loss_inputs: dict = {"target_tokens": tokens[1:]}
    for name in inputs:
        loss_inputs[name] = [rng.uniform(-3, 0) for _ in range(length)]
    return types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]), loss_fn_inputs=loss_inputs)


def body_sizes(data: list[types.Datum], loss: str) -> list[int]:
    config = types.ClientConfigResponse() if hasattr(types, "ClientConfigResponse") else None
    chunker = SimpleNamespace(holder=SimpleNamespace(_client_config=config or SimpleNamespace(
        fwdbwd_max_chunk_len=1024, fwdbwd_max_chunk_bytes_count=5_000_000)))
    sizes = []
    for seq_id, chunk in enumerate(TrainingClient._chunked_requests_generator(chunker, data)):
        request = types.ForwardBackwardRequest(
            forward_backward_input=types.ForwardBackwardInput(data=chunk.data, loss_fn=loss),
            model_id="sess-0123456789ab:train:0", seq_id=seq_id)
        sizes.append(len(forward_backward_request_to_proto(request).SerializeToString()))
    return sizes


def main() -> None:
    rng = random.Random(0)
    report = []
    for name, batch, length, loss, inputs in SEED_BATCHES:
        sizes = body_sizes([datum(rng, length, inputs) for _ in range(batch)], loss)
        report.append({"spec": name, "datums": batch, "tokens": length, "loss": loss,
                       "requests": len(sizes), "largest_body_bytes": max(sizes)})
    largest = max(row["largest_body_bytes"] for row in report)
    print(json.dumps({"tinker": tinker.__version__, "batches": report, "largest_body_bytes": largest,
                      "max_decompressed_body_bytes": MAX_DECOMPRESSED_BODY_BYTES,
                      "max_protobuf_body_bytes": MAX_PROTOBUF_BODY_BYTES,
                      "margin": round(MAX_DECOMPRESSED_BODY_BYTES / largest, 1)}, indent=1))


if __name__ == "__main__":
    main()
