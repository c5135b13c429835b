"""The Anthropic Messages API spoke."""
