"""SEC-1 reads a parquet table's values whatever the file is named (experiment.grading.secrets.searchable_text).

A parquet table's pages are compressed, so a credential in one is not in its bytes. Both secret scans (the record
layer's SEC-1 in general.py and the run-dir layer's secrets.* checks) decoded only files named `*.parquet`, so a
table saved as `metrics.txt` (or with no suffix) hid a credential from both: on that code the tests below marked
"under another name" failed (the credential was not found); the survivors `suffix == ".parquet"` -> `>=` / `<=`
of the mutation run pointed at it (helper rd4). Now a table is told by its magic bytes, in one place for both scans.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from grading_contexts.general import context as _ctx

from experiment.grading import general
from experiment.grading.run_dir import RunFiles, Validator
from experiment.grading.secrets import PARQUET_MAGIC, searchable_text

SECRET = "tml-" + "q7" * 20  # a Tinker key's shape (tml-...), made here, never a real one


def _table(path: Path, value: str) -> bytes:
    # no column statistics: they keep the smallest and largest value uncompressed in the footer
    pd.DataFrame([{"note": value}, {"note": "x" * 50}]).to_parquet(path, compression="gzip", write_statistics=False)
    data = path.read_bytes()
    assert data.startswith(PARQUET_MAGIC) and value.encode() not in data  # only its decoded values hold it
    return data


@pytest.mark.parametrize("name", ["metrics.parquet", "metrics.txt", "metrics.json", "metrics"])
def test_a_tables_values_are_searched_under_any_name(tmp_path, name):
    data = _table(tmp_path / name, SECRET)
    assert SECRET in searchable_text(data)


@pytest.mark.parametrize("data", [b"not a table " + SECRET.encode(), PARQUET_MAGIC + b" broken " + SECRET.encode(),
                                  PARQUET_MAGIC, b""])
def test_a_file_that_is_no_table_is_searched_as_its_bytes(data):
    assert searchable_text(data) == data.decode("utf-8", errors="replace")


@pytest.mark.parametrize("name", ["t.parquet", "t.txt", "t"])
def test_sec_1_finds_a_credential_in_a_table_under_another_name(tmp_path, name):
    (tmp_path / "tables").mkdir()
    _table(tmp_path / "tables" / name, SECRET)
    ctx = _ctx({"status": "succeeded"})
    ctx.run_dir = tmp_path
    issues = general.SEC_1(ctx)
    assert [(i.rule, i.message.split(" contains ")[0]) for i in issues] == [("SEC-1", str(Path("tables", name)))]


@pytest.mark.parametrize("name", ["t.parquet", "t.txt", "t"])
def test_the_run_dir_scan_finds_a_credential_value_in_a_table_under_another_name(tmp_path, name, monkeypatch):
    monkeypatch.setenv("TINKER_API_KEY", SECRET)
    (tmp_path / "tables").mkdir()
    _table(tmp_path / "tables" / name, SECRET)
    files = RunFiles(run_dir=tmp_path, result={}, events=[], bad_event_lines=[], manifest={"files": []},
                      plan={}, spec={}, setup_problems=[])
    validator = Validator(files)
    validator.check_no_credentials()
    assert [(p.check, p.message) for p in validator.report.problems] == [
        ("secrets.value", f"{Path('tables', name)} contains the value of TINKER_API_KEY")]
