"""The revision files pin code by `<repo path> sha256:<hex>`; a pin must name the file as it is.

A pinned file that changes (even a rewritten import line) makes the correctness preflight fail with
"reference_revision differs the pin": by design, since the exchange graded a different file. This
test says so before any run does, naming the file and the sha256 to record in the revision file.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"((?:experiment|embedded_tinker)/[\w/]+\.py) sha256:([0-9a-f]{64})")
PINS = sorted({(plan.name, path, digest) for plan in (REPO_ROOT / "specs").glob("*.plan.json")
               for path, digest in PIN.findall(plan.read_text())})


def test_the_gs1_revision_file_pins_its_reference():
    assert any(path.endswith("gs1_reference.py") for _, path, _ in PINS), PINS


@pytest.mark.parametrize("plan,path,digest", PINS, ids=[f"{p}:{f}" for p, f, _ in PINS])
def test_every_pinned_file_is_the_file_in_the_tree(plan, path, digest):
    actual = hashlib.sha256((REPO_ROOT / path).read_bytes()).hexdigest()
    assert actual == digest, f"{plan} pins {path} sha256:{digest}, the tree has sha256:{actual}; record a new revision"
