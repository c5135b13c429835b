"""The one rule for JSON a client wrote (wire_json.py)."""

import gc
import json
import math

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

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


@pytest.mark.parametrize(
    "data", [b'"\\ud800"', b'"a\\udc00b"', b'{"\\udbff": 1}', b'["\\udbff\\udbff"]', b'"\xed\xa0\x80"', '"\ud800"']
)
def test_orjson_refuses_every_lone_surrogate(data):
    # What lets `loads` skip the look into orjson's strings: such a body goes to the stdlib.
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(data)
    assert "\ufffd" in json.dumps(wire_json.loads(data), ensure_ascii=False)


def stdlib_rule(data):
    """What the rule gives with the stdlib's decoder alone: its value or its error."""
    try:
        return wire_json._checked(json.loads(data), wire_json.MAX_DEPTH, None)
    except RecursionError:
        raise JsonTooDeep(wire_json.MAX_DEPTH, None) from None


def same(a, b) -> bool:
    """Equal, keys in the same order, and of the same types all the way down (1 is
    not 1.0, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def read_as_the_stdlib_reads(data) -> bool:
    outcomes = []
    for loads in (wire_json.loads, stdlib_rule):
        try:
            outcomes.append(("value", loads(data)))
        except (ValueError, JsonTooDeep) as error:
            outcomes.append(("error", type(error)))
    (ours, value), (theirs, expected) = outcomes
    return ours == theirs and (same(value, expected) if ours == "value" else value is expected)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES, st.booleans(), st.booleans())
def test_any_json_reads_as_with_the_stdlibs_decoder(value, ensure_ascii, as_bytes):
    # orjson decodes what it can: the value must be the one the stdlib would give.
    text = json.dumps(value, ensure_ascii=ensure_ascii)
    assert read_as_the_stdlib_reads(text.encode("utf-8", "surrogatepass") if as_bytes else text)


@given(st.text(alphabet=st.sampled_from('{}[],:"\\ 0123456789.eE-+tfnrulasNIy\ud800\u00e9'), max_size=30))
def test_any_text_is_read_or_refused_as_with_the_stdlibs_decoder(text):
    assert read_as_the_stdlib_reads(text)


@pytest.mark.parametrize(
    "data",
    [
        '"\\ud800"',  # orjson refuses a lone surrogate
        '["\\udfff", "\\ud83d\\ude00"]',
        "NaN",
        "[Infinity, -Infinity]",
        "1e400",
        "-1e400",
        str(2**64),  # orjson makes a float of these two
        f'{{"id": [{-(2**63) - 1}]}}',
        str(2**64 - 1),
        str(-(2**63)),
        "[1e19, -9.3e18]",
        '{"a": 1, "a": 2}',
        "[1.0, 1, -0.0, -0, 1E2, 5e-324, 2.2250738585072014e-308, 1e-400]",
        ' \t\n{"k": "v"}\r\n ',
        "[1,]",
        "{} x",
        "",
        "[" * 65 + "]" * 65,
        "[" * 2000 + "]" * 2000,  # past orjson's own limit
        json.dumps({"é": "✓"}).encode("utf-16"),
        json.dumps({"é": "✓"}).encode("utf-32-le"),
        b"\xef\xbb\xbf{}",  # a UTF-8 byte-order mark
        b'"\xed\xa0\x80"',  # a surrogate encoded in UTF-8
        b'"\xff"',
        bytearray(b'{"ids": [1, 2, 3]}'),
    ],
)
def test_where_orjson_and_the_stdlib_differ_the_stdlib_is_followed(data):
    assert read_as_the_stdlib_reads(data)


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
