"""The one interface every API package (`anthropic`, `openai_chat`,
`openai_responses`) offers the server.

A spoke parses its wire request into a `Conversation` plus its options
(`ParsedRequest`), makes a sans-IO `StreamEncoder` for the generation's events, and
has one `ErrorTable`. The server's one route handler (server/routes.py) drives any
spoke the same way; nothing in a spoke does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..conversation import Conversation
from ..events import Event
from ..faults import ApiError
from .errors import ErrorTable
from .replay_state import ReplayState

Frame = tuple[str | None, dict[str, Any] | str]
"""One SSE frame: its `event:` name (None for a data-only frame) and its data (a JSON
object, or a literal such as `[DONE]`)."""


class StreamEncoder(Protocol):
    """Events → one API's frames, and the same state assembled as the whole response."""

    def start(self) -> list[Frame]:
        """Frames sent before the first event (may be none)."""
        ...

    def feed(self, event: Event) -> list[Frame]: ...

    def error(self, error: ApiError) -> list[Frame]:
        """The API's own ending for a failure after the stream started."""
        ...

    def finish(self) -> list[Frame]:
        """Frames after the last event, whatever ended the stream (`[DONE]`)."""
        ...

    def keepalive(self) -> Frame | None:
        """What to send while the engine is quiet; None: an SSE comment."""
        ...

    def result(self) -> dict[str, Any]:
        """The whole response, for a request that did not stream."""
        ...


@dataclass(frozen=True)
class RequestContext:
    """What a spoke gets besides the body."""

    headers: Mapping[str, str]
    replay: ReplayState
    dispatch: bool = False  # streaming tool dispatch is on for this server


@dataclass(frozen=True)
class ParsedRequest:
    conversation: Conversation
    model: str
    stream: bool
    options: Any  # the API's validated wire request, for its encoder
    # The client asked the server to judge the turn's tool calls (Claude Code's auto
    # mode): the session facts it sent for that (safeguards.py). None: it did not ask.
    safeguards: Mapping[str, Any] | None = None


class Spoke(Protocol):
    name: str
    errors: ErrorTable
    call_id_prefix: str  # the ids of the calls the model makes (`toolu_`, `call_`)

    def parse(self, body: Any, context: RequestContext) -> ParsedRequest: ...

    def encoder(self, request: ParsedRequest, context: RequestContext) -> StreamEncoder: ...
