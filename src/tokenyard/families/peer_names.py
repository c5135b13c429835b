"""The parser names vLLM, SGLang and Dynamo users already type, and what each is in
tokenyard, so `--reasoning-parser` / `--tool-call-parser` flags carry over unchanged.

Collected from the peers' own registries (vLLM 0.32 `vllm/tool_parsers/__init__.py`
and `vllm/reasoning/__init__.py`; SGLang `FunctionCallParser.ToolCallParserEnum` and
`ReasoningParser.DetectorMap`; Dynamo `lib/parsers` `get_tool_parser_map` and
`get_reasoning_parser_map`, the configs they build (`tool_calling/config.rs`), and the
family names of its v2 parsers). A name mapped to None is a format tokenyard does not
parse yet: asking for it says so, and a plugin can supply it. Names that already
are tokenyard's own (`hermes`, `qwen3_coder`...) resolve directly and are listed
here only when a peer means something else by them.
"""

from __future__ import annotations

PEERS = ("vllm", "sglang", "dynamo")

PEER_TOOL_NAMES: dict[str, dict[str, str | None]] = {
    "vllm": {
        "apertus": "apertus",
        "cohere_command3": "cohere_command4",
        "cohere_command4": "cohere_command4",
        "deepseek_v3": "deepseek_v3",
        "deepseek_v31": "deepseek_v3_1",
        "deepseek_v32": "deepseek_v3_2",
        "deepseek_v4": "deepseek_v4",
        "deepseek_v41": "deepseek_v41",
        "dots": "dots",
        "ernie45": "ernie45",
        "functiongemma": "functiongemma",
        "gemma4": "gemma4",
        "gigachat3": "gigachat3",
        "gigachat35": "gigachat35",
        "glm45": "glm45",
        "glm47": "glm47",
        "granite": "granite",
        "granite-20b-fc": "granite_20b_fc",
        "granite4": "granite4",
        "hermes": "hermes",
        "hf": None,
        "hunyuan_a13b": "hunyuan_a13b",
        "hy_v3": "hy_v3",
        "hy_v4": "hy_v4",
        "inkling": "inkling",
        "internlm": "internlm",
        "jamba": "jamba",
        "k2_horizon": "k2_horizon",
        "kimi_k2": "kimi_k2",
        "kimi_k3": "kimi_k3",
        "lfm2": "lfm2",
        "ling3": "ling3",
        "llama3_json": "llama3_json",
        "llama4_json": "llama3_json",
        "llama4_pythonic": "pythonic",
        "longcat": "longcat",
        "mimo": "mimo",
        "minicpm5": "minicpm5",
        # MiniMax-M1 (`minimax_tool_parser.py` in older vLLM registries).
        "minimax": "minimax_m1",
        "minimax_m2": "minimax_m2",
        "minimax_m3": "minimax_m3",
        "mistral": "mistral",
        "muse_glimmer": "muse_glimmer",
        "olmo3": "olmo3",
        "openai": "harmony",
        "phi4_mini_json": "phi4",
        "plamo3": "plamo3",
        "poolside_v1": "poolside_v1",
        "pythonic": "pythonic",
        "qwen3_coder": "qwen3_coder",
        "qwen3_json": "hermes",
        "qwen3_xml": "qwen3_coder",
        "seed_oss": "seed_oss",
        "solar_open2": "solar_open2",
        "step3": "step3",
        "step3p5": "step3p5",
        "xlam": "xlam",
    },
    "sglang": {
        "apertus2509": "apertus",
        "cohere_command4": "cohere_command4",
        "deepseekv3": "deepseek_v3",
        "deepseekv31": "deepseek_v3_1",
        "deepseekv32": "deepseek_v3_2",
        "deepseekv4": "deepseek_v4",
        "dots": "dots",
        "gemma4": "gemma4",
        "gigachat3": "gigachat3",
        "gigachat35": "gigachat35",
        "glm": "glm45",
        "glm45": "glm45",
        "glm47": "glm47",
        "gpt-oss": "harmony",
        "hermes": "hermes",
        "hunyuan": "hy_v3",
        "inkling": "inkling",
        "interns1": "internlm",
        "k2_horizon": "k2_horizon",
        "kimi_k2": "kimi_k2",
        "kimi_k3": "kimi_k3",
        "lfm2": "lfm2",
        "ling3": "ling3",
        "llama3": "llama3_json",
        "mimo": "mimo",
        "minicpm5": "minicpm5",
        "minimax-m2": "minimax_m2",
        "minimax-m3": "minimax_m3",
        "mistral": "mistral",
        "muse": "muse_glimmer",
        "poolside_v1": "poolside_v1",
        "pythonic": "pythonic",
        "qwen": "hermes",
        "qwen25": "hermes",
        "qwen3_coder": "qwen3_coder",
        "spark25": "spark25",
        "step3": "step3",
        "step3p5": "step3p5",
        # Trinity writes hermes calls; SGLang strips think tags the reasoning parser owns.
        "trinity": "hermes",
    },
    "dynamo": {
        "deepseek-v4": "deepseek_v4",
        "deepseek_v3": "deepseek_v3",
        "deepseek_v3_1": "deepseek_v3_1",
        "deepseek_v3_2": "deepseek_v3_2",
        "deepseek_v4": "deepseek_v4",
        # DeepSeek V4.1 and Muse Glimmer: families of Dynamo's v2 (streaming) parsers.
        "deepseek_v41": "deepseek_v41",
        "deepseekv4": "deepseek_v4",
        # Dynamo's fallback (`JsonParserConfig::default()`): a bare JSON call object or
        # list, or one after `<TOOLCALL>` or `<|python_tag|>`.
        "default": "generic_json",
        "gemma-4": "gemma4",
        "gemma4": "gemma4",
        "glm47": "glm47",
        "harmony": "harmony",
        # The v2 parsers' name for harmony read from text rather than token ids.
        "harmony_text": "harmony",
        "hermes": "hermes",
        "inkling": "inkling",
        "jamba": "jamba",
        "kimi-k3": "kimi_k3",
        "kimi_k2": "kimi_k2",
        "kimi_k3": "kimi_k3",
        "llama3_json": "llama3_json",
        "minimax-m3": "minimax_m3",
        "minimax-m3-nom": "minimax_m3",
        "minimax_m2": "minimax_m2",
        "minimax_m3": "minimax_m3",
        "minimax_m3_nom": "minimax_m3",
        "mistral": "mistral",
        "muse_glimmer": "muse_glimmer",
        "nemotron_deci": "nemotron_deci",
        "nemotron_nano": "qwen3_coder",
        "phi4": "phi4",
        "pythonic": "pythonic",
        "qwen25": "hermes",
        "qwen3_coder": "qwen3_coder",
    },
}

