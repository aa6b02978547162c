"""End-to-end tests: whole runs through the CLI, a Prefect server, a browser. Every test here is
`slow` (minutes); CI runs them too, `pytest -m "not slow"` leaves them out."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.slow)
