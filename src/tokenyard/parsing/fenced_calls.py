"""Recovery of one known small-model failure shape: a tool call written as a JSON
code fence at the very end of a turn.

Small instruct models (Qwen2.5-Coder-1.5B under Claude Code's prompt) often pick the
right tool and arguments but write

    I'll list the files.
    ```json
    {"name": "Bash", "arguments": {"command": "ls"}}
    ```

instead of their template's `<tool_call>` syntax. `FencedCallRecovery` sits after
the tool parser (`OutputSplitter(recover_fenced_calls=True)`, a profile switch) and
turns exactly that into a real call: a ```json fence opening a line, holding one
JSON object whose only keys are `name` (a tool the request declared) and
`arguments` (an object), closed by ``` and followed by nothing but whitespace to the
end of the output. Anything else stays text: a fence with text after it (a model
*showing* a call), an undeclared name, other keys, invalid JSON, a fence followed by
a real call or by reasoning.

A fence may hold several call objects one after another (parallel calls, as the
model writes them: no list, no commas); each becomes a call. The same call object as
the whole output, with no fence (nothing but whitespace around it), is recovered the
same way.

Qwen2.5's own template shows the call shape as `{{"name": ..., "arguments": ...}}`
(doubled braces in its text), and the model copies them: an object opened with `{{`
is the call object inside, closed by `}}` or, as the model also writes it, by one
brace where the fence or the output ends. The object inside must be a complete,
valid call: nothing malformed is ever dispatched.

Whether a fence ends the output is known only at the end, so text is held back from
a line that starts like a fence for only as long as it can still become such a call,
and released as soon as it can not (a top-level key other than `name` or
`arguments`, an undeclared name, broken JSON, text after the closing fence).
Conservation holds: held text comes out as text, or as the call's `raw` plus the
trailing whitespace as a `Marker`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..conversation import ToolSpec
from ..events import Marker, ParseEvent, TextDelta, ToolCallDelta, ToolCallReady, ToolCallStart
from .json_stream import JsonStreamError, JsonValueScanner
from .tools.base import CallIds

OPEN_FENCE = "```json"
CLOSE_FENCE = "```"
_CALL_KEYS = frozenset(("name", "arguments"))
_SPACE = " \t\r"
_WHITESPACE = " \t\r\n"

# Phases of a held fence.
_OPEN, _HEADER, _LEAD, _OBJECT, _BEFORE_CLOSE, _CLOSE, _TAIL, _BRACE, _DOUBLE_CLOSE = range(9)


class _CallObject:
    """The top level of a JSON object being written (fed text the JSON scanner has
    already validated): fails as soon as a key other than `name`/`arguments`, a
    repeated key, or an undeclared `name` string appears."""

    __slots__ = ("_declared", "_depth", "_in_string", "_escape", "_expect_key", "_key", "_capture", "_seen")

    def __init__(self, declared: frozenset[str]):
        self._declared = declared
        self._depth = 0
        self._in_string = False
        self._escape = False
        self._expect_key = False
        self._key = ""  # the last top-level key
        self._capture: list[str] | None = None  # a top-level key, or the `name` value, being read
        self._seen: set[str] = set()

    def feed(self, text: str) -> bool:
        for char in text:
            if self._in_string:
                if self._escape:
                    self._escape = False
                elif char == "\\":
                    self._escape = True
                elif char == '"':
                    self._in_string = False
                    if self._capture is not None and not self._captured("".join(self._capture)):
                        return False
                    self._capture = None
                    continue
                if self._capture is not None:
                    self._capture.append(char)
            elif char == '"':
                self._in_string = True
                if self._depth == 1 and (self._expect_key or self._key == "name"):
                    self._capture = []
            elif char in "{[":
                self._depth += 1
                self._expect_key = self._depth == 1
            elif char in "}]":
                self._depth -= 1
            elif char == "," and self._depth == 1:
                self._expect_key, self._key = True, ""
        return True

    def _captured(self, text: str) -> bool:
        if self._expect_key:
            self._expect_key = False
            if text not in _CALL_KEYS or text in self._seen:
                return False
            self._seen.add(text)
            self._key = text
            return True
        self._key = ""  # the `name` value
        return text in self._declared


class _HeldFence:
    """A fence being held, checked character by character; `alive` turns False for
    good once the text can no longer be a fenced call that ends the output."""

    __slots__ = (
        "text",
        "alive",
        "bare",
        "_phase",
        "_matched",
        "_scanner",
        "_object",
        "_json",
        "_close_end",
        "_doubled",
        "_gap",
        "_found",
        "_pending",
        "_declared",
    )

    def __init__(self, declared: frozenset[str], bare: bool = False):
        self.text = ""
        self.alive = True
        # The whole output is the object, with no fence around it.
        self.bare = bare
        self._phase = _LEAD if bare else _OPEN
        self._matched = 0  # characters of the fence marker being read
        self._scanner = JsonValueScanner()
        self._declared = declared
        self._object = _CallObject(declared)
        self._json: list[str] = []  # the object as validated (control characters in strings escaped)
        self._close_end = 0  # index in `text` just past the closing fence
        self._doubled = False  # the object opened with `{{` (Qwen2.5's template shape)
        self._gap = ""  # whitespace after the first `{`, until the next character decides
        self._found: list[tuple[str, str, int]] = []  # (name, arguments, end in `text`) per call
        self._pending: tuple[str, str] | None = None  # the call whose doubled brace may follow

    def feed(self, chunk: str) -> bool:
        start = len(self.text)
        self.text += chunk
        i = 0
        while self.alive and i < len(chunk):
            i = self._step(chunk, i, start)
        return self.alive

    def _step(self, chunk: str, i: int, start: int) -> int:
        phase, char = self._phase, chunk[i]
        if phase == _OPEN or phase == _CLOSE:
            marker = OPEN_FENCE if phase == _OPEN else CLOSE_FENCE
            if char != marker[self._matched]:
                self.alive = False
                return i
            self._matched += 1
            if self._matched == len(marker):
                self._matched = 0
                self._phase = _HEADER if phase == _OPEN else _TAIL
                self._close_end = start + i + 1
            return i + 1
        if phase == _OBJECT:
            return self._step_object(chunk, i)
        if phase == _HEADER:  # the rest of the opening line: spaces, then a newline
            if char == "\n":
                self._phase = _LEAD
            elif char not in _SPACE:
                self.alive = False
            return i + 1
        if phase == _LEAD and char == "{":
            self._phase = _BRACE
            return i + 1
        if phase == _BRACE:  # after the first `{`: a second one doubles the braces
            if char in _WHITESPACE:
                self._gap += char
                return i + 1
            self._phase = _OBJECT
            if char == "{":
                self._doubled = True
                return self._step_object(chunk, i)
            self._feed_object("{" + self._gap)
            return i if self.alive else i + 1
        if phase == _DOUBLE_CLOSE:  # the object closed: its doubled brace, or where the call ends
            if char == "}":
                self._after_object(start + i + 1)
            elif char == "`" and not self.bare:
                self._after_object(self._close_end)
                self._phase = _CLOSE
                return i
            elif char == "{" and not self.bare:
                self._after_object(self._close_end)
                return self._next_object(i)
            elif char not in _WHITESPACE:
                self.alive = False
            return i + 1
        if phase == _BEFORE_CLOSE and char == "`":
            self._phase = _CLOSE
            return i
        if phase == _BEFORE_CLOSE and char == "{":  # another call in the same fence
            return self._next_object(i)
        # _LEAD, _BEFORE_CLOSE and _TAIL (after the closing fence: a fourth backtick
        # or a language tag would mean it was an opening one) allow only whitespace.
        if char not in _WHITESPACE:
            self.alive = False
        return i + 1

    def _step_object(self, chunk: str, i: int) -> int:
        end = self._feed_object(chunk[i:])
        return len(chunk) if end < 0 else i + end

    def _feed_object(self, text: str) -> int:
        """Feeds the object's JSON; the index just past its end in `text`, or -1."""
        try:
            out, end = self._scanner.feed(text)
        except JsonStreamError:
            self.alive = False
            return 0
        self._json.append(out)
        self.alive = self._object.feed(out)
        if end < 0:
            return -1
        self._pending = self.call()
        self.alive = self.alive and self._pending is not None
        closed = len(self.text) - len(text) + end  # in `text`, just past the object
        if self._doubled:
            self._phase, self._close_end = _DOUBLE_CLOSE, closed  # the second brace may be missing
        else:
            self._after_object(closed)
        return end

    def _after_object(self, end: int) -> None:
        """The call object is closed at `end` in `text`: the closing fence follows (or
        another call), or (bare) nothing but whitespace."""
        if self._pending is not None:
            self._found.append((*self._pending, end))
            self._pending = None
        if self.bare:
            self._phase, self._close_end = _TAIL, end
        else:
            self._phase = _BEFORE_CLOSE

    def _next_object(self, i: int) -> int:
        """Another call object begins at this `{`."""
        self._scanner, self._object, self._json = JsonValueScanner(), _CallObject(self._declared), []
        self._doubled, self._gap = False, ""
        self._phase = _BRACE
        return i + 1

    def call(self) -> tuple[str, str] | None:
        """(name, arguments JSON) when the object has a call's shape."""
        try:
            value = json.loads("".join(self._json))
        except ValueError:
            return None
        if not isinstance(value, dict) or set(value) != _CALL_KEYS:
            return None
        name, arguments = value["name"], value["arguments"]
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return None
        return name, json.dumps(arguments, ensure_ascii=False)

    def recovered(self) -> tuple[list[tuple[str, str, str]], str] | None:
        """([(name, arguments, raw)] — the first raw from the fence, the last to the
        closing fence —, the whitespace after it) when the fence is complete and still
        alive at the end of the output."""
        if self.alive and self.bare and self._phase == _DOUBLE_CLOSE:
            self._after_object(self._close_end)  # the output ended where the second brace would be
        if not self.alive or self._phase != _TAIL or not self._found:
            return None
        calls, start = [], 0
        for n, (name, arguments, end) in enumerate(self._found):
            end = self._close_end if n == len(self._found) - 1 else end
            calls.append((name, arguments, self.text[start:end]))
            start = end
        return calls, self.text[self._close_end :]


