"""Work done a piece at a time so that the event loop gets the GIL in between
(server/offload.py, and the tool count's refusal in server/intake.py)."""

import gc
import json

import pytest
from starlette.responses import JSONResponse

from tokenyard.faults import ApiError
from tokenyard.server import offload
from tokenyard.server.intake import check_tool_count


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


def test_a_body_refused_for_its_tool_count_has_its_tools_freed_where_it_was_refused():
    namespace = {"type": "namespace", "name": "mcp", "tools": [{"type": "function", "name": "t"}] * 5_001}
    body = {"tools": [namespace, {**namespace, "tools": list(namespace["tools"])}]}
    functions = [t["tools"] for t in body["tools"]]
    with pytest.raises(ApiError, match="10,002 tools"):
        check_tool_count(body)
    assert body["tools"] == [] and functions == [[], []]
    kept = {"tools": [{"type": "function", "name": "t"}] * 10_000}
    check_tool_count(kept)
    assert len(kept["tools"]) == 10_000


def test_start_up_objects_are_frozen_out_of_full_collections():
    made_at_start_up = [{"vocab": list(range(3))} for _ in range(100)]
    before = gc.get_freeze_count()
    try:
        offload.freeze_start_up_objects()
        assert gc.get_freeze_count() >= before + len(made_at_start_up)
        tracked = {id(o) for o in gc.get_objects()}  # the generations a collection walks
        assert not any(id(o) in tracked for o in made_at_start_up)
        assert id(made_at_start_up) not in tracked
        made_later = [[]]
        assert id(made_later) in {id(o) for o in gc.get_objects()}
    finally:
        gc.unfreeze()  # the test process goes on collecting
