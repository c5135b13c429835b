"""Work done a piece at a time so that the event loop gets the GIL in between
(server/offload.py)."""

import json

import pytest
from starlette.responses import JSONResponse

from tokenyard.server import offload


@pytest.mark.parametrize(
    "value",
    [
        {"count": 5, "tokens": [1, 2, 3, 4, 5], "token_strs": ["a", "é", "\U0001f600", '"', "\\"]},
        {"prompt": 'abc😀défgh\n"ijk"\tlmnop\u2028'},
        {"nested": {"list": list(range(9)), "empty": [], "s": "", "n": None, "f": 1.5, "b": True}},
        list(range(7)),
        "x" * 11,
    ],
)
def test_json_in_pieces_is_what_json_response_sends(monkeypatch, value):
    monkeypatch.setattr(offload, "JSON_SLICE", 2)
    monkeypatch.setattr(offload, "JSON_SLICE_CHARS", 3)
    assert offload.json_in_pieces(value) == JSONResponse(value).body
    assert json.loads(offload.json_in_pieces(value)) == value


def test_json_in_pieces_refuses_what_json_response_refuses():
    for bad in ({"x": float("nan")}, {"x": object()}):
        with pytest.raises((ValueError, TypeError)):
            JSONResponse(bad)
        with pytest.raises((ValueError, TypeError)):
            offload.json_in_pieces(bad)


def test_free_in_pieces_empties_the_list(monkeypatch):
    monkeypatch.setattr(offload, "FREE_SLICE", 3)
    values = list(range(10))
    offload.free_in_pieces(values)
    assert values == []
