"""Property: every SandboxResult.error is one of the parent's fixed sentences, whatever the code's process
wrote. The sentences are written out here (the contract), with exception and type names taken from this
interpreter's builtins and the allowed modules, not from the sandbox module."""

from __future__ import annotations

import builtins
import importlib
import json
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from experiment.selfgen import sandbox as sandbox_module
from experiment.selfgen.sandbox import SandboxError, SandboxLimits, interpret

LIMITS = SandboxLimits(timeout_s=2.0, max_output_bytes=4096)
KINDS = {"timeout", "output_limit", "no_result", "compile_error", "no_solve", "memory_limit", "exception",
         "not_an_integer", "integer_too_large"}


def _names(modules, exceptions: bool) -> list[str]:
    names = set()
    for module in modules:
        for name, obj in vars(module).items():
            if isinstance(obj, type) and not name.startswith("_") and issubclass(obj, BaseException) == exceptions:
                names.add(name)
    return sorted(names)


EXCEPTIONS = "|".join(map(re.escape, _names([builtins], True) + ["an exception of a non-builtin class"]))
TYPES = "|".join(map(re.escape, _names([builtins, *map(importlib.import_module, sandbox_module.ALLOWED_MODULES)],
                                       False) + ["NoneType", "a non-builtin type"]))
LINE = r"(?: \(line (?P<line>[1-9][0-9]*)\))?"
SENTENCES = re.compile("|".join(f"(?:{sentence})" for sentence in [
    rf"timed out after {LIMITS.timeout_s:g} s \(every process of the call killed\)",
    rf"output limit reached \({LIMITS.max_output_bytes} bytes\)",
    r"the process ended without a result \(killed by a limit or exited early\)",
    r"the result channel held no valid report",
    rf"code does not compile: (?:{EXCEPTIONS}){LINE}",
    r"the code defines no callable solve\(\)",
    r"memory limit reached \(MemoryError\)",
    rf"solve\(\) raised (?:{EXCEPTIONS}){LINE.replace('line>', 'line2>')}",
    rf"solve\(\) returned (?:{TYPES}), not int",
    r"solve\(\) returned an integer with more than 30 digits",
]))


def assert_parent_words(result, code: str) -> None:
    if result.ok:
        assert result.error is None and result.error_kind is None
        assert type(result.value) is int and abs(result.value) < 10 ** 30
        return
    assert result.value is None and result.error_kind in KINDS
    match = SENTENCES.fullmatch(result.error)
    assert match, repr(result.error)
    line = match.groupdict().get("line") or match.groupdict().get("line2")
    if line:
        assert int(line) <= code.count("\n") + 1  # a line number within the code, nothing else


def report(status: bytes, result: bytes, wait: int) -> bytes:
    return json.dumps({"status": status.hex(), "result": result.hex(), "wait": wait}).encode()


records = st.builds(lambda kind, first, second: b"%d %d %d\n" % (kind, first, second),
                    st.integers(-2, 12), st.integers(-10 ** 35, 10 ** 35), st.integers(-10, 10 ** 8))
child_bytes = st.one_of(st.binary(max_size=300), records, st.text(max_size=120).map(str.encode),
                        st.tuples(records, st.binary(max_size=20)).map(b"".join))
statuses = st.one_of(st.sampled_from([b"RC", b"R", b"P", b"", b"RCP"]), st.binary(max_size=30),
                     st.builds(lambda exception, line: b"RE %d %d\n" % (exception, line),
                               st.integers(-5, 300), st.integers(0, 10 ** 7)))
codes = st.text(max_size=200)


@settings(max_examples=300, deadline=None, database=None)
@given(child_bytes, st.integers(0, 0xFFFF), st.integers(0, 2 * LIMITS.max_output_bytes), codes)
def test_whatever_the_code_writes_the_error_is_ours(written, wait, output_bytes, code):
    """The result pipe is the code's: any bytes there give a parent-built result, and never stop the run."""
    result = interpret(report(b"RC", written, wait), False, output_bytes, 0.5, code, LIMITS)
    assert_parent_words(result, code)


@settings(max_examples=300, deadline=None, database=None)
@given(st.one_of(st.binary(max_size=400), st.builds(report, statuses, child_bytes, st.integers(-5, 1 << 17))),
       st.booleans(), st.integers(0, 2 * LIMITS.max_output_bytes), codes)
def test_whatever_arrives_the_result_is_ours_or_the_run_stops(raw, timed_out, output_bytes, code):
    """Init's report and the status pipe are ours; when they are not as written, the sandbox failed:
    SandboxError (the run stops). Either way no text from the child becomes an error."""
    try:
        result = interpret(raw, timed_out, output_bytes, 0.5, code, LIMITS)
    except SandboxError as err:
        assert not timed_out
        assert str(err).isprintable() and "tml-" not in str(err)
        return
    assert_parent_words(result, code)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="the sandbox needs root")
@settings(max_examples=8, deadline=None, database=None)
@given(child_bytes)
def test_real_calls_that_write_anything_to_the_result_pipe(written):
    sandbox = _real_sandbox()
    code = ("import os, sys\n\ndef solve():\n    os.write(sys.modules['__main__'].result_w, "
            f"{written!r})\n    os._exit(0)\n")
    result = sandbox.run(code)
    assert_parent_words(result, code)


_SANDBOXES = []


def _real_sandbox():
    if not _SANDBOXES:
        _SANDBOXES.append(sandbox_module.Sandbox(SandboxLimits(timeout_s=30.0)))
    return _SANDBOXES[0]
