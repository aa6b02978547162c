"""Headless Chromium driven over the DevTools protocol (websocket), for checking the Prefect UI.

Not a test module: tests/e2e/test_local_gs1_run.py loads it by path. Chromium comes from the
Debian package `chromium` (.ci/run installs it when missing).
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx


def chromium_binary() -> str | None:
    return next((path for name in ("chromium", "chromium-browser", "google-chrome")
                 if (path := shutil.which(name))), None)


class Browser:
    """One headless Chromium with one page; `evaluate(js)` returns the value of a JS expression."""

    def __init__(self, width: int = 1400, height: int = 1800):
        binary = chromium_binary()
        if binary is None:
            raise RuntimeError("chromium is not installed (apt-get install chromium; .ci/run does it)")
        self.profile = Path(tempfile.mkdtemp(prefix="ui-chromium-"))
        self.process = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.2)
        port = int(port_file.read_text().split()[0])
        pages = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
        page = next(p for p in pages if p.get("type") == "page")
        from websockets.sync.client import connect

        self.socket = connect(page["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024, open_timeout=30)
        self._id = 0
        self.call("Page.enable")
        self.call("Runtime.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self.socket.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv(timeout=120))
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def open(self, url: str) -> float:
        """Navigate and wait for the load event; returns seconds taken."""
        started = time.monotonic()
        self.call("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete'", timeout=60)
        return time.monotonic() - started

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"JS error: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60) -> float:
        """Poll a JS expression until it is truthy; returns seconds waited (raises on timeout)."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if self.evaluate(f"Boolean({expression})"):
                return time.monotonic() - started
            time.sleep(0.25)
        raise TimeoutError(f"not true after {timeout} s: {expression}")

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.socket.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


PNG_IMAGES = "[...document.images].filter(i => i.src.startsWith('data:image/png'))"


def summary_pictures(server, flow_run_id: str, summary_key: str, screenshot: Path, expected: int) -> list[list[int]]:
    """Open the run's summary artifact in the Prefect UI; wait until its `expected` PNG pictures (data
    URIs) have loaded; save a screenshot; return their natural [width, height]."""
    artifacts = server.api("POST", "/artifacts/filter", json={"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}})
    summary = next(artifact for artifact in artifacts if artifact["key"] == summary_key)
    with Browser() as browser:
        browser.open(f"{server.url}/artifacts/artifact/{summary['id']}")
        # loaded (natural size) and laid out on the page (a rendered box), as a person sees them
        browser.wait_for(f"{PNG_IMAGES}.length >= {expected} && {PNG_IMAGES}.every(i => i.complete && i.naturalWidth > 0"
                         " && i.getBoundingClientRect().width > 0 && i.getBoundingClientRect().height > 0)", timeout=90)
        sizes = browser.evaluate(f"{PNG_IMAGES}.map(i => [i.naturalWidth, i.naturalHeight])")
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        browser.screenshot(screenshot)
    return sizes