def _could_open(text: str) -> bool:
    """`text`, read from a line start, opens a fence or could still grow into the opener."""
    head = text[: len(OPEN_FENCE)]
    return bool(head) and OPEN_FENCE.startswith(head)


def _split_at_fence(text: str, line_start: bool) -> tuple[str, str]:
    """(text before the first line that could open a fence, that line onward);
    `line_start`: text[0] begins a line."""
    if line_start and _could_open(text):
        return "", text
    at = text.find("\n") + 1
    while 0 < at < len(text):
        if _could_open(text[at:]):
            return text[:at], text[at:]
        at = text.find("\n", at) + 1
    return text, ""


class FencedCallRecovery:
    """Fed the tool parser's events in order; returns them with a final fenced JSON
    call to a declared tool turned into `ToolCallStart`/`ToolCallDelta`/`ToolCallReady`
    (see the module docstring)."""

    def __init__(self, tools: Iterable[ToolSpec], call_ids: CallIds):
        self._declared = frozenset(t.name for t in tools)
        self._ids = call_ids
        self._line_start = True  # the next text character begins a line
        self._spoken = False  # text (other than whitespace) or a call came already: no bare call
        self._held: _HeldFence | None = None
        self._calls = 0  # calls in this output so far: the next call's index

    def feed(self, events: list[ParseEvent]) -> list[ParseEvent]:
        if not events:
            return events
        out: list[ParseEvent] = []
        for event in events:
            if type(event) is TextDelta:
                self._text(event.text, out)
                continue
            # Anything but text after a held fence: the fence does not end the output.
            self._release(out)
            self._line_start = True
            if type(event) is ToolCallStart:
                self._calls += 1
                self._spoken = True
            out.append(event)
        return out

    def drop_held(self) -> None:
        """The splitter released the held fence as text (splitter.py)."""
        self._held = None

    def finish(self, events: list[ParseEvent]) -> list[ParseEvent]:
        out = self.feed(events)
        held, self._held = self._held, None
        if held is None:
            return out
        found = held.recovered()
        if found is None:
            out.append(TextDelta(held.text))
            return out
        calls, tail = found
        for name, arguments, raw in calls:
            index, call_id = self._calls, self._ids.new()
            self._calls += 1
            out += [
                ToolCallStart(index, call_id, name),
                ToolCallDelta(index, arguments),
                ToolCallReady(index, call_id, name, arguments, raw),
            ]
        if tail:
            out.append(Marker(tail))
        return out

    def _text(self, text: str, out: list[ParseEvent]) -> None:
        if not self._spoken and self._held is None:
            body = text.lstrip()
            if body:
                self._spoken = True
                if body[0] == "{":  # the output may be one bare call object
                    if len(body) < len(text):
                        out.append(TextDelta(text[: len(text) - len(body)]))
                    self._held, text = _HeldFence(self._declared, bare=True), body
        if self._held is None and "`" not in text:  # the common case
            if text:
                out.append(TextDelta(text))
                self._line_start = text[-1] == "\n"
            return
        while text:
            if self._held is not None:
                if self._held.feed(text):
                    return
                # It can not be a final call: its first line is text, a later line may open a fence.
                text, self._held = self._held.text, None
                head, text = _split_at_fence(text, line_start=False)
            else:
                head, text = _split_at_fence(text, self._line_start)
            if head:
                out.append(TextDelta(head))
                self._line_start = head[-1] == "\n"
            if text:
                self._held = _HeldFence(self._declared)

    def _release(self, out: list[ParseEvent]) -> None:
        if self._held is not None:
            out.append(TextDelta(self._held.text))
            self._held = None
