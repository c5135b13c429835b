"""The OpenAI Chat Completions API spoke."""
