"""Exact replay: what the model wrote comes back into the next prompt byte for byte,
whichever replica serves the next turn.

Clients echo our output back on the next turn, but not always as we sent it:
reasoning may come back without its text (Claude Code's `display: "omitted"`, Codex's
`encrypted_content`), and tool calls come back as objects (Anthropic `tool_use.input`)
or re-serialised JSON (OpenClaw compacts Responses `arguments` and strips every
non-alphanumeric character from ids it does not trust: `toolu_x_y` → `tooluxy`),
which would change spacing and key order. Either change would make the next prompt
stop being a prefix-extension of the last, and the engine's KV cache would be lost.

`ReplayState` is the one place the API spokes ask; what it needs travels in what
the client echoes, so replicas sharing the sealing key agree:
- reasoning is sealed (authenticated encryption) into the opaque field the client
  echoes verbatim (Anthropic `signature`, Responses `encrypted_content`);
- a call's id carries how the model writes JSON (an `ArgumentStyle` code and a tag
  under the key, alphanumeric so OpenClaw's rewriting keeps it), and the echoed value
  serialised in that style gives back the model's text, on any replica. The id is
  streamed before the arguments exist, so the code is a prediction: the style this
  model's last call was written in (a model keeps to one; the first call's
  prediction is the chat templates' `tojson` style). When the prediction misses (a
  process's first call of a compact-writing model) or the text fits no style (odd
  spacing, unicode escapes, `1.0`), every replica renders the echoed value in the
  predicted style: the same prompt everywhere, but not the model's bytes, so that
  call's output tokens are prefilled again once;
- ids the model wrote itself (Kimi's `functions.name:0`: they are prompt text, so
  they carry no code) and ids we did not issue fall back to this process's bounded
  memory of exact texts (`_CallMemory`): exact on the replica that served the call,
  the client's serialisation elsewhere.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .. import wire_json
from ..faults import JsonTooDeep
from ..sealing import ReasoningSeal


@dataclass(frozen=True)
class ArgumentStyle:
    """One way of writing JSON: what `json.dumps` needs to reproduce it."""

    code: str
    separators: tuple[str, str]
    ensure_ascii: bool

    def dumps(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=self.ensure_ascii, separators=self.separators)


STYLES = {
    s.code: s
    for s in (
        ArgumentStyle("d", (", ", ": "), False),  # what chat templates' tojson writes
        ArgumentStyle("c", (",", ":"), False),  # compact (JSON.stringify)
        ArgumentStyle("a", (", ", ": "), True),  # Python's json.dumps default
        ArgumentStyle("b", (",", ":"), True),
    )
}
DEFAULT_STYLE = "d"
# How a styled id begins after the API's prefix: `ty`, the style code, then a tag
# under the server key, so an id that is not ours is never read as styled.
_TAG_LENGTH = 6
_STYLED = re.compile(rf"ty([{''.join(STYLES)}])([0-9a-f]{{{_TAG_LENGTH}}})")


def argument_styles(text: str) -> list[str]:
    """The codes of every style that writes `text` (several for ASCII-only text; none
    for text no style reproduces)."""
    try:
        value = wire_json.loads(text)
    except (ValueError, JsonTooDeep):  # the model's own text: never an error
        return []
    return [code for code, style in STYLES.items() if style.dumps(value) == text]


def argument_style(text: str) -> str | None:
    """The first style that writes `text`, or None."""
    return next(iter(argument_styles(text)), None)


class ReplayState:
    def __init__(self, seal: ReasoningSeal, *, max_calls: int = 20_000) -> None:
        self._seal = seal
        self._calls = _CallMemory(max_calls)
        # The style each served model wrote its last call in (a prediction; ids carry it).
        self._styles: dict[str, str] = {}
        # Each style's tag, made once: an HMAC cost a request ~20-40 µs on its way to the engine.
        self._tags = {code: seal.tag(f"call-style:{code}", _TAG_LENGTH) for code in STYLES}
        self._model = ""

    def for_model(self, model: str) -> ReplayState:
        """This state as seen by one served model's generations (its style prediction)."""
        view = ReplayState.__new__(ReplayState)
        view._seal, view._calls, view._styles, view._tags = self._seal, self._calls, self._styles, self._tags
        view._model = model
        return view

    # ---- reasoning --------------------------------------------------------------------

    def seal_reasoning(self, reasoning: str, context: str) -> str:
        """An opaque field (Anthropic `signature`, Responses `encrypted_content`) that
        restores `reasoning` exactly; `context` binds it to where it was issued."""
        return self._seal.seal(reasoning, context)

    def open_reasoning(self, token: str | None, context: str) -> str | None:
        """The reasoning sealed in `token`, or None if it is not ours or was altered."""
        return self._seal.open(token, context)

    # ---- tool calls -------------------------------------------------------------------

    def call_id_prefix(self, prefix: str) -> str:
        """What ids of this model's next calls begin with: the API's `prefix`, then the
        style the model is expected to write its arguments in, tagged."""
        code = self._styles.get(self._model, DEFAULT_STYLE)
        return f"{prefix}ty{code}{self._tags[code]}"

    def remember_call(self, call_id: str, arguments: str) -> None:
        """A call the model finished: its style is the next prediction; an id without a
        style (the model's own) keeps its exact text in memory."""
        fits = argument_styles(arguments)
        # Text that fits several styles (ASCII only) keeps a prediction it fits.
        if fits and self._styles.get(self._model, DEFAULT_STYLE) not in fits:
            self._styles[self._model] = fits[0]
        if self._style_of(call_id) is None:
            self._calls.remember(call_id, arguments)

    def restore_call(self, call_id: str, echoed: Any, fallback: str) -> str:
        """The arguments the model wrote for `call_id`, from the value the client echoed
        (`echoed`, decoded) and `fallback` (what it sent, serialised). An id of ours
        gives the echoed value in the style it carries, on every replica alike (the
        model's exact text whenever the prediction held). Any other id (a model's own,
        Kimi's `functions.name:0`) is looked up in this process's memory."""
        code = self._style_of(call_id)
        if code is not None:
            # A client that echoes the text as it got it (Codex) sends text in no
            # re-serialised shape; one that re-serialises (OpenClaw: compact) or sends
            # an object (Anthropic) does: then the id's style restores the model's text.
            resent = (STYLES["c"].dumps(echoed), json.dumps(echoed, ensure_ascii=False))
            return STYLES[code].dumps(echoed) if fallback in resent else fallback
        text = self._calls.recall(call_id)
        if text is None:
            return fallback
        try:
            return text if wire_json.loads(text) == echoed else fallback
        except (ValueError, JsonTooDeep):
            return fallback

    def _style_of(self, call_id: str) -> str | None:
        found = _STYLED.search(_key(call_id))
        if found is None or found.group(2) != self._tags[found.group(1)]:
            return None
        return found.group(1)


class _CallMemory:
    """The exact arguments of recent calls, bounded, by id."""

    def __init__(self, max_calls: int) -> None:
        self._max = max_calls
        self._calls: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, call_id: str, arguments: str) -> None:
        key = _key(call_id)
        with self._lock:
            self._calls[key] = arguments
            self._calls.move_to_end(key)
            while len(self._calls) > self._max:
                self._calls.popitem(last=False)

    def recall(self, call_id: str) -> str | None:
        with self._lock:
            return self._calls.get(_key(call_id))


def _key(call_id: str) -> str:
    # OpenClaw strips every character outside [A-Za-z0-9] from the ids it echoes
    # (`toolu_ab12` comes back as `tooluab12`); both spellings find the call.
    return "".join(c for c in call_id if c.isalnum())
