"""OpenAI Chat Completions: the OpenAI table, the conversation being `messages`.
tokenize (whose chat form is a Chat Completions body) and the OpenAI shape of
`/v1/models` answer with it too."""

from __future__ import annotations

from ..errors import ErrorTable, openai_envelope, openai_rows

ERRORS = ErrorTable(openai_rows("messages"), openai_envelope)
