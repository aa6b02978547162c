"""Inline evidence as the grader reads it (experiment/grading/evidence.py, EVID-1/EVID-2): base64 is
decoded strictly, every entry is checked against its sha256. Digests are computed here with hashlib."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import pickle

import pytest

from experiment.grading.evidence import EvidenceAccess, EvidenceRowsChanged, ReadOnlyDict, ReadOnlyList

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


# ---------------------------------------------------------------- the rows handed out are read-only


def _text(name, text, **extra):
    return {"name": name, "content": text, "sha256": hashlib.sha256(text.encode()).hexdigest(), **extra}


def _rows(text):
    return EvidenceAccess({"evidence": {"files": [_text("r.jsonl", text)]}}).jsonl("r.jsonl")


def test_jsonl_rows_an_array_of_objects_or_one_object_with_observations_are_rows():
    assert _rows('{"a": 1}\n\n{"a": 2}\n') == [{"a": 1}, {"a": 2}]
    assert _rows('  [{"a": 1}, {"a": 2}]') == [{"a": 1}, {"a": 2}]
    assert _rows('{"observations": [{"a": 3}]}') == [{"a": 3}]
    assert _rows('{"a": 4}') == [{"a": 4}]  # one object on one line: one row
    assert _rows('{"observations": [{"a": 3}]}\n{"a": 5}\n') == [{"observations": [{"a": 3}]}, {"a": 5}]


@pytest.mark.parametrize("text", ['[1, 2]', '{"observations": 3}', '{"a": 1}\n[2]\n', '{"a": 1}\nnot json\n', '[{"a": 1}'])
def test_text_that_is_not_rows_of_objects_is_none(text):
    assert _rows(text) is None


def test_rows_refuse_every_change_and_copies_are_plain():
    (row,) = _rows('{"a": [1, [2]], "b": {"c": [3]}}')
    assert type(row) is ReadOnlyDict and type(row["a"]) is ReadOnlyList and type(row["a"][1]) is ReadOnlyList
    assert type(row["b"]) is ReadOnlyDict and type(row["b"]["c"]) is ReadOnlyList
    for change in (lambda: row.__setitem__("a", 1), lambda: row.pop("a"), lambda: row.update(a=2),
                   lambda: row.setdefault("z", 1), lambda: row.clear(), lambda: row["a"].append(4),
                   lambda: row["a"].sort(), lambda: row["a"].__setitem__(0, 9), lambda: row["b"]["c"].extend([1])):
        with pytest.raises(EvidenceRowsChanged, match="evidence rows are shared by every check of a grade"):
            change()
    for plain in (copy.copy(row), copy.deepcopy(row), pickle.loads(pickle.dumps(row))):
        assert type(plain) is dict and plain == {"a": [1, [2]], "b": {"c": [3]}}
        plain["a"] = 0  # a copy may be changed
    deep = copy.deepcopy(row)
    assert type(deep["a"]) is list and type(deep["a"][1]) is list and type(deep["b"]) is dict
    assert type(copy.copy(row["a"])) is list and type(pickle.loads(pickle.dumps(row["a"]))) is list
    assert row == {"a": [1, [2]], "b": {"c": [3]}}


def test_jsonl_hands_out_a_new_list_of_the_same_rows_each_call():
    access = EvidenceAccess({"evidence": {"files": [_text("r.jsonl", '{"a": 1}\n')]}})
    first, second = access.jsonl("r.jsonl"), access.jsonl("r.jsonl#frag")
    assert first == second and first is not second and first[0] is second[0]
    first.append({"b": 2})  # the list is the caller's
    assert access.jsonl("r.jsonl") == [{"a": 1}]
    assert access.jsonl(None) is None and access.jsonl("other.jsonl") is None


# ---------------------------------------------------------------- states of an entry

def test_each_state_and_its_reason():
    access = EvidenceAccess({"evidence": {"files": [
        _text("a.txt", "hi"), _text("u.txt", "hi", encoding="utf8"), _text("t.txt", "hi", encoding="text"),
        {"name": "nohash.txt", "content": "hi"},
        {"name": "p.bin", "sha256": "0" * 64}, {"name": "s.bin", "source_url": "https://x/attachments/s"},
        {**_text("e.txt", "hi"), "encoding": "latin-1"}, "not an entry", {"name": 3, "content": "x"}]}})
    for name in ("a.txt", "u.txt", "t.txt", "nohash.txt"):
        assert access.state(name) == ("usable", b"hi", "") and access.usable(name) and access.bytes(name) == b"hi"
    assert access.state("p.bin") == ("partial", None, "p.bin is retained by name and hash only, its content is not inline")
    assert access.why("s.bin") == "s.bin is retained by name and hash only (only a source_url), its content is not inline"
    assert access.state("e.txt") == ("corrupt", None, "e.txt has unknown encoding 'latin-1'")
    assert access.state("x.txt") == ("missing", None, "x.txt is not a retained evidence file")
    for ref in ("", None, 3):
        assert access.state(ref) == ("missing", None, f"no evidence reference ({ref!r})")
    assert not access.usable("p.bin") and access.json("p.bin") is None
    assert len(access.entries) == 8  # the string is no entry; an entry with a name that is no string still is one


def test_names_listed_twice_with_other_content_are_duplicates_and_the_later_entry_counts():
    one, same, other = _text("a.txt", "x", kind="log"), _text("a.txt", "x", kind="log"), _text("a.txt", "y", kind="log")
    access = EvidenceAccess({"evidence": {"files": [one, same, _text("b.txt", "z", kind="metrics"), other]}})
    assert access.duplicates == ["a.txt"]
    assert access.bytes("a.txt") == b"y" and access.sha256("a.txt") == other["sha256"]
    assert [entry["name"] for entry in access.by_kind("log")] == ["a.txt", "a.txt", "a.txt"]
    assert access.sha256("missing.txt") is None
    assert EvidenceAccess({"evidence": {"files": [one, same]}}).duplicates == []


@pytest.mark.parametrize("evidence", [None, [], {"files": None}, {"files": {"name": "a"}}])
def test_evidence_that_is_not_an_object_with_a_file_list_has_no_entries(evidence):
    access = EvidenceAccess({"evidence": evidence})
    assert access.entries == [] and access.by_name == {}


def test_json_reads_text_of_an_object_or_array():
    access = EvidenceAccess({"evidence": {"files": [_text("a.json", json.dumps([1, {"b": 2}]))]}})
    assert access.json("a.json") == [1, {"b": 2}]


def test_an_entry_without_a_text_name_does_not_hide_the_entries_after_it():
    access = EvidenceAccess({"evidence": {"files": [{"name": 3, "content": "x"}, {"content": "y"}, _text("a.txt", "hi")]}})
    assert list(access.by_name) == ["a.txt"] and access.usable("a.txt")


@pytest.mark.parametrize("encoding", ["ascii", "base32", "hex"])
def test_an_encoding_sorting_on_either_side_of_base64_is_unknown(encoding):
    content = base64.b64encode(b"hello").decode()  # would decode to the hashed bytes as base64
    assert _access(content, encoding=encoding).state("f.bin") == (
        "corrupt", None, f"f.bin has unknown encoding {encoding!r}")


def test_by_kind_is_exactly_that_kind_not_one_sorting_before_or_after_it():
    access = EvidenceAccess({"evidence": {"files": [_text("c.txt", "1", kind="config"), _text("l.txt", "2", kind="log"),
                                                    _text("m.txt", "3", kind="metrics")]}})
    assert [entry["name"] for entry in access.by_kind("log")] == ["l.txt"]


def test_a_json_evidence_file_with_a_key_written_twice_is_no_value():
    """verdict-criteria.json saying "met": true and then "met": false was read as false (Python's json keeps the last
    value) while a first-wins reader sees true; rows of a JSONL file alike. Neither is one value: not read."""
    twice = '{"criteria": [{"id": "nll_gap", "met": true, "met": false}]}'
    rows = '{"item_id": "a", "value": 1.0, "value": 0.0}\n'
    access = EvidenceAccess({"evidence": {"files": [
        {"name": n, "kind": "metrics", "content": c, "sha256": hashlib.sha256(c.encode()).hexdigest()}
        for n, c in (("criteria.json", twice), ("rows.jsonl", rows), ("once.json", twice.replace('"met": true, ', '')))]}})
    assert access.state("criteria.json")[0] == "usable" and access.json("criteria.json") is None
    assert access.jsonl("rows.jsonl") is None
    assert access.json("once.json") == {"criteria": [{"id": "nll_gap", "met": False}]}
