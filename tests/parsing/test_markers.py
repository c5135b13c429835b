"""MarkerSet, the marker finder under every parser, against a brute-force oracle."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenyard.parsing.markers import MarkerSet

MARKERS = ("to=self<|message|>", "<|eom|>", "<tool_call>", "<tool_calls>", "t")
ALPHABET = "to=self<|message|>eomtool_call x\n"


def oracle_trigger(text: str, pos: int) -> int | None:
    """The first position at or after `pos` where a marker starts, or where the text
    ends in a proper beginning of one."""
    for i in range(pos, len(text)):
        rest = text[i:]
        if any(rest.startswith(m) or m.startswith(rest) for m in MARKERS):
            return i
    return None


def oracle_held(text: str) -> int:
    return max(
        (len(text) - i for i in range(len(text)) if any(m.startswith(text[i:]) and m != text[i:] for m in MARKERS)),
        default=0,
    )


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40), st.integers(min_value=0, max_value=5))
def test_trigger_finds_exactly_the_places_a_marker_could_be(text: str, pos: int) -> None:
    markers = MarkerSet(MARKERS)
    match = markers.trigger(text, pos)
    assert (match.start() if match else None) == oracle_trigger(text, pos)
    assert markers.could_start(text, pos) == (oracle_trigger(text, pos) is not None)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=40))
def test_held_suffix_is_the_longest_proper_beginning_of_a_marker(text: str) -> None:
    markers = MarkerSet(MARKERS)
    assert markers.held_suffix(text) == oracle_held(text)


def test_prose_with_a_markers_first_letter_is_not_a_place_to_look() -> None:
    markers = MarkerSet(("to=self<|message|>", "<|eom|>"))
    assert markers.trigger(" the cat sat on the mat.") is None
    assert markers.trigger(" going to") is not None  # `to` may grow into `to=self…`
    assert markers.trigger("x<|e") is not None and markers.trigger("x<|z") is None


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET + "<", max_size=40))
def test_text_without_the_lead_character_starts_no_marker(text: str) -> None:
    # The hot paths skip the trigger where the markers' one first character is absent.
    same_lead = MarkerSet(("<tool_call>", "<tool_calls>", "<|eom|>"))
    assert same_lead.lead == "<"
    if "<" not in text:
        assert same_lead.trigger(text) is None
    # Markers with different first characters have no lead: "" is in every text,
    # so the trigger always decides.
    mixed = MarkerSet(MARKERS)
    assert mixed.lead == ""
    assert mixed.lead in text
    # A letter is in most prose: testing for it first would only add a test.
    assert MarkerSet(("to=self", "tool")).lead == ""
