import pytest

from tokenyard.families.detection import BASE_CONFIG_SIGNS, CONFIG_SIGNS
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
        ("minimax-m3", "minimax-m3", "minimax_m3", "minimax_m3"),
        ("seed-oss", "seed-oss", "seed_oss", "seed_oss"),
        ("step3.5", "step3.5", "step3p5", "step3p5"),
        ("granite-4", "granite-4", None, "granite4"),
        ("apertus", "apertus", "apertus", "apertus"),
        ("cohere-command3", "cohere-command3", "cohere_command", "cohere_command3"),
        ("cohere-command4", "cohere-command4", "cohere_command", "cohere_command4"),
        ("gigachat3", "gigachat3", None, "gigachat3"),
        ("gigachat3.1", "gigachat3", None, "gigachat3"),
        ("granite-3", "granite-3", None, "granite"),
        ("hy3", "hy3", "hy_v3", "hy_v3"),
        ("lfm2.5", "lfm2", "qwen3", "lfm2"),
        ("laguna", "laguna", "qwen3", "poolside_v1"),
        ("ling-3", "ling-3", "ling3", "ling3"),
        ("muse-glimmer", "muse-glimmer", "muse_glimmer", "muse_glimmer"),
        ("minicpm5", "minicpm5", "qwen3", "minicpm5"),
        ("spark-2.5", "spark-2.5", "spark25", "spark25"),
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


def test_new_families_from_names_and_an_inkling_template_sign():
    assert detect_profile(None, None, name="MiniMaxAI/MiniMax-M3").family == "minimax-m3"
    assert detect_profile(None, None, name="ByteDance-Seed/Seed-OSS-36B-Instruct").family == "seed-oss"
    assert detect_profile(None, None, name="stepfun-ai/Step-3.5-Flash").family == "step3.5"
    assert detect_profile(None, None, name="ibm-granite/granite-4.0-h-small").family == "granite-4"
    template = "{{ '<|message_model|>' }}{% if x %}<|content_invoke_tool_json|>{% endif %}"
    assert detect_profile(None, template).family == "inkling"


def _llama_cpp_template(name: str) -> str:
    """A chat template shipped in the llama-cpp-python sdist that the fixtures fetch."""
    import tarfile

    from ..fixtures import fixtures_root

    sdist = fixtures_root() / "downloads" / "llama_cpp_python-0.3.36.tar.gz"
    if not sdist.exists():
        pytest.skip("llama-cpp-python sdist not fetched; run `python scripts/build_fixtures.py`")
    with tarfile.open(sdist) as archive:
        member = archive.extractfile(f"llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/{name}")
        assert member is not None
        return member.read().decode("utf-8")


@pytest.mark.parametrize(
    "template,family,reasoning",
    [
        # Models that answer directly must not have their answer taken for reasoning.
        ("mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistral", None),
        ("Mistral-Small-3.2-24B-Instruct-2506.jinja", "mistral", None),
        ("unsloth-mistral-Devstral-Small-2507.jinja", "mistral", None),
        # The templates of models that think in [THINK] blocks say so.
        ("mistralai-Ministral-3-14B-Reasoning-2512.jinja", "magistral", "mistral"),
        ("Kimi-K3.jinja", "kimi-k3", "kimi_k3"),
    ],
)
def test_mistral_and_magistral_told_apart_by_their_templates(template, family, reasoning):
    profile = detect_profile(None, _llama_cpp_template(template))
    assert (profile.family, profile.reasoning_parser) == (family, reasoning)
    assert profile.tool_parser == ("kimi_k3" if family == "kimi-k3" else "mistral")


def test_magistral_and_mistral_told_apart_by_name():
    assert detect_profile(None, None, name="mistralai/Magistral-Small-2509").family == "magistral"
    assert detect_profile(None, None, name="mistralai/Devstral-Small-2507").family == "mistral"
    assert detect_profile(None, None, name="moonshotai/Kimi-K3").family == "kimi-k3"


