"""Every rule the code, tests and docs cite resolves inside the repository (docs/contract-rules.md).

A citation is a rule id (`GEN-3`, `EVAL-2`, ...); a reference to a text outside the repository
("contract section 4", "contract-details A-4.4") is not allowed in code, tests or docs.
"""

from __future__ import annotations

import re
from pathlib import Path

from suite import REPO_ROOT

RULES_FILE = REPO_ROOT / "docs" / "contract-rules.md"
FAMILIES = ("RUN", "GEN", "EVID", "SEC", "EVAL", "LOSS", "DEC", "ADAPT", "REST", "CORR", "FEAS", "GA", "ACT", "CAP")
CITATION = re.compile(r"\b(?:" + "|".join(FAMILIES) + r")-\d+\b")
DEFINITION = re.compile(r"^- \*\*((?:" + "|".join(FAMILIES) + r")-\d+)\*\*", re.MULTILINE)
OUTSIDE_REFERENCE = re.compile(r"contract section \d|contract-details|\bA-\d+\.(?:\d+|x)\b")
SCANNED = ("experiment", "flows", "tasks", "embedded_tinker", "tests", "tools", "benchmarks", "deployments", "docs")


def scanned_files() -> list[Path]:
    files = [REPO_ROOT / "README.md"]
    for folder in SCANNED:
        files += [p for p in (REPO_ROOT / folder).rglob("*") if p.suffix in {".py", ".md", ".toml", ".sh", ".yaml"}]
    return [p for p in files if p != RULES_FILE and p != Path(__file__)]


def defined_rules() -> set[str]:
    return set(DEFINITION.findall(RULES_FILE.read_text()))


def unresolved_citations(text: str, defined: set[str]) -> set[str]:
    return set(CITATION.findall(text)) - defined


def test_the_rules_file_defines_each_id_once():
    ids = DEFINITION.findall(RULES_FILE.read_text())
    assert len(ids) > 80
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


def test_the_checks_see_a_bad_citation():
    # control: an id that is not defined and a reference outside the repository are both found
    defined = defined_rules()
    assert unresolved_citations("see GEN-3 and GEN-99", defined) == {"GEN-99"}
    assert OUTSIDE_REFERENCE.search("(contract section 4; contract-details A-4.4)")


def test_every_cited_rule_id_is_defined():
    defined = defined_rules()
    unresolved = {}
    for path in scanned_files():
        missing = unresolved_citations(path.read_text(errors="replace"), defined)
        if missing:
            unresolved[str(path.relative_to(REPO_ROOT))] = sorted(missing)
    assert not unresolved


def test_nothing_cites_a_text_outside_the_repository():
    outside = {}
    for path in scanned_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE_REFERENCE.search(line):
                outside[f"{path.relative_to(REPO_ROOT)}:{number}"] = line.strip()[:120]
    assert not outside
