"""A family's stop texts end its turns as its real templates write them: between an
assistant answer and the next user message, each llama.cpp template (its detected
family's record) writes one of the record's stop texts, or the tokenizer's EOS; and
an end-of-generation token a template writes at the end of an assistant turn is
one of them (else the model's every reply would carry it, or run on past it)."""

from __future__ import annotations

import pytest

from tokenyard.families.catalog import FAMILIES
from tokenyard.prompting.profiles import detect_profile

from ..parsing.real_templates import REAL_TEMPLATES
from ..parsing.template_turns import EOS, _render, llama_cpp_templates, render_turn
from ..parsing.wire_examples import TOOL_EXAMPLES

# Templates whose history does not show the text that ends generation.
SHOWN_OTHERWISE = {
    "openai-gpt-oss-120b.jinja": "history writes `<|end|>` where generation ends with `<|return|>`",
    "GigaChat3-10B-A1.8B.jinja": "messages are separated by `<|message_sep|>`; generation ends with the EOS `</s>`",
    "GigaChat3.1-10B-A1.8B.jinja": "messages are separated by `<|message_sep|>`; generation ends with the EOS `</s>`",
    "upstage-Solar-Open-100B.jinja": "history writes `<|end|>` where an answer ends at the engine's EOS",
}
# llama.cpp's end-of-generation token texts (`llama_vocab::impl::load`, the names it
# promotes to end-of-generation whatever a model's metadata says).
END_OF_GENERATION = (
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
)  # fmt: skip
# ... less `<|end|>` in the vocabularies where it closes a message of a turn still
# being written (harmony's, Solar Open's): llama.cpp drops it there too.
END_CLOSES_A_MESSAGE = (("<|return|>", "<|call|>"), ("<|flush|>", "<|calls|>"))
UNRENDERED = (
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
    "fireworks-ai-llama-3-firefunction-v2.jinja",
    "llama-cpp-deepseek-r1.jinja",
)


@pytest.mark.parametrize("name", sorted(REAL_TEMPLATES))
def test_the_template_ends_a_turn_with_a_stop_text_of_its_family(name):
    template = llama_cpp_templates()[name]
    profile = detect_profile(None, template)
    if not profile.stop:
        pytest.skip("the family declares no stop text: its tokenizer's EOS ends a turn")
    if name in SHOWN_OTHERWISE or name in UNRENDERED:
        pytest.skip(SHOWN_OTHERWISE.get(name, "transformers does not render this template's plain history"))
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "ANSWER"},
        {"role": "user", "content": "NEXT"},
    ]
    full = _render(template, messages, False, {})
    end = full[full.rfind("ANSWER") + len("ANSWER") : full.rfind("NEXT")]
    assert any(stop in end for stop in (*profile.stop, EOS)), f"{name}: {end!r} holds none of {profile.stop}"


@pytest.mark.parametrize("calls", [False, True], ids=["answer", "calls"])
@pytest.mark.parametrize("name", sorted(REAL_TEMPLATES))
def test_an_end_of_generation_token_ending_a_template_turn_is_a_stop_text(name, calls):
    template = llama_cpp_templates()[name]
    profile = detect_profile(None, template)
    turn = render_turn(template, ("\0",), calls)  # nothing cut: the turn as the template ends it
    if turn is None or (calls and not turn.calls):
        pytest.skip("the template renders no such turn")
    ends = [token for token in END_OF_GENERATION if turn.output.rstrip().endswith(token)]
    if any(set(pair) & set(profile.stop) for pair in END_CLOSES_A_MESSAGE):
        ends = [token for token in ends if token != "<|end|>"]
    assert set(ends) <= set(profile.stop), f"{name}: the turn ends with {ends}; the family stops on {profile.stop}"


# Upstage's own vLLM parser for Solar Open reads an answer's text, `<|flush|>`, then
# its calls, in one turn.
TEXT_THEN_CALLS = {
    "solar_open": "Checking the weather.<|flush|>" + TOOL_EXAMPLES["solar_open"][1].removeprefix("<|begin|>assistant"),
}


@pytest.mark.parametrize(
    "family", [f for f in FAMILIES if f.stop and f.tool_format in TOOL_EXAMPLES], ids=lambda f: f.name
)
def test_no_stop_text_cuts_a_call_turn_before_its_end(family):
    """A stop text inside a call turn (text, then the calls) would end the turn there
    and lose its calls: every stop text a family declares is at most where its turn ends."""
    turns = [TOOL_EXAMPLES[family.tool_format][1], TEXT_THEN_CALLS.get(family.tool_format, "")]
    for turn in filter(None, turns):
        for stop in family.stop:
            at = turn.find(stop)
            assert at in (-1, len(turn) - len(stop)), f"{family.name}: {stop!r} inside its call turn {turn!r}"
