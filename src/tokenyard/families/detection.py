"""How a model is matched to its family record, with an explicit precedence.

1. `TEMPLATE_SIGNS`: text only one family's chat template holds, most specific first.
2. `NAME_SIGNS`: patterns over the model's names (the served name, the folder,
   config.json's `_name_or_path`).
3. `CONFIG_SIGNS`: config.json's `architectures` (each, in order), then its
   `model_type`, matched exactly: values only one family's checkpoints carry.
   After the names: a name says more than an architecture.
4. `GENERIC_TEMPLATE_SIGNS`: syntax several families share (a DeepSeek-R1 distill
   writes DeepSeek V3's calls), read after the names and configs so a specific one
   wins.
5. `BASE_CONFIG_SIGNS`: base architectures that fine-tunes in other formats keep
   (a DeepSeek-R1 distill is a `Qwen2ForCausalLM`): the last word, when nothing
   else spoke.

A sign names a family, or a group that `REFINEMENTS` splits by more template text:
the first needle present picks the family ("" is always present). A sign may be
several needles that must all be present. Pure data; prompting/profiles.py reads it.
"""

from __future__ import annotations

# Chat-template fingerprints, most specific first.
TEMPLATE_SIGNS: tuple[tuple[str, str], ...] = (
    ("<|channel|>", "gpt-oss"),
    ("｜DSML｜", "deepseek-dsml"),
    ("<|content_invoke_tool_json|>", "inkling"),
    ("<|tools_prefix|>", "apertus"),
    ("<|START_ACTION|>", "cohere-command3"),
    ("<|START_OF_TURN_TOKEN|>", "command-r-plus"),
    ("<|role_sep|>", "gigachat3"),
    # MiniCPM 5's template also splits content on a `<tool_sep>` of its own.
    ('<param name="', "minicpm5"),
    ("<tool_sep", "hy3"),
    ("]<]minimax[>[", "minimax-m3"),
    ("<minimax:tool_call>", "minimax-m2"),
    ("<beginning_of_sentence>ai name=", "minimax-m1"),
    ("<seed:tool_call>", "seed-oss"),
    ("<|im_start|>tool_response", "step3.5"),
    ("<|start_of_role|>", "granite-4"),
    ("<|tool_calls_section_begin|>", "kimi-k2"),
    ("<|open|>", "kimi-k3"),
    ("<|tool_call_start|>", "lfm2"),
    ("<|tool_list_start|>", "lfm2"),
    ("List of tools: [", "lfm2"),
    ("<|plamo:", "plamo3"),
    ("<assistant>", "laguna"),
    ("<role>HUMAN</role>", "ling-3"),
    ("<longcat_tool_call>", "longcat"),
    ("<atem:function_calls>", "muse-glimmer"),
    ("<|im_start|>environment", "olmo3"),
    ("<|Bot|>", "spark-2.5"),
    ("<arg_key>", "glm-4.7"),
    ("Use the function", "functionary-v3.1"),
    (">>>all", "functionary-v3.2"),
    ("<function=", "qwen3-coder"),
    ("You are a function calling AI model", "hermes"),
    ("Reasoning Mode", "smollm3"),
    ("You are MiMo", "mimo-vl"),
    ("<sep>", "reka"),
    ("<tool_calls>[", "apriel"),
    ("<|begin|>assistant", "solar-open"),
    ("functools[", "firefunction-v2"),
    ("<TOOLCALL>", "nemotron"),
)

# Syntax several families share: a model's name says which of them it is (a
# DeepSeek-R1 distill is not DeepSeek V3.1), so these are read after the names.
GENERIC_TEMPLATE_SIGNS: tuple[tuple[str | tuple[str, ...], str], ...] = (
    ("<｜tool▁sep｜>", "deepseek-v3.1"),
    ("<|python_tag|>", "llama-3"),
    ("<|start_header_id|>", "llama-3"),
    ("[TOOL_CALLS]", "mistral"),
    ("<start_of_turn>", "gemma"),
    ("<|turn>", "gemma"),
    ("<|assistant|>", "phi"),
    (("<tool_call>", "<think>"), "qwen3"),
    (("<tool_call>", "You are Qwen"), "qwen2.5"),
)

