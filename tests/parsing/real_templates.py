"""The family each real chat template in llama.cpp's `models/templates` belongs to,
and what one assistant turn of it can hold.

`calls`: the calls one turn holds (a format that ends generation at each call, or
takes one call per message, holds one). `gap`: why the exact round trip is not
asserted for this template (the test then checks that it indeed does not hold, so
the table stays true when the gap closes).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Expect:
    family: str
    calls: int = 2
    gap: str | None = None


REAL_TEMPLATES: dict[str, Expect] = {
    "Apertus-8B-Instruct.jinja": Expect("apertus"),
    "Apriel-1.6-15b-Thinker-fixed.jinja": Expect("apriel-thinker"),
    "Bielik-11B-v3.0-Instruct.jinja": Expect("qwen3"),
    "ByteDance-Seed-OSS.jinja": Expect("seed-oss"),
    "Cohere2MoE.jinja": Expect("cohere-command4"),
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": Expect("command-r-plus"),
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja": Expect("cohere-command3"),
    "GLM-4.6.jinja": Expect("glm-4.7"),
    "GLM-4.7-Flash.jinja": Expect("glm-4.7"),
    # One call per `function call` message.
    "GigaChat3-10B-A1.8B.jinja": Expect("gigachat3", calls=1),
    "GigaChat3.1-10B-A1.8B.jinja": Expect("gigachat3", calls=1),
    "HuggingFaceTB-SmolLM3-3B.jinja": Expect("smollm3"),
    "Kimi-K2-Instruct.jinja": Expect("kimi-k2"),
    "Kimi-K2-Thinking.jinja": Expect("kimi-k2.5"),
    "Kimi-K3.jinja": Expect("kimi-k3"),
    "LFM2-8B-A1B.jinja": Expect("lfm2"),
    "LFM2.5-8B-A1B.jinja": Expect("lfm2"),
    "LFM2.5-Instruct.jinja": Expect("lfm2"),
    "MiMo-VL.jinja": Expect("mimo-vl"),
    "MiniMax-M1.jinja": Expect("minimax-m1"),
    "MiniMax-M2.jinja": Expect("minimax-m2"),
    "MiniMax-M3.jinja": Expect("minimax-m3"),
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": Expect("mistral"),
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": Expect("qwen3.5"),
    "NVIDIA-Nemotron-Nano-v2.jinja": Expect("nemotron"),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": Expect("hermes"),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": Expect("hermes"),
    "Qwen-QwQ-32B.jinja": Expect("qwen3"),
    "Qwen-Qwen2.5-7B-Instruct.jinja": Expect("qwen2.5"),
    "Qwen-Qwen3-0.6B.jinja": Expect("qwen3"),
    "Qwen3-Coder.jinja": Expect("qwen3-coder"),
    "Qwen3.5-4B.jinja": Expect("qwen3.5"),
    "Reka-Edge.jinja": Expect("reka"),
    "Spark2.5.jinja": Expect("spark-2.5"),
    "StepFun3.5-Flash.jinja": Expect("step3.5"),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": Expect("deepseek-r1"),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": Expect("deepseek-r1"),
    "deepseek-ai-DeepSeek-V3.1.jinja": Expect("deepseek-v3.1"),
    "deepseek-ai-DeepSeek-V3.2.jinja": Expect("deepseek-v3.2"),
    "deepseek-ai-DeepSeek-V4-Flash-0731.jinja": Expect("deepseek-v4"),
    "deepseek-ai-DeepSeek-V4.jinja": Expect("deepseek-v4"),
    "fireworks-ai-llama-3-firefunction-v2.jinja": Expect("firefunction-v2"),
    "google-gemma-2-2b-it.jinja": Expect("gemma"),
    "google-gemma-4-31B-it-interleaved.jinja": Expect("gemma"),
    "google-gemma-4-31B-it.jinja": Expect("gemma"),
    "ibm-granite-granite-3.3-2B-Instruct.jinja": Expect("granite-3"),
    "ibm-granite-granite-4.0.jinja": Expect("granite-4"),
    "ibm-granite-granite-4.1.jinja": Expect("granite-4"),
    "inclusionai-ling-3.0-flash.jinja": Expect("ling-3"),
    "llama-cpp-deepseek-r1.jinja": Expect(
        "deepseek-r1",
        gap="llama.cpp's own template, written for its minja engine: its `tools | map(...) | tojson` hands "
        "jinja2's tojson a generator, so transformers cannot render it",
    ),
    "llama-cpp-rwkv-world.jinja": Expect("generic"),
    "meetkai-functionary-medium-v3.1.jinja": Expect("functionary-v3.1"),
    "meetkai-functionary-medium-v3.2.jinja": Expect("functionary-v3.2"),
    # Llama 3 templates refuse more than one call per turn.
    "meta-llama-Llama-3.1-8B-Instruct.jinja": Expect("llama-3", calls=1),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": Expect("llama-3", calls=1),
    "meta-llama-Llama-3.3-70B-Instruct.jinja": Expect("llama-3", calls=1),
    "microsoft-Phi-3.5-mini-instruct.jinja": Expect("phi"),
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": Expect("magistral"),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": Expect("mistral"),
    "moonshotai-Kimi-K2.jinja": Expect("kimi-k2"),
    "muse-glimmer.jinja": Expect("muse-glimmer"),
    # Generation ends at each call's `<|call|>`.
    "openai-gpt-oss-120b.jinja": Expect("gpt-oss", calls=1),
    "openbmb-MiniCPM5-1B.jinja": Expect("minicpm5"),
    "poolside-Laguna-S-2.1.jinja": Expect("laguna"),
    "poolside-Laguna-XS-2.1.jinja": Expect("laguna"),
    "poolside-Laguna-XS.2.jinja": Expect("laguna"),
    "tencent-Hy3.jinja": Expect("hy3"),
    "unsloth-Apriel-1.5.jinja": Expect("apriel"),
    "unsloth-mistral-Devstral-Small-2507.jinja": Expect("mistral"),
    "upstage-Solar-Open-100B.jinja": Expect("solar-open"),
}
