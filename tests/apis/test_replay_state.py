"""Replay state that replicas share through the sealing key alone: a call's id carries
the JSON style its arguments are restored in; ids the model wrote fall back to memory."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tokenyard.apis.replay_state import STYLES, ReplayState, argument_style
from tokenyard.sealing import ReasoningSeal

KEY = bytes(range(32))


def replica(key: bytes = KEY, model: str = "m") -> ReplayState:
    return ReplayState(ReasoningSeal(key)).for_model(model)


def issue(state: ReplayState, prefix: str = "toolu_") -> str:
    return state.call_id_prefix(prefix) + "0123456789abcdef00"


def test_an_id_prefix_is_the_same_in_every_release():
    # Clients echo ids back turns later, past an upgrade: the tag's algorithm is fixed.
    assert replica().call_id_prefix("toolu_") == "toolu_tyd1243d9"


def test_styles_are_recognised():
    assert argument_style('{"a": 1, "b": [1, 2]}') == "d"
    assert argument_style('{"a":1,"b":[1,2]}') == "c"
    assert argument_style('{"a": "\\u00e9"}') == "a"
    assert argument_style('{"a":"\\u00e9"}') == "b"
    assert argument_style('{"a":1, "b": 2}') is None  # mixed spacing: no style
    assert argument_style('{"a": 1.0}') is None or json.dumps({"a": 1.0}) == '{"a": 1.0}'
    assert argument_style("not json") is None


def test_an_id_carries_the_last_style_to_any_replica_and_survives_openclaws_rewriting():
    a, b = replica(), replica()
    first = issue(a)
    a.remember_call(first, '{"command":"ls"}')  # the model writes compact JSON
    second = issue(a)  # predicted from the last call
    stripped = "".join(ch for ch in second if ch.isalnum())
    for state in (a, b):
        assert state.restore_call(stripped, {"command": "pwd"}, '{"command": "pwd"}') == '{"command":"pwd"}'
    # The first id predicted the templates' style: every replica renders it alike.
    assert a.restore_call(first, {"command": "ls"}, '{"command": "ls"}') == '{"command": "ls"}'
    assert b.restore_call(first, {"command": "ls"}, '{"command": "ls"}') == '{"command": "ls"}'


def test_ascii_text_keeps_a_prediction_it_fits():
    state = replica()
    state.remember_call(issue(state), '{"a": "\\u00e9"}')  # escapes non-ASCII: style a
    state.remember_call(issue(state), '{"a": 1}')  # fits d and a alike
    assert "tya" in state.call_id_prefix("toolu_")


def test_the_prediction_is_per_served_model():
    root = ReplayState(ReasoningSeal(KEY))
    coder, fast = root.for_model("coder"), root.for_model("fast")
    coder.remember_call(issue(coder), '{"a":1}')
    assert "tyc" in coder.call_id_prefix("toolu_") and "tyd" in fast.call_id_prefix("toolu_")


def test_a_verbatim_echo_in_no_reserialised_shape_is_kept():
    state = replica()
    call_id = issue(state)
    spaced = '{\n  "command": "ls"\n}'  # what Codex sends back, as it got it
    assert state.restore_call(call_id, {"command": "ls"}, spaced) == spaced


def test_ids_that_are_not_ours_are_not_read_as_styled():
    theirs = replica(key=bytes(32))
    ours = replica()
    foreign = issue(theirs)
    ours.remember_call(foreign, '{"x":1}')  # a call under an id we cannot read
    assert ours.restore_call(foreign, {"x": 1}, '{"x": 1}') == '{"x":1}'  # from memory
    assert replica().restore_call(foreign, {"x": 1}, '{"x": 1}') == '{"x": 1}'  # another replica: as sent
    assert ours.restore_call("toolu_01TyC0ffee", {"x": 1}, '{"x": 1}') == '{"x": 1}'


def test_the_models_own_ids_fall_back_to_memory():
    a, b = replica(), replica()
    a.remember_call("functions.Bash:0", '{"command":"ls"}')
    assert a.restore_call("functions.Bash:0", {"command": "ls"}, '{"command": "ls"}') == '{"command":"ls"}'
    assert b.restore_call("functions.Bash:0", {"command": "ls"}, '{"command": "ls"}') == '{"command": "ls"}'
    assert a.restore_call("functions.Bash:0", {"command": "rm"}, '{"command": "rm"}') == '{"command": "rm"}'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(st.dictionaries(st.text(max_size=5), json_values, max_size=4), st.sampled_from(sorted(STYLES)))
def test_any_value_written_in_a_style_comes_back_byte_for_byte_on_another_replica(value, code):
    a, b = replica(), replica()
    a.remember_call(issue(a), STYLES[code].dumps({"k": "é"}))  # the model's style, learnt
    call_id = issue(a)
    text = STYLES[code].dumps(value)
    a.remember_call(call_id, text)
    echoed = json.loads(text)
    # Anthropic echoes an object (serialised as the default), OpenClaw's Responses compactly.
    for sent in (json.dumps(echoed, ensure_ascii=False), json.dumps(echoed, separators=(",", ":"), ensure_ascii=False)):
        assert b.restore_call(call_id, echoed, sent) == text
