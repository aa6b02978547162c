"""python -m embedded_tinker serve --port N | --fd N [--checkpoint-dir D] [--exposure embedded|production] [fault options]
                                 [--service-profile NAME --time-factor F]"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile

from .exposure import DEFAULT_EXPOSURE, EXPOSURES
from .faults import FaultConfig
from .service_profile import PROFILES, profile_named
from .launch import GRACEFUL_SHUTDOWN_SECONDS, serving_socket


def main(argv: list[str] | None = None) -> None:
    """Long because: the command line's options and subcommands are declared in one place, as --help shows them.
    """
    parser = argparse.ArgumentParser(prog="python -m embedded_tinker")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the Tinker REST API on loopback")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--host", default="127.0.0.1", help="loopback only: 127.0.0.1 or localhost")
    serve.add_argument("--fd", type=int, default=None,
                       help="serve on this inherited listening socket instead of --host/--port (how "
                       "embedded_tinker.launch.start_server starts it, with the port already bound)")
    serve.add_argument("--checkpoint-dir", default=None, help="default: a new temporary directory")
    serve.add_argument(
        "--torch-threads",
        type=int,
        default=int(os.environ.get("EMBEDDED_TINKER_TORCH_THREADS", 1)),
        help="torch intra-op threads (env EMBEDDED_TINKER_TORCH_THREADS)",
    )
    serve.add_argument(
        "--exposure",
        choices=EXPOSURES,
        default=DEFAULT_EXPOSURE,
        help="production: answer as the production service does (no adapter hash, no optimizer config, "
        "per-model seed rejected; see embedded_tinker/exposure.py)",
    )
    serve.add_argument("--fault-429-rate", type=float, default=0.0)
    serve.add_argument("--fault-503-rate", type=float, default=0.0)
    serve.add_argument("--fault-latency-ms", type=float, default=0.0)
    serve.add_argument("--capacity-exhausted-seconds", type=float, default=0.0)
    serve.add_argument("--fault-endpoints", default="", help="comma-separated endpoint names; default all")
    serve.add_argument("--fault-retry-after-ms", type=int, default=None)
    serve.add_argument("--fault-seed", type=int, default=0)
    serve.add_argument(
        "--service-profile",
        choices=("none", *PROFILES),
        default=os.environ.get("EMBEDDED_TINKER_SERVICE_PROFILE") or "none",
        help="per-call service time shaped like a production service (docs/service-profile.md; "
        "env EMBEDDED_TINKER_SERVICE_PROFILE)",
    )
    serve.add_argument(
        "--time-factor",
        type=float,
        default=float(os.environ.get("EMBEDDED_TINKER_TIME_FACTOR") or 1.0),
        help="scales every service time of the profile (env EMBEDDED_TINKER_TIME_FACTOR)",
    )
    serve.add_argument("--fault-stop-answering-after", type=int, default=None,
                       help="after N API calls (of --fault-endpoints), later calls get no proper answer")
    serve.add_argument("--fault-stop-answering-mode", choices=("hang", "close", "garbage"), default="hang",
                       help="hang: never answered; close: connection closed mid-response; garbage: 200, not JSON")
    args = parser.parse_args(argv)

    listener = None
    if args.fd is not None:
        try:
            listener = serving_socket(args.fd)
            args.host, args.port = listener.getsockname()[:2]
        except OSError as error:
            parser.error(f"--fd {args.fd}: not a listening socket ({error})")
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        parser.error("the embedded backend serves loopback only")
    try:
        profile = profile_named(args.service_profile, args.time_factor)
    except ValueError as error:
        parser.error(str(error))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # No garbage collection while torch, the decoder and uvicorn import; then their objects are frozen
    # (gc.freeze(): out of the collector's reach), so the server's own collections skip them.
    gc.disable()
    import torch
    from . import qwen3  # noqa: F401 - the served decoder, imported before serving (transformers is not)
    import uvicorn

    from .connections import uvicorn_options
    from .server import create_app

    torch.set_num_threads(args.torch_threads)
    faults = FaultConfig(
        rate_429=args.fault_429_rate,
        rate_503=args.fault_503_rate,
        latency_ms=args.fault_latency_ms,
        capacity_exhausted_seconds=args.capacity_exhausted_seconds,
        endpoints=tuple(e for e in args.fault_endpoints.split(",") if e),
        retry_after_ms=args.fault_retry_after_ms,
        seed=args.fault_seed,
        stop_answering_after=args.fault_stop_answering_after,
        stop_answering_mode=args.fault_stop_answering_mode,
    )
    checkpoint_dir = args.checkpoint_dir or tempfile.mkdtemp(prefix="embedded-tinker-ckpt-")
    print(
        f"embedded tinker: http://{args.host}:{args.port} checkpoints in {checkpoint_dir} "
        f"(exposure: {args.exposure}; service profile: {args.service_profile}"
        f"{f' x {args.time_factor}' if profile else ''})",
        flush=True,
    )
    app = create_app(checkpoint_dir, faults, args.exposure, profile)
    gc.freeze()
    gc.enable()
    if listener is None:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning",
                    timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS, **uvicorn_options())
    else:
        config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
                                **uvicorn_options())
        uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
