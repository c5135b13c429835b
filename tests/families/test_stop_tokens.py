"""A family's stop texts end its turns as its real templates write them: between an
assistant answer and the next user message, each llama.cpp template (its detected
family's record) writes one of the record's stop texts, or the tokenizer's EOS."""

from __future__ import annotations

import pytest

from tokenyard.prompting.profiles import detect_profile

from ..parsing.real_templates import REAL_TEMPLATES
from ..parsing.template_turns import EOS, _render, llama_cpp_templates

# Templates whose history does not show the text that ends generation.
SHOWN_OTHERWISE = {
    "openai-gpt-oss-120b.jinja": "history writes `<|end|>` where generation ends with `<|return|>`",
    "GigaChat3-10B-A1.8B.jinja": "messages are separated by `<|message_sep|>`; generation ends with the EOS `</s>`",
    "GigaChat3.1-10B-A1.8B.jinja": "messages are separated by `<|message_sep|>`; generation ends with the EOS `</s>`",
}
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