def test_qwen25_is_hermes_without_reasoning():
    for profile in (
        detect_profile(None, _llama_cpp_template("Qwen-Qwen2.5-7B-Instruct.jinja"), name="unnamed.gguf"),
        detect_profile(None, None, name="Qwen2.5 Coder 1.5B Instruct"),  # a GGUF's general.name
        detect_profile(None, None, name="Qwen/Qwen2.5-Coder-1.5B-Instruct"),
    ):
        assert (profile.family, profile.reasoning_parser, profile.tool_parser) == ("qwen2.5", None, "hermes")
    assert detect_profile(None, None, name="Qwen/Qwen3-8B").family == "qwen3", "Qwen3 is not caught by qwen2"


def test_families_without_a_public_template_from_their_names():
    for name, family in [
        ("tencent/Hunyuan-A13B-Instruct", "hunyuan-a13b"),
        ("tencent/Hy3-preview", "hy3"),
        ("baidu/ERNIE-4.5-21B-A3B-Thinking", "ernie-4.5"),
        ("internlm/Intern-S1", "intern-s1"),
        ("internlm/internlm2_5-7b-chat", "internlm2"),
        ("google/functiongemma-270m-it", "functiongemma"),
        ("rednote-hilab/dots.llm1.inst", "dots"),
        ("deepseek-ai/DeepSeek-V4.1", "deepseek-v4.1"),
        ("ai-sage/GigaChat3.5-Lightning", "gigachat3.5"),
        ("CohereLabs/command-a-plus-05-2026", "cohere-command4"),
        ("swiss-ai/Apertus-70B-2509", "apertus"),
        ("ibm-granite/granite-3.3-8b-instruct", "granite-3"),
    ]:
        assert detect_profile(None, None, name=name).family == family, name


def test_families_b_from_names_and_template_signs():
    assert detect_profile(None, None, name="inclusionAI/Ling-3.0-flash").family == "ling-3"
    assert detect_profile(None, None, name="inclusionAI/Ring-3.0").family == "ling-3"
    assert detect_profile(None, None, name="meituan-longcat/LongCat-Flash-Chat").family == "longcat"
    assert detect_profile(None, None, name="XiaomiMiMo/MiMo-V2-Flash").family == "mimo"
    assert detect_profile(None, None, name="Spark2.5").family == "spark-2.5"
    # LongCat's template names its own call tags.
    template = "{%- for tool_call in message.tool_calls %}{{- '<longcat_tool_call>\\n' }}{% endfor %}"
    assert detect_profile(None, template).family == "longcat"


def test_minimax_m1_from_its_template_sign_and_name():
    # vLLM's MiniMax-M1 template (examples/tool_chat_template_minimax_m1.jinja): the
    # assistant turn's header, then `<tool_calls>` with one JSON call per line.
    template = (
        "{{ '<beginning_of_sentence>ai name=MiniMax AI\\n<tool_calls>\\n' -}}"
        '{%- for tool_call in message.tool_calls %}{{ \'{"name": "\' + tool_call.function.name }}{% endfor %}'
    )
    profile = detect_profile(None, template)
    assert (profile.family, profile.reasoning_parser, profile.tool_parser) == ("minimax-m1", "qwen3", "minimax_m1")
    assert detect_profile(None, None, name="MiniMaxAI/MiniMax-M1-80k").family == "minimax-m1"
    assert detect_profile(None, None, name="MiniMaxAI/MiniMax-M2").family == "minimax-m2"


def test_olmo3_from_its_template_sign_and_name():
    # OLMo 3's template: tool results come back in an `environment` turn.
    template = "{% elif message['role'] == 'environment' %}{{ '<|im_start|>environment\\n' + message['content'] }}"
    assert detect_profile(None, template).family == "olmo3"
    assert detect_profile(None, None, name="allenai/Olmo-3-7B-Think").family == "olmo3"


