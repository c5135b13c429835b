import pytest

from tokenyard.prompting.profiles import PROFILES, detect_profile, profile_by_name

from ..fixtures import load_tokenizer, model_dir


@pytest.mark.parametrize(
    "family,expected,reasoning,tool",
    [
        ("qwen3", "qwen3", "qwen3", "hermes"),
        ("qwen3-coder", "qwen3-coder", None, "qwen3_coder"),
        ("qwen3.5", "qwen3.5", "qwen3", "qwen3_coder"),
        ("deepseek-v3", "deepseek-v3", None, "deepseek_v3"),
        ("deepseek-v3.1", "deepseek-v3.1", "deepseek_v3_1", "deepseek_v3_1"),
        ("deepseek-v3.2", "deepseek-v3.2", "deepseek_v3_2", "deepseek_v3_2"),
        ("deepseek-v4", "deepseek-v4", "deepseek_v4", "deepseek_v4"),
        ("llama-3.1", "llama-3", None, "llama3_json"),
        ("gpt-oss", "gpt-oss", "gpt_oss", "harmony"),
        ("glm-4.7", "glm-4.7", "glm45", "glm47"),
        ("kimi-k2", "kimi-k2", None, "kimi_k2"),
        ("kimi-k2-thinking", "kimi-k2.5", "kimi_k25", "kimi_k2"),
    ],
)
def test_detected_from_real_templates(family, expected, reasoning, tool):
    profile = detect_profile(model_dir(family), load_tokenizer(family).chat_template)
    assert (profile.family, profile.reasoning_parser, profile.tool_parser) == (expected, reasoning, tool)


def test_smollm2_gguf_template_is_chatml_with_hermes_tools():
    tokenizer = load_tokenizer("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    assert detect_profile(None, tokenizer.chat_template, name="SmolLM2-135M-Instruct").family == "smollm2"


def test_detected_from_names_without_a_template(tmp_path):
    folder = tmp_path / "whatever"
    folder.mkdir()
    (folder / "config.json").write_text(
        '{"model_type": "deepseek_v3", "_name_or_path": "deepseek-ai/DeepSeek-R1-0528"}'
    )
    assert detect_profile(folder).family == "deepseek-r1"
    assert detect_profile(None, None, name="Qwen/Qwen3-Coder-30B-A3B-Instruct").family == "qwen3-coder"
    assert detect_profile(None, None, name="unknown-model").family == "generic"


def test_overrides_and_lookup():
    profile = profile_by_name("QWEN3").with_overrides(tool_parser="qwen3_coder")
    assert profile.tool_parser == "qwen3_coder" and profile.reasoning_parser == "qwen3"
    with pytest.raises(ValueError, match="known: .*gpt-oss"):
        profile_by_name("qwen9")


def test_every_profile_names_parsers_that_exist():
    from tokenyard.parsing.reasoning.parser import reasoning_parser_names
    from tokenyard.parsing.registry import tool_parser_names

    for profile in PROFILES.values():
        assert profile.reasoning_parser is None or profile.reasoning_parser in reasoning_parser_names()
        assert profile.tool_parser is None or profile.tool_parser in tool_parser_names(), profile.tool_parser


# The parts of Qwen2.5(-Coder)-Instruct's chat template that identify it.
QWEN25_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- else %}"
    "{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}For each function call, return a json object with function name and arguments within "
    '<tool_call></tool_call> XML tags:\\n<tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}'
    "\\n</tool_call><|im_end|>"
)


def test_qwen25_is_hermes_without_reasoning():
    for profile in (
        detect_profile(None, QWEN25_TEMPLATE, name="unnamed.gguf"),
        detect_profile(None, None, name="Qwen2.5 Coder 1.5B Instruct"),  # a GGUF's general.name
        detect_profile(None, None, name="Qwen/Qwen2.5-Coder-1.5B-Instruct"),
    ):
        assert (profile.family, profile.reasoning_parser, profile.tool_parser) == ("qwen2.5", None, "hermes")
    assert detect_profile(None, None, name="Qwen/Qwen3-8B").family == "qwen3", "Qwen3 is not caught by qwen2"
