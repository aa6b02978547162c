"""Which training service a run talks to, and how its client is built.

`ServiceTarget.from_backend("local")` is the embedded backend (started on demand) unless
TINKER_BASE_URL is set; `from_backend("https://...")` is a remote service. Credentials are read
from the environment only when a client is created, passed straight to the SDK, and never kept on
this object, so nothing that logs or serialises a ServiceTarget can leak them:

    TINKER_API_KEY                                      api key (embedded: "tml-local")
    MODAL_PROXY_TOKEN_ID / MODAL_PROXY_TOKEN_SECRET     Modal-Key / Modal-Secret headers
    RUNS_PROXY_TOKEN_ID / RUNS_PROXY_TOKEN_SECRET       the same headers for a fork (fork=True)
"""

from __future__ import annotations

import os
import re
import threading
import time
import warnings
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

EMBEDDED_API_KEY = "tml-local"
EXPOSURES = ("embedded", "production")
CLOSE_ANSWER_SECONDS = 60.0  # closing a session: a service that stopped answering must not hold the run's end


class ServiceConfigError(ValueError):
    """The backend cannot be used as configured (bad URL, missing credential). One line, no secrets."""


def _redact_url(url: str) -> str:
    """Drop user:password, query and fragment: a URL can carry credentials."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass
class ServiceTarget:
    kind: str  # "embedded" or "remote"
    base_url: str | None  # None for embedded until started
    _server: Any = field(default=None, repr=False, compare=False)
    # Embedded only: where its checkpoints live. A directory that outlives the run (the flow uses
    # <runs_dir>/.embedded-checkpoints) lets a re-run resume from checkpoints an earlier run saved.
    checkpoint_dir: str | None = None
    # Embedded only: the exposure profile the server is started with ("embedded", or "production":
    # answers as the production service does). The pipeline never trusts it: what a service
    # exposes is detected from its responses and kept in `observed`.
    exposure: str = "embedded"
    observed: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # Embedded only: the server the CLI started ahead of the run (EarlyEmbedded), taken over by start()
    early: EarlyEmbedded | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_backend(cls, backend: str, exposure: str = "embedded") -> ServiceTarget:
        if exposure not in EXPOSURES:
            raise ServiceConfigError(f"exposure must be one of {', '.join(EXPOSURES)} (got {exposure!r})")
        if backend == "local":
            url = os.environ.get("TINKER_BASE_URL")
            if url:
                return cls("remote", cls._checked_url(url), exposure=exposure)
            return cls("embedded", None, exposure=exposure)
        return cls("remote", cls._checked_url(backend), exposure=exposure)

    @staticmethod
    def _checked_url(url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ServiceConfigError(f"backend must be 'local' or an http(s) URL (got {_redact_url(url)!r})")
        return url.rstrip("/")

    def describe(self) -> dict[str, Any]:
        """What may be recorded about the target: kind and credential-free URL."""
        described = {"kind": self.kind, "base_url": _redact_url(self.base_url) if self.base_url else None}
        if self.kind == "embedded":
            described["exposure"] = self.exposure
        if self.observed:
            described["observed"] = dict(self.observed)
        return described

    def __repr__(self) -> str:
        return f"ServiceTarget(kind={self.kind!r}, base_url={self.describe()['base_url']!r})"

    # ---- lifecycle ----

    def start(self) -> str:
        """Make sure the service is reachable at base_url; starts the embedded server if needed (or takes
        over the one started early for it, `early`, when it has the same checkpoint dir and exposure)."""
        if self.kind == "embedded" and self._server is None:
            early, self.early = self.early, None
            if early is not None and not early.serves(self.checkpoint_dir, self.exposure):
                early.stop()  # started for another checkpoint dir or exposure: not this run's server
                early = None
            try:
                self._server = early.take() if early is not None else None
                if self._server is None:
                    self._server = _start_embedded(self.checkpoint_dir, self.exposure)
            except TypeError as err:  # a backend built before exposure profiles existed
                if "exposure" not in str(err):
                    raise
                raise ServiceConfigError(f"this embedded backend has no exposure profile {self.exposure!r}") from None
            self.base_url = self._server.base_url
        if self.base_url is None:
            raise ServiceConfigError("service has no base URL")
        return self.base_url

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
            self.base_url = None

    # ---- clients ----

    def service_client(self, fork: bool = False) -> Any:
        """A stock `tinker.ServiceClient` for this target with credentials from the environment."""
        import tinker

        base_url = self.start()
        if self.kind == "embedded":
            return tinker.ServiceClient(base_url=base_url, api_key=EMBEDDED_API_KEY)
        api_key, headers = _remote_credentials(fork)
        return tinker.ServiceClient(base_url=base_url, api_key=api_key, default_headers_overrides=headers)

    def proxy_headers(self, fork: bool = False) -> dict[str, str]:
        """The Modal proxy headers for this target (the fork's with fork=True), from the environment; {} if none."""
        return {} if self.kind == "embedded" else _proxy_headers(fork)

    def request_headers(self, fork: bool = False) -> dict[str, str]:
        """What a plain HTTP request to this service sends as the SDK would: its API key and proxy headers (from the
        environment; never recorded)."""
        if self.kind == "embedded":
            return {"X-API-Key": EMBEDDED_API_KEY}
        api_key, headers = _remote_credentials(fork)
        return {"X-API-Key": api_key, **headers}

    def answer_problem(self, budget_s: float, model: str | None = None) -> str | None:
        """One line when a remote service does not answer `get_server_capabilities` usably within `budget_s`
        (it hangs, answers something that is not a capability list, or drops the connection), else None.
        One plain request, no retries: checked before a run is claimed, so such a service leaves no run
        behind (the SDK itself would retry for minutes). A busy (429/503) or refusing (4xx/5xx) answer is
        left to the run, whose capacity policy and gates report those."""
        if self.kind == "embedded" or self.base_url is None:
            return None
        import httpx

        api_key, headers = _remote_credentials(fork=False)
        url = _redact_url(self.base_url).rstrip("/") + CAPABILITIES_PATH
        where = f"backend {_redact_url(self.base_url)}"
        try:
            response = httpx.get(url, headers={"X-API-Key": api_key, **headers},
                                 timeout=httpx.Timeout(budget_s, connect=min(5.0, budget_s)))
        except httpx.TimeoutException:
            return f"{where} did not answer get_server_capabilities within {budget_s:.0f} s (it hangs): check the service"
        except httpx.HTTPError as err:
            return (f"{where} dropped get_server_capabilities ({type(err).__name__}): check the service; "
                    "this is not a capacity refusal")
        if response.status_code >= 300:
            return None
        try:
            models = response.json().get("supported_models")
        except (ValueError, AttributeError):
            models = None
        if not isinstance(models, list):
            return (f"{where} answered get_server_capabilities with something that is not a capability list "
                    f"(HTTP {response.status_code}, {len(response.content)} bytes): is it a Tinker service?")
        served = [str(m.get("model_name")) for m in models if isinstance(m, dict) and m.get("model_name")]
        if model is not None and model not in served:
            return not_served(model, f"{where}", served)
        return None


    def served_models(self) -> list[str]:
        """Model names the service lists in get_server_capabilities."""
        client = self.service_client()
        try:
            # tinker 0.38's RestClient() takes no default_headers_overrides, so a RestClient built
            # directly would drop the Modal headers: keep the (deprecated) route through ServiceClient.
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*create_rest_client.*", category=FutureWarning)
                rest = client.create_rest_client()
            capabilities = rest.get_server_capabilities().result()
        finally:
            _close_quietly(client)
        return [model.model_name for model in capabilities.supported_models if model.model_name]


CAPABILITIES_PATH = "/api/v1/get_server_capabilities"  # the stock SDK's path under the base URL


def _remote_credentials(fork: bool) -> tuple[str, dict[str, str]]:
    """(api key, Modal proxy headers) from the environment; ServiceConfigError when incomplete."""
    api_key = os.environ.get("TINKER_API_KEY")
    if not api_key:
        raise ServiceConfigError("TINKER_API_KEY is not set; the remote service needs it")
    return api_key, _proxy_headers(fork)


def _proxy_headers(fork: bool) -> dict[str, str]:
    """The Modal proxy headers (the fork's with fork=True) from the environment; {} if none."""
    prefix = "RUNS_PROXY_TOKEN" if fork else "MODAL_PROXY_TOKEN"
    token_id, token_secret = os.environ.get(f"{prefix}_ID"), os.environ.get(f"{prefix}_SECRET")
    if token_id and token_secret:
        return {"Modal-Key": token_id, "Modal-Secret": token_secret}
    if token_id or token_secret:
        raise ServiceConfigError(f"set both {prefix}_ID and {prefix}_SECRET, or neither")
    return {}


def _start_embedded(checkpoint_dir: str | None, exposure: str) -> Any:
    from embedded_tinker.launch import start_server  # lazy: --plan and remote runs never need it

    options = {} if exposure == "embedded" else {"exposure": exposure}
    return start_server(port=0, checkpoint_dir=checkpoint_dir, **options)


class EarlyEmbedded:
    """The embedded backend started ahead of its run, in the background (the CLI starts it while Prefect starts):
    the handle the CLI gives the run's ServiceTarget (`RunConfig.compose(early_embedded=...)`), whose start() then
    takes this server over instead of starting one after the other. Nothing about the server differs from one
    started on demand (port 0, same checkpoint dir and exposure)."""

    def __init__(self, checkpoint_dir: str | None, exposure: str = "embedded"):
        self.checkpoint_dir, self.exposure = checkpoint_dir, exposure
        self._future: Future | None = None
        self._boot()

    def _boot(self) -> None:
        future: Future = Future()

        def boot() -> None:
            try:
                future.set_result(_start_embedded(self.checkpoint_dir, self.exposure))
            except BaseException as err:  # raised again where the run takes it over
                future.set_exception(err)

        threading.Thread(target=boot, name="embedded-early-start", daemon=True).start()
        self._future = future

    def serves(self, checkpoint_dir: str | None, exposure: str) -> bool:
        """Whether this is the server a target with this checkpoint dir and exposure would start."""
        return self._future is not None and (self.checkpoint_dir, self.exposure) == (checkpoint_dir, exposure)

    def problem(self, budget_s: float, progress: Callable[[float], None] | None = None,
                progress_every_s: float = 30.0) -> str | None:
        """Wait, within `budget_s`, until the server answers; one line when it does not, else None. A start that
        outlasted the launcher's own start-up timeout is tried again while the budget lasts (a loaded machine boots
        it slower than the launcher waits). `progress(waited seconds)` is called every `progress_every_s` while
        waiting. Checked before a run is claimed: a backend that does not start leaves nothing behind."""
        started = time.monotonic()
        deadline, said, tries = started + budget_s, started, 1
        while True:
            future = self._future
            if future is None:
                return None
            try:
                future.result(timeout=max(0.0, min(deadline, said + progress_every_s) - time.monotonic()))
                return None
            except TypeError:  # an exposure this backend does not have: the flow says so (ServiceConfigError)
                if future.done():
                    return None
            except Exception:  # noqa: BLE001 - reported as one line
                pass
            now = time.monotonic()
            error = future.exception() if future.done() else None  # (the wait's own timeout is not the start's)
            if future.done() and error is None:  # it answered just as the wait timed out
                return None
            if not future.done():  # still starting
                if now < deadline:
                    if progress is not None and now - said >= progress_every_s - 0.5:
                        said = now
                        progress(now - started)
                    continue
                reason = f"not answering after {budget_s:.0f} s"
            elif start_again(error, now < deadline):
                self._boot()
                tries += 1
                continue
            else:
                reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".rstrip(": ")
            return (f"the embedded backend did not start ({reason}; {tries} {'try' if tries == 1 else 'tries'} in "
                    f"{now - started:.0f} s): nothing was claimed; run the same command again (when the machine is "
                    "less busy)")

    def take(self) -> Any:
        """The server, now the taker's to stop, or None when its start failed (e.g. it outlasted its start-up
        timeout while the machine was busiest): then the run starts one on demand, as it would have anyway."""
        future, self._future = self._future, None
        if future is None:
            return None
        try:
            return future.result()
        except TypeError:
            raise  # an exposure this backend does not have: the on-demand start would fail the same way
        except Exception:  # noqa: BLE001 - retried on demand, where a lasting problem is raised
            return None

    def stop(self) -> None:
        """Stop the server unless a run took it over (e.g. the run stopped before its first call)."""
        future, self._future = self._future, None
        if future is None:
            return
        try:
            future.result().stop()
        except BaseException:  # noqa: BLE001 - it never started; nothing to stop
            pass


def start_again(error: BaseException, budget_left: bool) -> bool:
    """Whether an early start that failed with `error` is tried again: when the launcher gave up waiting
    (TimeoutError: the machine boots it slower than the launcher waits) and the run's budget has not."""
    return isinstance(error, TimeoutError) and budget_left


def _close_quietly(client: Any) -> None:
    try:
        client.close("success").result(timeout=CLOSE_ANSWER_SECONDS)
    except Exception:  # closing is best effort; the capabilities call already succeeded or raised
        pass


# What the embedded backend serves (its contract, docs/ARCHITECTURE.md): these names, and a local directory
# holding a checkpoint.
EMBEDDED_MODELS = ("embedded/tiny-arith", "embedded/tiny-random")


def not_served(model: str, where: str, served: list[str] | tuple[str, ...]) -> str:
    """The one line refusing a run whose model the service does not serve: outside a rehearsal the run never
    substitutes one (a substitute tests another hypothesis)."""
    return (f"{where} does not serve {model} (it serves {', '.join(served) or 'nothing'}); outside a rehearsal a "
            "run never substitutes another model: pass a --backend that serves it, or --rehearse to rehearse the "
            "spec on the embedded model (the substitution then recorded as a deviation)")


def embedded_serves(model: str) -> bool:
    return model in EMBEDDED_MODELS or os.path.isdir(model)


def closest_served_model(requested: str, served: list[str]) -> tuple[str, str | None]:
    """(model to use, deviation reason or None). Same family first, nearest size; never stops the run."""
    if requested in served:
        return requested, None
    if not served:
        raise ServiceConfigError("the service lists no served models")
    family = re.sub(r"-?\d+(\.\d+)?[BbMm]$", "", requested.split("-A")[0])
    same_family = [name for name in served if name.startswith(family)]
    if same_family:
        chosen = min(same_family, key=lambda name: abs(_size_in_b(name) - _size_in_b(requested)))
        return chosen, f"{requested} is not served; {chosen} is the closest served model of the same family"
    return served[0], f"{requested} is not served and no model of its family is; using the service's default {served[0]}"


def _size_in_b(name: str) -> float:
    match = re.search(r"(\d+(?:\.\d+)?)([BbMm])\b", name)
    if not match:
        return 0.0
    value = float(match.group(1))
    return value / 1000 if match.group(2) in "Mm" else value