NAME_SIGNS: tuple[tuple[str, str], ...] = (
    (r"gpt-?oss", "gpt-oss"),
    (r"deepseek-?v4\.?1", "deepseek-v4.1"),
    (r"deepseek-?v4", "deepseek-v4"),
    (r"deepseek-?v3\.?2", "deepseek-v3.2"),
    (r"deepseek-?v3\.?1", "deepseek-v3.1"),
    (r"deepseek-?r1", "deepseek-r1"),
    (r"deepseek-?v3", "deepseek-v3"),
    (r"kimi-?k3", "kimi-k3"),
    (r"kimi-?k2\.?5", "kimi-k2.5"),
    (r"kimi-?k2", "kimi-k2"),
    (r"glm-?4\.?[67]", "glm-4.7"),
    (r"glm-?4\.?5", "glm-4.5"),
    (r"minimax-?m3", "minimax-m3"),
    (r"minimax-?m1", "minimax-m1"),
    (r"minimax", "minimax-m2"),
    (r"seed-?oss", "seed-oss"),
    (r"step-?3\.?[57]", "step3.5"),
    (r"granite-?4", "granite-4"),
    (r"inkling", "inkling"),
    (r"apertus", "apertus"),
    (r"command-?r7b", "cohere-command3"),
    (r"command-?a|cohere2", "cohere-command4"),
    (r"dots\.?llm", "dots"),
    (r"ernie-?4\.?5", "ernie-4.5"),
    (r"functiongemma", "functiongemma"),
    (r"gigachat-?3\.?5", "gigachat3.5"),
    (r"gigachat", "gigachat3"),
    (r"granite-?3", "granite-3"),
    (r"hunyuan-?a13b", "hunyuan-a13b"),
    (r"hy-?4|hunyuan-?v4", "hy4"),
    (r"hy-?3|hunyuan", "hy3"),
    (r"intern-?s1", "intern-s1"),
    (r"internlm", "internlm2"),
    (r"k2-?horizon", "k2-horizon"),
    (r"lfm-?2", "lfm2"),
    (r"laguna|poolside", "laguna"),
    (r"plamo-?3", "plamo3"),
    (r"\b(?:ling|ring)-?3", "ling-3"),
    (r"longcat", "longcat"),
    (r"mimo-?v2", "mimo"),
    (r"minicpm-?5", "minicpm5"),
    (r"muse-?glimmer", "muse-glimmer"),
    (r"olmo-?3", "olmo3"),
    (r"spark-?2\.?5", "spark-2.5"),
    (r"step-?3\b", "step3"),
    (r"xlam", "xlam"),
    (r"qwen3\.[56]", "qwen3.5"),
    (r"qwen3-?coder", "qwen3-coder"),
    (r"qwen3", "qwen3"),
    (r"qwen2", "qwen2.5"),
    (r"nemotron.*nano", "nemotron-nano"),
    (r"nemotron", "nemotron"),
    (r"hermes-?[23]", "hermes"),
    (r"firefunction", "firefunction-v2"),
    (r"smollm-?3", "smollm3"),
    (r"mimo-?vl", "mimo-vl"),
    (r"reka", "reka"),
    (r"apriel.*(?:1\.6|thinker)", "apriel-thinker"),
    (r"apriel", "apriel"),
    (r"solar-?open", "solar-open"),
    (r"command-?r", "command-r-plus"),
    (r"functionary.*v?3\.?2", "functionary-v3.2"),
    (r"functionary", "functionary-v3.1"),
    (r"phi-?[34]", "phi"),
    (r"llama-?4", "llama-4"),
    (r"llama-?3", "llama-3"),
    (r"magistral|ministral.*reasoning", "magistral"),
    (r"mistral|ministral|devstral", "mistral"),
    (r"gemma", "gemma"),
    (r"smollm", "smollm2"),
)

