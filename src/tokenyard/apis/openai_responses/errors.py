"""OpenAI Responses: the OpenAI table, the conversation being `input`. A failure
after the stream started is `response.failed` whose `error.code` is the row's code,
or its type where the row has no code (`server_error`, as OpenAI sends)."""

from __future__ import annotations

from typing import Any

from ...faults import ApiError
from ..errors import ErrorTable, openai_envelope, openai_rows

ERRORS = ErrorTable(openai_rows("input"), openai_envelope)


def failed_error(error: ApiError) -> dict[str, Any]:
    """The `error` object of a failed response."""
    row = ERRORS.row(error)
    return {"code": row.code or row.type, "message": error.message}
