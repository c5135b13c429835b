import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenyard.parsing.json_stream import JsonStreamError, JsonValueScanner

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def scan(chunks):
    scanner = JsonValueScanner()
    out, rest = [], None
    for chunk in chunks:
        fragment, end = scanner.feed(chunk)
        out.append(fragment)
        if end >= 0:
            rest = chunk[end:]
            break
    return "".join(out), rest, scanner


@settings(max_examples=150, deadline=None)
@given(
    value=st.dictionaries(st.text(max_size=8), json_values, max_size=5),
    indent=st.sampled_from([None, 2]),
    cut=st.integers(1, 7),
)
def test_objects_stream_exactly_and_end_where_they_end(value, indent, cut):
    text = json.dumps(value, indent=indent, ensure_ascii=False) + "</tail>"
    chunks = [text[i : i + cut] for i in range(0, len(text), cut)]
    out, rest, scanner = scan(chunks)
    assert scanner.done
    assert json.loads(out) == value
    assert text.startswith(out)  # nothing rewritten
    whole, end = JsonValueScanner().feed(text)
    assert end == len(text) - len("</tail>")  # the value ends exactly where it ends


def test_raw_control_characters_in_strings_are_escaped():
    out, _, scanner = scan(['{"code": "a\n\tb"}'])
    assert out == '{"code": "a\\n\\tb"}' and json.loads(out) == {"code": "a\n\tb"}


@pytest.mark.parametrize(
    "bad", ['{"a": 1,}', '{"a" 1}', "{'a': 1}", '{"a": tru}', '{"a": 01}', '{"a": "\\x"}', "[1 2]"]
)
def test_invalid_json_raises_at_the_offending_character(bad):
    with pytest.raises(JsonStreamError):
        scanner = JsonValueScanner()
        scanner.feed(bad)
        scanner.finish()


def test_every_prefix_it_accepts_is_valid_json_prefix():
    text = '{"a": [1, 2.5e3, true, null, {"b": "x\\u00e9"}], "c": -0.5}'
    scanner = JsonValueScanner()
    out = "".join(scanner.feed(ch)[0] for ch in text)
    assert out == text and scanner.done


@settings(max_examples=150, deadline=None)
@given(
    value=st.dictionaries(st.text(max_size=8), json_values, max_size=5),
    ascii_only=st.booleans(),
    cut=st.integers(1, 5),
)
def test_take_plain_agrees_with_feed(value, ascii_only, cut):
    # The hot path (`take_plain`, then `feed` for what it declines) gives exactly
    # what `feed` alone gives: escapes split across chunks included.
    text = json.dumps(value, ensure_ascii=ascii_only)
    chunks = [text[i : i + cut] for i in range(0, len(text), cut)]
    scanner, out = JsonValueScanner(), []
    for chunk in chunks:
        if scanner.take_plain(chunk):
            out.append(chunk)
        else:
            out.append(scanner.feed(chunk)[0])
    assert scanner.done
    assert "".join(out) == scan(chunks)[0] == text


def test_take_plain_declines_what_ends_or_breaks_a_string():
    scanner = JsonValueScanner()
    scanner.feed('{"a": "x')
    assert not scanner.take_plain('y"')  # ends the string
    assert not scanner.take_plain("a\nb")  # a raw newline must be escaped by `feed`
    assert not scanner.take_plain("\\x")  # an invalid escape is `feed`'s error to raise
    assert scanner.take_plain("\\")  # a backslash whose escape comes next
    assert scanner.take_plain('"more')  # ... is that escape
    assert scanner.take_plain("\\u00e9 ok")
