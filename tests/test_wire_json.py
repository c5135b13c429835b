"""The one rule for JSON a client wrote (wire_json.py)."""

import gc
import json

import pytest

from tokenyard import wire_json
from tokenyard.faults import JsonTooDeep


@pytest.mark.parametrize("as_bytes", [False, True])
def test_lone_surrogates_become_u_fffd_in_values_and_keys(as_bytes):
    text = json.dumps({"k\ud800": ["a\udfff", {"x": "\ud83d cut"}], "pair": "\U0001f600", "é": "\u00e9"})
    value = wire_json.loads(text.encode() if as_bytes else text)
    assert value == {"k\ufffd": ["a\ufffd", {"x": "\ufffd cut"}], "pair": "\U0001f600", "é": "é"}


def test_a_long_string_is_searched_a_slice_at_a_time(monkeypatch):
    monkeypatch.setattr(wire_json, "SCAN_CHARS", 4)
    for text, fixed in [
        ("abcdéfg\ud800", "abcdéfg\ufffd"),  # in the last slice
        ("ab\udfffcdéfgh", "ab\ufffdcdéfgh"),  # in the first
        ("abcdéfgh\U0001f600", "abcdéfgh\U0001f600"),  # a pair, joined: nothing to replace
    ]:
        assert wire_json.loads(json.dumps({"k": [text], "t": text})) == {"k": [fixed], "t": fixed}
        assert wire_json.loads(json.dumps(text)) == fixed


def test_keys_that_become_equal_keep_the_last_value_in_the_first_place():
    assert list(wire_json.loads('{"a\\ud800": 1, "b": 2, "a\\udc00": 3}').items()) == [("a\ufffd", 3), ("b", 2)]


def test_utf8_encoded_surrogates_in_bytes_become_u_fffd():
    assert wire_json.loads(b'["a\xed\xa0\xbdb", "\xed\x95\x9c"]') == ["a\ufffdb", "\ud55c"]  # Hangul stays


def test_deep_json_is_refused_not_taken_for_text():
    for text in ("[" * 100_000, "[" * 65 + "]" * 65):
        with pytest.raises(JsonTooDeep, match="arguments: JSON is nested more than 64 levels"):
            wire_json.loads(text, where="arguments")
    assert not issubclass(JsonTooDeep, ValueError)
    assert wire_json.loads("[" * 64 + "]" * 64) is not None
    with pytest.raises(ValueError):
        wire_json.loads("not json")


PIECEWISE_CASES = [
    "{}",
    ' {"a": [1, 2 , {"b":[3]}], "c" : "x", "d":[ ], "a":[true]} \n',
    '{"k": "\\ud800", "tools": [{"name": "x"}, {"name": "y"}]}',
    '{"a":1,}',
    '{"a":[1,]}',
    '{"a":1} x',
    '{"a" 1}',
    '{"a":[1 2]}',
    '{"a":[',
    "[1]",
]


@pytest.mark.parametrize("text", PIECEWISE_CASES)
def test_a_body_decoded_in_pieces_is_what_json_loads_gives(monkeypatch, text):
    try:
        expected = wire_json.loads(text)  # small: decoded whole
    except ValueError:
        expected = ValueError
    monkeypatch.setattr(wire_json, "PIECEWISE_BYTES", 0)
    for data in (text, text.encode()):
        if expected is ValueError:
            with pytest.raises(ValueError):
                wire_json.loads(data)
        else:
            assert wire_json.loads(data) == expected
    with pytest.raises(JsonTooDeep):
        wire_json.loads('{"tools": [' + "[" * 100_000 + "]}")


def test_a_large_bodys_containers_are_out_of_the_collectors_sight(monkeypatch):
    # JSON holds no cycles: the collector could only walk a large body, never free it.
    text = json.dumps({"tools": [{"function": {"name": "t", "parameters": {"properties": {}}}}] * 3, "n": [[1], 2]})
    small = wire_json.loads(text)
    assert gc.is_tracked(small) and gc.is_tracked(small["tools"][0])  # a small body: as json.loads made it
    monkeypatch.setattr(wire_json, "PIECEWISE_BYTES", 0)
    large = wire_json.loads(text)
    assert large == small
    containers = [large, large["tools"], large["n"], large["n"][0]]
    for tool in large["tools"]:
        containers += [tool, tool["function"], tool["function"]["parameters"]]
    assert not any(gc.is_tracked(c) for c in containers)
    # Changed later, a dict that takes a container is watched again.
    large["tools"][0]["cycle"] = [large["tools"][0]]
    assert gc.is_tracked(large["tools"][0])


def test_a_large_body_that_is_not_an_object_is_checked_and_untracked_whole(monkeypatch):
    monkeypatch.setattr(wire_json, "PIECEWISE_BYTES", 0)
    value = wire_json.loads('[{"k": "a\\ud800"}, [1]]')
    assert value == [{"k": "a\ufffd"}, [1]]
    assert not any(gc.is_tracked(c) for c in (value, value[0], value[1]))
    with pytest.raises(JsonTooDeep):
        wire_json.loads("[" * 65 + "]" * 65)


@pytest.mark.parametrize("depth", [63, 64, 65])
@pytest.mark.parametrize("shape", ['{{"a": [{inner}]}}', '{{"a": {inner}}}', '{{"a": [1, {{"b": {inner}}}]}}'])
def test_a_body_decoded_in_pieces_is_refused_at_the_same_depth(monkeypatch, depth, shape):
    outer = shape.count("[") + shape.count("{{")  # levels around the inner lists
    inner = "[" * (depth - outer) + "]" * (depth - outer)
    text = shape.format(inner=inner)
    outcomes = []
    for size in (1 << 30, 0):  # decoded whole, then in pieces
        monkeypatch.setattr(wire_json, "PIECEWISE_BYTES", size)
        try:
            outcomes.append(wire_json.loads(text))
        except JsonTooDeep:
            outcomes.append(JsonTooDeep)
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0] is JsonTooDeep) == (depth > 64)