PEER_REASONING_NAMES: dict[str, dict[str, str | None]] = {
    "vllm": {
        "cohere_command3": "cohere_command",
        "cohere_command4": "cohere_command",
        "deepseek_r1": "deepseek_r1",
        "deepseek_v3": "deepseek_v3",
        "deepseek_v4": "deepseek_v4",
        "deepseek_v41": "deepseek_v41",
        "ernie45": "ernie45",
        "gemma4": "gemma4",
        # GigaChat 3.5: the template opens `<think>` for `reasoning=True`.
        "gigachat35": "deepseek_r1",
        "glm45": "glm45",
        "glm47": "glm45",
        "granite": "granite",
        # Granite 4.2 thinks like Nemotron 3: the template opens `<think>`.
        "granite_thinking_parser": "nemotron3",
        "hf": None,
        "holo2": "deepseek_r1",
        "hunyuan_a13b": "hunyuan_a13b",
        "hy_v3": "hy_v3",
        "hy_v4": "hy_v3",
        "inkling": "inkling",
        "k2_horizon": "k2_horizon",
        "kimi_k2": "kimi_k25",
        "kimi_k3": "kimi_k3",
        "ling3": "ling3",
        "mimo": "mimo",
        # MiniCPM-V: Qwen3's grammar, reasoning from the first token (vLLM also unescapes literal `\\n`).
        "minicpmv": "deepseek_r1",
        "minimax_m2": "minimax_m2",
        "minimax_m2_append_think": "minimax_append_think",
        "minimax_m3": "minimax_m3",
        "mistral": "mistral",
        "muse_glimmer": "muse_glimmer",
        "nemotron_v3": "nemotron3",
        "olmo3": "olmo3",
        "openai_gptoss": "gpt_oss",
        "plamo3": "plamo3",
        # Laguna: `<think>` blocks; its template says whether the prompt opened one.
        "poolside_v1": "qwen3",
        "qwen3": "qwen3",
        "seed_oss": "seed_oss",
        "solar_open2": "solar_open2",
        "step3": "step3",
        "step3p5": "step3p5",
    },
    "sglang": {
        "apertus2509": "apertus",
        "cohere_command4": "cohere_command",
        "deepseek-r1": "deepseek_r1",
        "deepseek-v3": "deepseek_v3",
        "deepseek-v4": "deepseek_v4",
        "gemma4": "gemma4",
        "glm45": "glm45",
        "gpt-oss": "gpt_oss",
        "hunyuan": "hy_v3",
        "inkling": "inkling",
        "interns1": "qwen3",
        "kimi": "kimi",
        "kimi_k2": "kimi_k25",
        "kimi_k3": "kimi_k3",
        "mimo": "mimo",
        # SGLang forces reasoning for these two: output starts inside `<think>`.
        "minimax": "minimax_m2",
        "minimax-append-think": "minimax_append_think",
        "minimax-m3": "minimax_m3",
        "mistral": "mistral",
        "nemotron_3": "nemotron3",
        "poolside_v1": "qwen3",
        "qwen3": "qwen3",
        "qwen3-thinking": "deepseek_r1",
        "step3": "step3",
        "step3p5": "step3p5",
        # TeleChat4: `<think>` blocks its template opens for enable_thinking (SGLang also moves an
        # unclosed reasoning into content; tokenyard keeps reasoning as reasoning).
        "telechat4": "qwen3",
    },
    "dynamo": {
        "basic": "basic",
        "deepseek-v4": "deepseek_v4",
        "deepseek_r1": "deepseek_r1",
        # Dynamo reads DeepSeek V3.x thinking as R1's (reasoning from the first token);
        # so do these names here (aliases of deepseek_r1).
        "deepseek_v3": "deepseek_v3",
        "deepseek_v3_1": "deepseek_v3_1",
        "deepseek_v3_2": "deepseek_v3_2",
        "deepseek_v4": "deepseek_v4",
        "deepseekv4": "deepseek_v4",
        "gemma-4": "gemma4",
        "gemma4": "gemma4",
        "glm45": "glm45",
        "gpt_oss": "gpt_oss",
        "granite": "granite",
        "inkling": "inkling",
        "kimi": "kimi",
        "kimi-k3": "kimi_k3",
        "kimi_k25": "kimi_k25",
        "kimi_k3": "kimi_k3",
        "minimax-m3": "minimax_m3",
        "minimax-m3-nom": "minimax_m3",
        "minimax_append_think": "minimax_append_think",
        "minimax_m2": "minimax_m2",
        "minimax_m3": "minimax_m3",
        "minimax_m3_nom": "minimax_m3",
        "mistral": "mistral",
        "nemotron3": "nemotron3",
        "nemotron_deci": "nemotron_deci",
        "nemotron_nano": "nemotron_nano",
        "nemotron_v3": "nemotron3",
        "qwen3": "qwen3",
        "step3": "step3",
    },
}


def peer_mapping(tables: dict[str, dict[str, str | None]]) -> dict[str, str | None]:
    """Every peer name (lowercase) and what it is in tokenyard; a name the peers
    disagree on keeps the first peer's meaning (none do today: a test checks)."""
    merged: dict[str, str | None] = {}
    for peer in PEERS:
        for name, ours in tables[peer].items():
            merged.setdefault(name.lower(), ours)
    return merged


# Merged once: names are resolved on every request's path (each request's parsers).
PEER_TOOL_MAPPING = peer_mapping(PEER_TOOL_NAMES)
PEER_REASONING_MAPPING = peer_mapping(PEER_REASONING_NAMES)


def peers_using(tables: dict[str, dict[str, str | None]], name: str) -> list[str]:
    return [peer for peer in PEERS if name in tables[peer]]
