"""Chat templates: HF semantics, cross-checked against transformers on real templates."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from tests.fixtures import TOKENIZER_FAMILIES, load_tokenizer, model_dir
from tokenyard.faults import TemplateError
from tokenyard.prompting.template import ChatTemplate

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city — 天気",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]


def agent_turns(arguments_as: str | None) -> list[dict]:
    """system + user + assistant(reasoning, tool call) + tool result + assistant + user."""
    arguments = '{"city": "東京", "days": 3}' if arguments_as == "string" else {"city": "東京", "days": 3}
    return [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Tokyo? 🌸"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "The user wants weather; call the tool.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 21}'},
        {"role": "assistant", "content": "It is 21°C.", "reasoning_content": "Got 21."},
        {"role": "user", "content": "Thanks! And tomorrow?"},
    ]


SIMPLE = [{"role": "user", "content": "Hi"}]

# Families whose template renders in HF's immutable sandbox. kimi-k2-thinking's
# llama.cpp copy mutates lists, see test_list_mutating_template_fails_like_transformers.
RENDERABLE = [f for f in TOKENIZER_FAMILIES if f != "kimi-k2-thinking"]

KWARG_VARIANTS = [
    {},
    {"enable_thinking": False},
    {"enable_thinking": True},
    {"thinking": True, "reasoning_effort": "high"},
    {"thinking": False},
]


@pytest.fixture(scope="module")
def hf_tokenizer():
    transformers = pytest.importorskip("transformers")
    cache = {}

    def build(family: str):
        if family not in cache:
            ours = load_tokenizer(family)
            hf = transformers.PreTrainedTokenizerFast(
                tokenizer_file=str(model_dir(family) / "tokenizer.json"),
                bos_token=ours.bos_token,
                eos_token=ours.eos_token,
            )
            hf.chat_template = ours.chat_template
            cache[family] = hf
        return cache[family]

    return build


def chat_template(family: str) -> ChatTemplate:
    tokenizer = load_tokenizer(family)
    return ChatTemplate(tokenizer.chat_template, bos_token=tokenizer.bos_token, eos_token=tokenizer.eos_token)


@pytest.mark.parametrize("family", RENDERABLE)
def test_matches_transformers_apply_chat_template(family, hf_tokenizer):
    template, hf = chat_template(family), hf_tokenizer(family)
    now = datetime.now()  # gpt-oss renders today's date; transformers reads the clock
    cases = [
        (agent_turns(template.arguments_as), TOOLS, True),
        (agent_turns(template.arguments_as), None, False),
        (SIMPLE, None, True),
    ]
    for messages, tools, generation_prompt in cases:
        for kwargs in KWARG_VARIANTS:
            expected = hf.apply_chat_template(
                messages, tools=tools, add_generation_prompt=generation_prompt, tokenize=False, **kwargs
            )
            assert template.render(messages, tools, generation_prompt, now=now, **kwargs) == expected, kwargs


@pytest.mark.parametrize("family", RENDERABLE)
def test_rendered_markers_encode_as_single_tokens(family):
    tokenizer, template = load_tokenizer(family), chat_template(family)
    prompt = template.render(agent_turns(template.arguments_as), TOOLS, True, now=datetime(2026, 11, 21))
    ids = tokenizer.encode(prompt)
    assert tokenizer.decode(ids) == prompt
    for token_id, text in tokenizer.added_tokens.items():
        if text in prompt and not any(
            text != other and text in other and other in prompt for other in tokenizer.added_tokens.values()
        ):
            assert ids.count(token_id) == prompt.count(text), text


def test_qwen3_literal_prompts():
    template = chat_template("qwen3")
    assert template.render(SIMPLE, add_generation_prompt=True) == (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )
    assert template.render(SIMPLE, add_generation_prompt=True, enable_thinking=False) == (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    # Reasoning of the turn after the last user message is replayed; the tool call's
    # mapping arguments are serialised with transformers' tojson (non-ASCII kept).
    prompt = template.render(agent_turns("object")[:4], add_generation_prompt=True)
    assert (
        "<|im_start|>assistant\n<think>\nThe user wants weather; call the tool.\n</think>\n\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "東京", "days": 3}}\n</tool_call>'
        '<|im_end|>\n<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response><|im_end|>\n'
        "<|im_start|>assistant\n"
    ) in prompt


def test_deepseek_v31_literal_prompt():
    template = chat_template("deepseek-v3.1")
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}]
    assert template.render(messages, add_generation_prompt=True) == (
        "<｜begin▁of▁sentence｜>S<｜User｜>Hi<｜Assistant｜><think></think>"
    )
    assert template.render(messages, add_generation_prompt=True, thinking=True) == (
        "<｜begin▁of▁sentence｜>S<｜User｜>Hi<｜Assistant｜><think>"
    )


def test_smollm2_gguf_template_literal_prompt():
    tokenizer = load_tokenizer("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    template = ChatTemplate(tokenizer.chat_template)
    assert template.render(SIMPLE, add_generation_prompt=True) == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )


def test_list_mutating_template_fails_like_transformers(hf_tokenizer):
    template, hf = chat_template("kimi-k2-thinking"), hf_tokenizer("kimi-k2-thinking")
    assert template.render(SIMPLE, None, True) == hf.apply_chat_template(
        SIMPLE, add_generation_prompt=True, tokenize=False
    )
    with pytest.raises(TemplateError, match="append"):
        template.render(agent_turns("object"), TOOLS, True)
    with pytest.raises(Exception, match="append"):
        hf.apply_chat_template(agent_turns("object"), tools=TOOLS, add_generation_prompt=True, tokenize=False)


# What each real template's source says about its inputs.
TRAITS = {
    # family: (reads_reasoning_content, arguments_as, accepts_string_arguments, reads_kwargs)
    "qwen3": (True, "object", True, {"enable_thinking"}),
    "qwen3-coder": (False, "object", False, set()),
    "qwen3.5": (True, "object", False, {"enable_thinking"}),
    "deepseek-v3": (False, "string", True, set()),
    "deepseek-v3.1": (False, "object", False, {"enable_thinking", "thinking"}),
    "deepseek-v3.2": (True, "object", True, {"enable_thinking", "thinking"}),
    "deepseek-v4": (
        True,
        "object",
        True,
        {"enable_thinking", "thinking", "reasoning_effort", "drop_thinking", "keep_reasoning"},
    ),
    "llama-3.1": (False, "object", False, set()),
    "gpt-oss": (False, "object", False, {"reasoning_effort"}),
    "glm-4.7": (True, "object", False, {"enable_thinking", "clear_thinking"}),
    "kimi-k2": (False, "object", False, set()),
    "kimi-k2-thinking": (True, "object", True, set()),
}


@pytest.mark.parametrize("family", sorted(TRAITS))
def test_template_traits_of_real_templates(family):
    traits = chat_template(family).traits
    assert (
        traits.reads_reasoning_content,
        traits.arguments_as,
        traits.accepts_string_arguments,
        set(traits.reads_kwargs),
    ) == TRAITS[family]
    assert traits.reads_current_time == (family == "gpt-oss")


def test_smollm2_template_never_renders_tool_arguments():
    tokenizer = load_tokenizer("smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    assert ChatTemplate(tokenizer.chat_template).arguments_as is None


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ m.tool_calls[0].function.arguments | tojson }}", "object"),
        ("{% for k, v in tc.arguments | items %}{{ k }}{% endfor %}", "object"),
        ("{% for k, v in tc['arguments'].items() %}{{ k }}{% endfor %}", "object"),
        ("{{ tc.arguments['city'] }}", "object"),
        ("{% set args = f['arguments'] %}{% for k in args.keys() %}{{ k }}{% endfor %}", "object"),
        ("{% set a = f.arguments or {} %}{% set b = a %}{{ b | tojson }}", "object"),
        ("{% macro show(x) %}{{ x | tojson }}{% endmacro %}{{ show(tc.function.arguments) }}", "object"),
        ("{% set args = f.get('arguments', {}) %}{{ args.items() | list }}", "object"),
        ("{{ 'call ' + tc['function']['arguments'] + '\\n' }}", "string"),
        ("{{ tc.function.arguments }}", "string"),
        ("{{ 'x' ~ tc.arguments }}", "string"),
        ("{{ messages[0].content }}", None),
    ],
)
def test_arguments_as_detection(source, expected):
    assert ChatTemplate(source).arguments_as == expected


def test_detection_of_reasoning_and_kwargs():
    template = ChatTemplate(
        "{% if m.reasoning_content %}{{ m.reasoning_content }}{% endif %}"
        "{% if enable_thinking is defined and not enable_thinking %}x{% endif %}"
        "{{ reasoning_effort | default('medium') }}"
    )
    assert template.reads_reasoning_content
    assert template.reads_kwargs == {"enable_thinking", "reasoning_effort"}
    assert ChatTemplate("{% if 'reasoning_content' in m %}y{% endif %}").reads_reasoning_content
    assert not ChatTemplate("{% set reasoning_content = '' %}{{ reasoning_content }}").reads_reasoning_content


# --------------------------------------------------------- environment semantics


def render(source: str, **variables) -> str:
    return ChatTemplate(source).render(variables.pop("messages", []), **variables)


def test_tojson_is_transformers_variant():
    value = {"b": "東京 <&>", "a": [1, None, True]}
    assert render("{{ v | tojson }}", v=value) == '{"b": "東京 <&>", "a": [1, null, true]}'
    assert render("{{ v | tojson(indent=2) }}", v={"k": 1}) == '{\n  "k": 1\n}'
    assert render("{{ v | tojson(ensure_ascii=True) }}", v="東") == '"\\u6771"'
    assert render("{{ v | tojson(separators=(',', ':')) }}", v={"k": [1, 2]}) == '{"k":[1,2]}'


def test_block_whitespace_and_loop_controls():
    source = (
        "{% for m in messages %}\n  {% if m == 2 %}{% continue %}{% endif %}\n"
        "  {% if m == 4 %}{% break %}{% endif %}\n{{ m }},\n{% endfor %}"
    )
    assert render(source, messages=[1, 2, 3, 4, 5]) == "1,\n3,\n"


def test_raise_exception_becomes_template_error_with_its_message():
    with pytest.raises(TemplateError, match="^Conversation roles must alternate$"):
        render("{{ raise_exception('Conversation roles must alternate') }}")


def test_inputs_that_do_not_fit_the_template_are_template_errors():
    template = chat_template("deepseek-v3")  # concatenates arguments as a string
    with pytest.raises(TemplateError, match="TypeError"):
        template.render(agent_turns("object"), TOOLS, True)


def test_compile_errors_are_template_errors():
    with pytest.raises(TemplateError, match="does not compile"):
        ChatTemplate("{% if %}")


def test_strftime_now_formats_the_given_time_and_never_reads_the_clock():
    source = "{{ strftime_now('%d %b %Y') }}"
    assert render(source, now=datetime(2026, 11, 21)) == "21 Nov 2026"
    with pytest.raises(TemplateError, match="current date"):
        render(source)


def test_python_string_methods_namespace_and_generation_tag():
    source = (
        "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}"
        "{{ ns.n }}|{{ s.strip().lstrip('<').rstrip('>').split(',')[1].title() }}"
        "|{{ s.startswith(' <') }}|{{ s.replace('a', 'o') }}"
        "|{% generation %}kept{% endgeneration %}"
    )
    assert render(source, messages=[1, 2], s=" <a,bc> ") == "2|Bc|True| <o,bc> |kept"


def test_from_json_filter_and_bos_eos_variables():
    template = ChatTemplate(
        "{{ bos_token }}{{ ('{\"k\": 1}' | from_json).k }}{{ eos_token }}", bos_token="<s>", eos_token="</s>"
    )
    assert template.render([]) == "<s>1</s>"


def test_mutating_lists_is_refused_like_hf():
    with pytest.raises(TemplateError, match="unsafe"):
        render("{% set x = [] %}{{ x.append(1) }}")


def test_compiled_templates_are_shared_per_source():
    source = "{{ messages | length }}"
    assert ChatTemplate(source)._template is ChatTemplate(source)._template


# Attribute reads a template (or a hostile one from the hub) may try, on the types a
# chat template is given: plain dicts, strings, lists, and a dict subclass.
SANDBOX_PROBES = [
    "{{ m.role }}",
    "{{ m.missing is defined }}",
    "{{ m.items }}",
    "{{ m.get('role') }}",
    "{{ m._hidden }}",
    "{{ m.__class__ }}",
    "{{ m.__init__ }}",
    "{{ m.update({'role': 'x'}) }}",
    "{{ m.pop('role') }}",
    "{{ m.setdefault }}",
    "{{ m['role'] }}",
    "{{ s.startswith('he') }}",
    "{{ s.upper() }}",
    "{{ s._x }}",
    "{{ s.__class__ }}",
    "{{ s.__class__.__mro__ }}",
    "{{ s.format }}",
    "{{ s.format(1) }}",
    "{{ s['upper'] }}",
    "{{ s.missing }}",
    "{{ l.append(1) }}",
    "{{ l.pop }}",
    "{{ l.index(1) }}",
    "{{ x.role }}",
    "{{ x.json_text }}",
    "{{ x.__dict__ }}",
    "{{ x.clear() }}",
    "{{ m.pop('role') }}",
    "{{ m.setdefault('k', 1) }}",
    "{{ m.keys() | list }}",
    "{{ l.__len__() }}",
    "{{ l.sort() }}",
    "{{ t.index(2) }}",
    "{{ t.count(1) }}",
    "{{ t.__class__ }}",
    "{{ t._x }}",
    "{% for i in l %}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{% endfor %}",
    "{% for i in l %}{{ loop.__class__ }}{{ loop._iterator }}{% endfor %}",
    "{% set ns = namespace(a=1) %}{% set ns.a = 2 %}{{ ns.a }}{{ ns.__init__ }}{{ ns._Namespace__attrs }}",
]


@pytest.mark.parametrize("source", SANDBOX_PROBES)
def test_sandbox_decides_as_jinjas_immutable_sandbox(source):
    """The template environment takes faster paths for dicts, lists, tuples and strings; every
    decision (value, undefined, or refusal) equals jinja's own immutable sandbox."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    from tokenyard.prompting.template import _ENVIRONMENT, ExactJson

    def outcome(environment):
        context = {
            "m": {"role": "user", "_hidden": "h", "items": "shadowed"},
            "s": "hello {0}",
            "l": [1, 2],
            "t": (1, 2),
            "x": ExactJson({"role": "tool"}, '{"role": "tool"}'),
        }
        try:
            text = environment.from_string(source).render(context)
        except Exception as error:  # a refusal must be the same refusal
            return "error", type(error).__name__, str(error)
        return "ok", re.sub("0x[0-9a-f]+", "0x…", text)  # a bound method's repr names its object

    stock = ImmutableSandboxedEnvironment()
    assert type(_ENVIRONMENT) is not ImmutableSandboxedEnvironment
    for _ in range(2):  # the second round reads what the first remembered
        assert outcome(_ENVIRONMENT) == outcome(stock)


def test_a_template_reads_every_global_jinja_and_we_provide():
    # The template's globals are a plain copy of the environment's (not jinja's chain).
    source = (
        "{% set ns = namespace(n=0) %}{% for i in range(3) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"
        "{{ dict(a=1)['a'] }}{% set c = cycler('x', 'y') %}{{ c.next() }}{{ c.next() }}"
        "{% set j = joiner('|') %}{{ j() }}{{ j() }}{{ lipsum(1, False, 2, 3) | length > 0 }}"
        "{{ strftime_now('%Y') }}{% if fail %}{{ raise_exception('refused') }}{% endif %}"
    )
    template = ChatTemplate(source)
    assert template.render([], now=datetime(2026, 1, 2)) == "31xy|True2026"
    with pytest.raises(TemplateError, match="refused"):
        template.render([], now=datetime(2026, 1, 2), fail=True)
