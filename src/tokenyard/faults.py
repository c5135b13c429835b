"""What went wrong, named once, at the bottom of the house.

Every exception a request can end in declares its `Fault`; each API's error table
(`apis/<api>/errors.py`) maps a fault to that API's status, type, code and envelope.
The types live here, importing nothing of ours, so that engines, prompting, apis and
the server all raise and read the same ones.
"""

from __future__ import annotations

import enum


class Fault(enum.StrEnum):
    INVALID_JSON = "invalid_json"
    INVALID_REQUEST = "invalid_request"  # a field is missing, mistyped or meaningless
    AUTHENTICATION = "authentication"
    PERMISSION = "permission"
    NOT_FOUND = "not_found"  # an unknown model (or path)
    METHOD_NOT_ALLOWED = "method_not_allowed"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"  # a body not declared as JSON
    HEADERS_TOO_LARGE = "headers_too_large"  # too many header lines
    REQUEST_TOO_LARGE = "request_too_large"
    TEMPLATE_REJECTED = "template_rejected"  # the model's chat template refused the conversation
    CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
    RATE_LIMITED = "rate_limited"
    OVERLOADED = "overloaded"  # no generation slot and the queue is full
    ENGINE_FAILED = "engine_failed"  # the engine broke (before or after the first token)
    ENGINE_TIMEOUT = "engine_timeout"  # the engine went silent for --engine-timeout seconds
    TOOL_CHOICE_VIOLATION = "tool_choice_violation"  # the model did not follow a forced tool_choice
    OUTPUT_FORMAT_VIOLATION = "output_format_violation"  # the answer broke the requested JSON format
    INTERNAL = "internal"  # a bug of ours


class Failure(Exception):
    """An exception that says which `Fault` it is. `param` names the request field at
    fault (if any); `public_message` is what a client is told."""

    fault: Fault = Fault.INTERNAL
    param: str | None = None

    @property
    def public_message(self) -> str:
        return str(self)


class ApiError(Failure):
    """A request we refuse or could not serve, said in the caller's terms."""

    def __init__(self, fault: Fault, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.fault = fault
        self.message = message
        self.param = param


# What a client is told when the engine fails: the engine's own message names its
# URL and quotes upstream errors, which stay in the server log.
ENGINE_FAILED_MESSAGE = "the model engine failed; the server log has the details"


class EngineError(Failure):
    """The engine failed to serve a request (down, crashed, answered garbage)."""

    fault = Fault.ENGINE_FAILED

    @property
    def public_message(self) -> str:
        return ENGINE_FAILED_MESSAGE


class PromptTooLong(EngineError):
    """The prompt does not fit the model's context window."""

    fault = Fault.CONTEXT_LENGTH_EXCEEDED

    def __init__(self, prompt_tokens: int, max_model_len: int):
        super().__init__(f"prompt is {prompt_tokens} tokens; this model's context window is {max_model_len} tokens")
        self.prompt_tokens = prompt_tokens
        self.max_model_len = max_model_len

    @property
    def public_message(self) -> str:
        # "prompt is too long" is the phrase Claude Code matches to compact its history.
        return f"prompt is too long: {self.prompt_tokens} tokens > {self.max_model_len} maximum ({self})"


class EngineTimeout(EngineError):
    """The engine sent nothing for `seconds` (stalled); the generation was aborted."""

    fault = Fault.ENGINE_TIMEOUT

    def __init__(self, seconds: float):
        super().__init__(f"the model engine sent nothing for {seconds:g}s; the generation was aborted")
        self.seconds = seconds

    @property
    def public_message(self) -> str:
        return str(self)


class TemplateError(Failure):
    """A chat template failed to compile or render; the message is the template's own."""

    fault = Fault.TEMPLATE_REJECTED

    @property
    def public_message(self) -> str:
        return f"the model's chat template rejected this conversation: {self}"


class InvalidToolChoice(Failure, ValueError):
    """A tool choice the request's tools can not satisfy (a call required but no
    tools, a named tool that is not offered): the client's error (HTTP 400, param
    `tool_choice`)."""

    fault = Fault.INVALID_REQUEST
    param = "tool_choice"


class InvalidOutputFormat(Failure, ValueError):
    """A requested output format that can not be applied (a `json_schema` without a
    schema, a schema that is not one): the client's error (HTTP 400)."""

    fault = Fault.INVALID_REQUEST

    def __init__(self, message: str, param: str):
        super().__init__(message)
        self.param = param


class JsonTooDeep(Failure):
    """JSON nested more than `limit` levels. Not a ValueError: callers that keep text
    that is not JSON as text must not keep this."""

    fault = Fault.INVALID_REQUEST

    def __init__(self, limit: int, where: str | None = None) -> None:
        self.limit = limit
        self.where = where
        self.param = where
        super().__init__(f"{where + ': ' if where else ''}JSON is nested more than {limit} levels deep")


class ToolChoiceViolation(Failure):
    """The model's turn broke the request's `tool_choice` or `parallel_tool_calls`
    (no call where one was required, another tool than the named one) and no
    guide or prefill prevented it. Ends the stream as a `StreamError`."""

    fault = Fault.TOOL_CHOICE_VIOLATION


class OutputFormatViolation(Failure):
    """The model's answer does not have the shape the request's output format
    demands (not JSON, or JSON against the schema) and no guided decoding prevented
    it. Ends the stream as a `StreamError` instead of a normal finish."""

    fault = Fault.OUTPUT_FORMAT_VIOLATION
