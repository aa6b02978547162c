"""How large a file the grader reads: checked on the file's size (a stat) before any byte of it is read.

`python -m flows.validate` reads result.json whole (JSON has no streaming reader in the standard library),
then every file of a run directory (events.jsonl line by line, tables, evidence files, each file once for the
secret scan). Without a cap, a 1 GB file took the grader to 5.2 GB of memory (issue 47, G1). With it, a file
past its cap is refused in milliseconds, one line, exit 2, and what is read is bounded by the caps.

The caps are above anything the pipeline writes, so no record of a run is refused:
- result.json: at most MAX_EVIDENCE_TOTAL_BYTES (40 MiB) of evidence is carried inline, and JSON's worst
  escape of a byte is 6 characters (\\u00XX, json.dumps's ensure_ascii); 6 x 40 MiB + 16 MiB for the rest
  of RESULT is 256 MiB. (A seed spec's wiring rehearsal writes 2-4 MB.)
- any other file of a run directory (events.jsonl, tables/*.parquet, evidence/*): 256 MiB. Evidence past
  the inline caps is kept on disk (RESULT lists it as partial), and the events repeat every RESULT update's
  values (a wiring rehearsal: 0.1-0.3 MB).
This module reads nothing itself and imports nothing from the pipeline (experiment.run): the caps are the
grader's own statement, and the store's caps are restated here, not imported.
"""

from __future__ import annotations

from pathlib import Path

MIB = 1024 * 1024
MAX_RESULT_BYTES = 256 * MIB
MAX_RUN_FILE_BYTES = 256 * MIB


def oversized_input(path: Path, run_dir: Path | None) -> str | None:
    """One line naming the first file past its cap (`path`: the result.json to read; `run_dir`: its run
    directory, whose every file the grader reads), else None. Only sizes are read (stat)."""
    problem = _past_cap(path, MAX_RESULT_BYTES, "a RESULT")
    if problem or run_dir is None:
        return problem
    for file in sorted(run_dir.rglob("*")):
        if file != path:
            problem = _past_cap(file, MAX_RUN_FILE_BYTES, "a file of a run directory")
            if problem:
                return problem
    return None


def _past_cap(path: Path, cap: int, what: str) -> str | None:
    try:
        if not path.is_file():
            return None
        size = path.stat().st_size
    except OSError:
        return None  # unreadable: said where it is read
    if size <= cap:
        return None
    return (f"{path} is {size:,} bytes; the grader reads at most {cap // MIB} MiB for {what} (more than the "
            "pipeline writes), so it was not read")