@pytest.mark.parametrize(
    "template,family,tool",
    [
        ("LFM2-8B-A1B.jinja", "lfm2", "lfm2"),
        ("LFM2.5-Instruct.jinja", "lfm2", "lfm2"),
        ("LFM2.5-8B-A1B.jinja", "lfm2", "lfm2"),
        ("inclusionai-ling-3.0-flash.jinja", "ling-3", "ling3"),
        ("Spark2.5.jinja", "spark-2.5", "spark25"),
    ],
)
def test_families_detected_from_llama_cpp_templates(template, family, tool):
    profile = detect_profile(None, _llama_cpp_template(template))
    assert (profile.family, profile.tool_parser) == (family, tool)


def test_step3_and_xlam_from_names():
    assert detect_profile(None, None, name="stepfun-ai/step3").family == "step3"
    assert detect_profile(None, None, name="stepfun-ai/Step-3.5-Flash").family == "step3.5"
    assert detect_profile(None, None, name="Salesforce/Llama-xLAM-2-8b-fc-r").family == "xlam"
    assert detect_profile(None, None, name="openbmb/MiniCPM5-1B").family == "minicpm5"


def _checkpoint(tmp_path, config: dict, folder: str = "checkpoint-1200"):
    """A model folder with an uninformative name and the given config.json."""
    import json

    path = tmp_path / folder
    path.mkdir()
    (path / "config.json").write_text(json.dumps(config))
    return path


@pytest.mark.parametrize("value", sorted(CONFIG_SIGNS))
def test_a_config_field_alone_names_the_family(tmp_path, value):
    # As an architecture or as the model type, the value is read exactly.
    family = CONFIG_SIGNS[value]
    as_architecture = _checkpoint(tmp_path, {"architectures": [value], "model_type": "unknown"}, "a")
    as_model_type = _checkpoint(tmp_path, {"model_type": value}, "b")
    assert detect_profile(as_architecture).family == family
    assert detect_profile(as_model_type).family == family


@pytest.mark.parametrize("value", sorted(BASE_CONFIG_SIGNS))
def test_a_base_architecture_is_the_last_word(tmp_path, value):
    assert detect_profile(_checkpoint(tmp_path, {"model_type": value})).family == BASE_CONFIG_SIGNS[value]


def test_config_fields_in_their_precedence(tmp_path):
    # A name says more than an architecture (fine-tunes keep their base's).
    named = _checkpoint(tmp_path, {"architectures": ["GptOssForCausalLM"]}, "Seed-OSS-36B")
    assert detect_profile(named).family == "seed-oss"
    # Template text a family alone writes beats the config.
    assert detect_profile(_checkpoint(tmp_path, {"model_type": "gpt_oss"}, "a"), "<seed:tool_call>").family == (
        "seed-oss"
    )
    # A specific architecture beats syntax shared with other families...
    qwen_like = "{{ '<tool_call>' }}{{ '<think>' }}"
    assert detect_profile(_checkpoint(tmp_path, {"model_type": "smollm3"}, "b"), qwen_like).family == "smollm3"
    # ...which beats a base architecture a distill keeps (R1 distills are Qwen2's).
    r1 = "{{ '<｜tool▁sep｜>' }}{{ '<think>' }}"
    assert detect_profile(_checkpoint(tmp_path, {"model_type": "qwen2"}, "c"), r1).family == "deepseek-r1"
    # A group's refinements still read the template: Command A and R7B share `cohere2`.
    cohere = _checkpoint(tmp_path, {"architectures": ["Cohere2ForCausalLM"]}, "d")
    assert detect_profile(cohere, "{{ '<|START_TEXT|>' }}").family == "cohere-command4"
    assert detect_profile(cohere).family == "cohere-command3"
    # `_name_or_path` is a name; a config that is not an object is no config.
    assert detect_profile(_checkpoint(tmp_path, {"_name_or_path": "ibm/granite-4.0"}, "e")).family == "granite-4"
    bad = tmp_path / "f"
    bad.mkdir()
    (bad / "config.json").write_text("[1, 2]")
    assert detect_profile(bad).family == "generic"


def test_every_config_sign_names_a_record():
    for family in (*CONFIG_SIGNS.values(), *BASE_CONFIG_SIGNS.values()):
        assert family in PROFILES
    assert not set(CONFIG_SIGNS) & set(BASE_CONFIG_SIGNS)
