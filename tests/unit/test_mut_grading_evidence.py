"""Inline evidence as the grader reads it (experiment/grading/evidence.py, EVID-1/EVID-2): base64 is
decoded strictly, every entry is checked against its sha256. Digests are computed here with hashlib."""

from __future__ import annotations

import base64
import hashlib

from experiment.grading.evidence import EvidenceAccess

HELLO_SHA = hashlib.sha256(b"hello").hexdigest()


def _access(content, encoding="base64", digest=HELLO_SHA):
    return EvidenceAccess({"evidence": {"files": [
        {"name": "f.bin", "kind": "log", "content": content, "encoding": encoding, "sha256": digest}]}})


def test_valid_base64_with_the_right_digest_is_usable():
    assert _access(base64.b64encode(b"hello").decode()).state("f.bin") == ("usable", b"hello", "")


def test_base64_with_characters_outside_the_alphabet_is_corrupt_not_silently_skipped():
    # "aGVsbG8=" is b"hello"; a lenient decoder would drop the "*" and accept it
    state, data, why = _access("aGVs*bG8=").state("f.bin#fragment")
    assert (state, data, why) == ("corrupt", None, "f.bin is not valid base64")


def test_text_content_that_does_not_hash_to_its_sha256_is_corrupt():
    state, data, why = _access("hello!", encoding="utf-8").state("f.bin")
    assert (state, data) == ("corrupt", None) and "does not hash to its recorded sha256" in why


def _file(data: bytes):
    return EvidenceAccess({"evidence": {"files": [
        {"name": "f.json", "kind": "log", "content": base64.b64encode(data).decode(), "encoding": "base64",
         "sha256": hashlib.sha256(data).hexdigest()}]}})


def test_json_of_bytes_that_are_not_utf8_is_none():
    access = _file(b"\xff\xfe{}")
    assert access.usable("f.json") and access.json("f.json") is None and access.jsonl("f.json") is None


def test_json_that_does_not_parse_is_none_and_good_json_is_read():
    assert _file(b"{not json").json("f.json") is None
    assert _file(b'{"a": 1}').json("f.json") == {"a": 1}
