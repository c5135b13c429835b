"""The OpenAI Responses API spoke (what Codex speaks). Stateless: every request
carries its whole conversation."""