# config.json values that mean one family (architectures and model_type spellings).
CONFIG_SIGNS: dict[str, str] = {
    "GptOssForCausalLM": "gpt-oss",
    "gpt_oss": "gpt-oss",
    "DeepseekV32ForCausalLM": "deepseek-v3.2",
    "deepseek_v32": "deepseek-v3.2",
    "kimi_k2": "kimi-k2",
    "MiniMaxM2ForCausalLM": "minimax-m2",
    "minimax_m2": "minimax-m2",
    "MiniMaxM1ForCausalLM": "minimax-m1",
    "minimax_m1": "minimax-m1",
    "SeedOssForCausalLM": "seed-oss",
    "seed_oss": "seed-oss",
    "SmolLM3ForCausalLM": "smollm3",
    "smollm3": "smollm3",
    "Olmo3ForCausalLM": "olmo3",
    "olmo3": "olmo3",
    "ApertusForCausalLM": "apertus",
    "apertus": "apertus",
    "Ernie4_5ForCausalLM": "ernie-4.5",
    "Ernie4_5_MoeForCausalLM": "ernie-4.5",
    "ernie4_5": "ernie-4.5",
    "ernie4_5_moe": "ernie-4.5",
    "HunYuanMoEV1ForCausalLM": "hunyuan-a13b",
    "hunyuan_v1_moe": "hunyuan-a13b",
    "Lfm2ForCausalLM": "lfm2",
    "Lfm2MoeForCausalLM": "lfm2",
    "lfm2": "lfm2",
    "lfm2_moe": "lfm2",
    "GraniteMoeHybridForCausalLM": "granite-4",
    "granitemoehybrid": "granite-4",
    "Cohere2ForCausalLM": "cohere-command3",
    "cohere2": "cohere-command3",
    "CohereForCausalLM": "command-r-plus",
    "cohere": "command-r-plus",
    "InternLM2ForCausalLM": "internlm2",
    "internlm2": "internlm2",
    "Dots1ForCausalLM": "dots",
    "dots1": "dots",
    "Llama4ForConditionalGeneration": "llama-4",
    "llama4": "llama-4",
    "Step3VLForConditionalGeneration": "step3",
    "step3_vl": "step3",
    "LongcatFlashForCausalLM": "longcat",
    "longcat_flash": "longcat",
}

# Base architectures: what a checkpoint is when neither its template, its names
# nor a specific config value says more.
BASE_CONFIG_SIGNS: dict[str, str] = {
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3",
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3",
    "Qwen2ForCausalLM": "qwen2.5",
    "qwen2": "qwen2.5",
    "MistralForCausalLM": "mistral",
    "mistral": "mistral",
    "Gemma2ForCausalLM": "gemma",
    "Gemma3ForCausalLM": "gemma",
    "Gemma3ForConditionalGeneration": "gemma",
    "gemma2": "gemma",
    "gemma3": "gemma",
    "gemma3_text": "gemma",
    "Phi3ForCausalLM": "phi",
    "phi3": "phi",
}


REFINEMENTS: dict[str, tuple[tuple[str, str], ...]] = {
    # V3.2 wraps calls in `function_calls`; V4 in `tool_calls` (its template
    # assembles that marker, so it is not a literal).
    "deepseek-dsml": (("function_calls", "deepseek-v3.2"), ("", "deepseek-v4")),
    "qwen3-coder": (("<think>", "qwen3.5"),),
    "kimi-k2": (("<think>", "kimi-k2.5"),),  # from the template or config's kimi_k2
    # Granite 3 writes `<|tool_call|>[...]`, Granite 4 `<tool_call>`.
    "granite-4": (("<tool_call>", "granite-4"), ("", "granite-3")),
    # Command R7B and Command A share the `cohere2` architecture.
    "cohere-command3": (("<|START_TEXT|>", "cohere-command4"),),
    "mistral": (("[THINK]", "magistral"),),
    "apriel": (("Here are my reasoning steps", "apriel-thinker"),),
    # V3.1 switches thinking with `thinking`; R1 (and its distills) always think;
    # V3 never does.
    "deepseek-v3.1": (("thinking is defined", "deepseek-v3.1"), ("<think>", "deepseek-r1"), ("", "deepseek-v3")),
}
