"""Tokenizers over HF `tokenizers`, and an exact incremental detokenizer.

A `Tokenizer` loads from a model directory (tokenizer.json + tokenizer_config.json);
one rebuilt from a GGUF file's vocabulary comes from `tokenyard.models.gguf`. Special-token text inside a rendered
prompt always encodes as the special token, and decoding always keeps special
tokens as their text: downstream parsers need to see `<think>`, `<tool_call>`...

Everything here is sans-IO except the `from_model_dir` loader.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer as HFTokenizer

from .literal_text import literal_alternation

_BYTE_FALLBACK_PIECE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")
SPM_SPACE = "\u2581"  # ▁ (SentencePiece's space)


def gpt2_byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable-character map (byte-level BPE)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars, strict=False)}


_UNICODE_TO_BYTE = {c: b for b, c in gpt2_byte_to_unicode().items()}


class Tokenizer:
    """A model's tokenizer: HF `tokenizers` backend plus the metadata that prompt
    rendering needs (bos/eos, the chat template)."""

    def __init__(
        self,
        backend: HFTokenizer,
        *,
        bos_token: str | None = None,
        eos_token: str | None = None,
        chat_template: str | None = None,
    ):
        self.backend = backend
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.chat_template = chat_template
        self.bos_token_id = self.token_to_id(bos_token) if bos_token else None
        self.eos_token_id = self.token_to_id(eos_token) if eos_token else None
        self._added = {i: t.content for i, t in backend.get_added_tokens_decoder().items()}
        self._piece_style = _piece_style(json.loads(backend.decoder.__getstate__()) if backend.decoder else None)
        self._pieces: dict[int, bytes] = {}
        self._segments = _SegmentCache(backend)

    # ------------------------------------------------------------------ loaders

    @classmethod
    def from_model_dir(cls, path: str | os.PathLike[str]) -> Tokenizer:
        """Load tokenizer.json, tokenizer_config.json and the chat template
        (chat_template.jinja, else chat_template.json, else the config's own)."""
        folder = Path(path)
        backend = HFTokenizer.from_file(str(folder / "tokenizer.json"))
        config_path = folder / "tokenizer_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.exists() else {}
        # Templates may be shipped as a separate file; that file wins, as in transformers.
        jinja_path, json_path = folder / "chat_template.jinja", folder / "chat_template.json"
        template: Any
        if jinja_path.exists():
            template = jinja_path.read_text(encoding="utf-8")
        elif json_path.exists():
            template = json.loads(json_path.read_text(encoding="utf-8"))["chat_template"]
        else:
            template = config.get("chat_template")
        if isinstance(template, list):  # named templates: [{"name", "template"}]
            template = next((t["template"] for t in template if t.get("name") == "default"), None)
        return cls(
            backend,
            bos_token=_token_text(config.get("bos_token")),
            eos_token=_token_text(config.get("eos_token")),
            chat_template=template,
        )

    # ---------------------------------------------------------------- encoding

    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size(with_added_tokens=True)

    @property
    def added_tokens(self) -> dict[int, str]:
        """Every added (special or control) token: id -> text."""
        return dict(self._added)

    @property
    def special_tokens(self) -> dict[int, str]:
        """The added tokens marked special (control tokens, GGUF's CONTROL type): id -> text."""
        return {i: t.content for i, t in self.backend.get_added_tokens_decoder().items() if t.special}

    def token_to_id(self, token: str) -> int | None:
        return self.backend.token_to_id(token)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Token ids of `text`. Added-token text inside it (`<|im_start|>`...)
        becomes that single token; `add_special_tokens` adds the post-processor's
        BOS/EOS, which a rendered prompt already carries, hence off by default."""
        if add_special_tokens:
            return _encode_plain(self.backend, text, add_special_tokens=True)
        return self._segments.encode(text)

    def encode_with_literals(self, text: str, literals: list[tuple[int, int]]) -> list[int]:
        """Token ids of a rendered prompt in which the `literals` spans (added-token
        spellings that came from request text, see literal_text.py) are ordinary
        text. Everything else encodes as `encode` does; without literals it is
        `encode`."""
        if not literals:
            return self._segments.encode(text)
        return self._segments.encode_with_literals(text, literals)

    def decode(self, ids: list[int]) -> str:
        """Text of `ids`, special tokens kept as their text."""
        return self.backend.decode(ids, skip_special_tokens=False)

    def detokenizer(self) -> IncrementalDetokenizer:
        return IncrementalDetokenizer(self)

    # ------------------------------------------------------------ token pieces

    def piece_bytes(self, token_id: int) -> bytes:
        """The exact bytes one token contributes to decoded text."""
        piece = self._pieces.get(token_id)
        if piece is None:
            piece = self._pieces[token_id] = self._compute_piece_bytes(token_id)
        return piece

    @property
    def strips_leading_space(self) -> bool:
        """SentencePiece decoders drop the space of the first token's `▁`."""
        return self._piece_style == "sentencepiece-strip"

    def _compute_piece_bytes(self, token_id: int) -> bytes:
        added = self._added.get(token_id)
        if added is not None:
            return added.encode("utf-8")
        token = self.backend.id_to_token(token_id)
        if token is None:
            raise ValueError(f"token id {token_id} is not in the vocabulary")
        if self._piece_style == "byte-level":
            try:
                return bytes(_UNICODE_TO_BYTE[c] for c in token)
            except KeyError:  # not a byte-level piece; the decoder emits it as UTF-8
                return token.encode("utf-8")
        byte = _BYTE_FALLBACK_PIECE.match(token)
        if byte:
            return bytes([int(byte.group(1), 16)])
        return token.replace(SPM_SPACE, " ").encode("utf-8")


class _SegmentCache:
    """Encodes prompts segment by segment, remembering the segments.

    Special tokens split text into segments that the tokenizer encodes on their own
    (they never merge across one), and an agent's prompts repeat the same segments
    on every turn and in every session: Claude Code's system prompt and tools are
    ~40K tokens that take HF `tokenizers` ~0.2 s to encode, and the template's short
    pieces between special tokens ("\n", "assistant\n", a role and an earlier
    turn's message) cost a call into the backend each (~2-20 µs, most of it the
    call's own overhead). Encoding each segment once makes a request's
    tokenization cost its new text only. Long and short segments are kept apart,
    each bounded, so that a flood of one-off short texts never evicts a system
    prompt. Used only when segment-wise encoding provably equals whole-text
    encoding for this tokenizer (checked on probe texts at load: SentencePiece
    "first" prefix spaces, for one, break the equivalence); otherwise every call
    encodes whole.
    """

    _MIN_CACHED = 512  # characters; the long-segment cache's shortest
    # Longer segments are one-off (a huge pasted file): caching them only pins memory.
    _MAX_CACHED = 1024 * 1024
    _MAX_CHARS = 64 * 1024 * 1024
    # Short segments, least recently used evicted first: at most ~256K ids (~10 MB).
    _SHORT_CHARS = 256 * 1024

    def __init__(self, backend: HFTokenizer):
        self._backend = backend
        self._cache: dict[str, list[int]] = {}
        self._chars = 0
        self._short = _ShortSegments(self._SHORT_CHARS)
        self._plain_short = _ShortSegments(self._SHORT_CHARS)
        # Every added token, for prompts with literal spellings (the plain backend is built on first use).
        self._added = {t.content: i for i, t in backend.get_added_tokens_decoder().items()}
        self._find_added = re.compile(literal_alternation(self._added)).finditer if self._added else None
        self._plain: HFTokenizer | None = None
        self._plain_cache: dict[str, list[int]] = {}
        splitters = {
            t.content: i
            for i, t in backend.get_added_tokens_decoder().items()
            if t.special and not (t.lstrip or t.rstrip or t.single_word or t.normalized)
        }
        self._ids = splitters
        self._cuttable = pieces_equivalent(backend)
        self._split = (
            re.compile("|".join(re.escape(t) for t in sorted(splitters, key=len, reverse=True))).finditer
            if splitters
            else None
        )
        if self._split is not None and not self._equivalent():
            self._split = None

    def encode(self, text: str) -> list[int]:
        if self._split is None:
            return _encode_plain(self._backend, text, pieces=self._cuttable)
        ids: list[int] = []
        pos = 0
        for match in self._split(text):
            if match.start() > pos:
                self._segment(text[pos : match.start()], ids)
            ids.append(self._ids[match.group()])
            pos = match.end()
        if pos < len(text):
            self._segment(text[pos:], ids)
        return ids

    def encode_with_literals(self, text: str, literals: list[tuple[int, int]]) -> list[int]:
        """Outside the literal spans every added token is a boundary (as HF splits
        at them); the text between two boundaries, literal spellings included, is
        encoded with added-token matching off, so a literal merges with its
        neighbours exactly as any other text would."""
        ids: list[int] = []
        chunk: list[str] = []
        has_literal = False

        def flush() -> None:
            nonlocal has_literal
            if chunk:
                joined = "".join(chunk)
                (self._plain_segment if has_literal else self._segment)(joined, ids)
                chunk.clear()
            has_literal = False

        def structure(piece: str) -> None:
            pos = 0
            for match in self._find_added(piece) if self._find_added else ():
                if match.start() > pos:
                    chunk.append(piece[pos : match.start()])
                flush()
                ids.append(self._added[match.group()])
                pos = match.end()
            if pos < len(piece):
                chunk.append(piece[pos:])

        pos = 0
        for start, end in literals:
            structure(text[pos:start])
            chunk.append(text[start:end])
            has_literal = True
            pos = end
        structure(text[pos:])
        flush()
        return ids

    def _plain_segment(self, text: str, out: list[int]) -> None:
        if self._plain is None:
            self._plain = _without_added_tokens(self._backend)
        if len(text) < self._MIN_CACHED:
            out.extend(self._plain_short.ids(self._plain, text))
        else:
            self._cached(self._plain, self._plain_cache, text, out)

    def _segment(self, text: str, out: list[int]) -> None:
        if len(text) < self._MIN_CACHED:
            out.extend(self._short.ids(self._backend, text))
        else:
            self._cached(self._backend, self._cache, text, out)

    def _cached(self, backend: HFTokenizer, cache: dict[str, list[int]], text: str, out: list[int]) -> None:
        """`text`'s ids appended to `out` (a long text's straight from its pieces: never
        copied again as a whole, a GIL-held copy of millions of ids)."""
        if len(text) > self._MAX_CACHED:
            _encode_plain(backend, text, pieces=self._cuttable, out=out)
            return
        ids = cache.get(text)
        if ids is None:
            ids = _encode_plain(backend, text, pieces=self._cuttable)
            if self._chars + len(text) > self._MAX_CHARS:
                self._cache.clear()
                self._plain_cache.clear()
                self._chars = 0
            cache[text] = ids
            self._chars += len(text)
        out.extend(ids)

    def _equivalent(self) -> bool:
        specials = list(self._ids)[:3]
        probes = [f"{s} hello world{s}\n  indented {s}{s}tail  " for s in specials] + [
            f"x{specials[0]} {specials[-1]}\n\n y",
            f"  {specials[0]}lead",
        ]
        try:
            return all(self.encode(p) == self._backend.encode(p, add_special_tokens=False).ids for p in probes)
        finally:
            self._short.clear()  # the probes' segments were encoded for the check only


class _ShortSegments:
    """Short segments' ids by their text, at most `limit` characters of them; the
    least recently used go first. Callers copy the ids out (never hand out the list).
    Renders run on the event loop and on offload threads at once: the bookkeeping is
    under a lock (uncontended, ~0.1 µs), the encoding outside it."""

    def __init__(self, limit: int):
        self._limit = limit
        self._ids: dict[str, list[int]] = {}  # in order of last use
        self._lock = threading.Lock()
        self.chars = 0

    def ids(self, backend: HFTokenizer, text: str) -> list[int]:
        with self._lock:
            ids = self._ids.pop(text, None)
            if ids is not None:
                self._ids[text] = ids
                return ids
        ids = backend.encode(text, add_special_tokens=False).ids
        with self._lock:
            if text not in self._ids:
                self._ids[text] = ids
                self.chars += len(text)
                while self.chars > self._limit:  # never the text just added: it is shorter than the limit
                    oldest = next(iter(self._ids))
                    self.chars -= len(oldest)
                    del self._ids[oldest]
        return ids

    def clear(self) -> None:
        with self._lock:
            self._ids.clear()
            self.chars = 0


# Longer texts are encoded with `encode_batch_fast`, which releases the GIL while it
# works (`encode` holds it throughout: measured, a thread encoding 1.3 MB starved the
# event loop for 2.9 s) and keeps no character offsets, whose freeing is GIL-held
# work too (0.7 s for a 20 MB text); the ids are the same. Shorter ones are not worth
# the hand-off.
_GIL_FREE_CHARS = 4096
# Turning the result into a Python list holds the GIL (0.3 s for 4.3M ids), so a long
# text that may be cut into pieces is encoded as pieces of about this many characters
# (~15K tokens each, a millisecond or two of GIL apiece).
_PIECE_CHARS = 64 * 1024
# Where a text may be cut: after a newline, or before a single space, between two
# non-space characters. A pre-tokenizer of the GPT-2 kind splits there anyway; whether
# this tokenizer does is checked on probes at load (`pieces_equivalent`).
_PIECE_BOUNDARY = re.compile(r"\n(?=\S)|(?<=\S)(?= \S)")
_PIECE_PROBES = (
    "The end.\nNext line",
    "hello world, again and again",
    "a\n\nb  c\n\td e",
    "x = f(1, 2)\nreturn x",
    "数字 测试\n漢字 かな",
    "don't stop 123 456 7.5",
    "café naïve\r\nok go",
    " lead word\n trail",
)


def _encode_plain(
    backend: HFTokenizer,
    text: str,
    add_special_tokens: bool = False,
    pieces: bool = False,
    out: list[int] | None = None,
) -> list[int]:
    """`text`'s ids, appended to `out` when given. `pieces`: the text may be cut at
    `_PIECE_BOUNDARY` (verified for `backend`). The pieces are encoded one after
    another, not as one batch: a batch runs on every core, and one huge request would
    take the CPU from the event loop too."""
    if len(text) < _GIL_FREE_CHARS:
        ids: list[int] = backend.encode(text, add_special_tokens=add_special_tokens).ids
    elif not pieces or add_special_tokens:
        ids = backend.encode_batch_fast([text], add_special_tokens=add_special_tokens)[0].ids
    else:
        ids = [] if out is None else out
        for part in _pieces(text):
            # One piece's list at a time: the loop gets the GIL in between.
            ids.extend(backend.encode_batch_fast([part], add_special_tokens=False)[0].ids)
        return ids
    if out is None:
        return ids
    out.extend(ids)
    return out


def _pieces(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while len(text) - pos > 2 * _PIECE_CHARS:
        cut = _PIECE_BOUNDARY.search(text, pos + _PIECE_CHARS)
        if cut is None:
            break
        out.append(text[pos : cut.end()])
        pos = cut.end()
    out.append(text[pos:])
    return out


def pieces_equivalent(backend: HFTokenizer) -> bool:
    """Encoding a text cut at every `_PIECE_BOUNDARY` gives the ids of the whole text
    (on the probes; no added token spans a boundary). SentencePiece tokenizers that
    prefix a word with its space marker fail this and are encoded whole."""
    if any(
        _PIECE_BOUNDARY.search(t.content) or t.content.isspace() for t in backend.get_added_tokens_decoder().values()
    ):
        return False
    for probe in _PIECE_PROBES:
        whole = backend.encode(probe, add_special_tokens=False).ids
        for cut in _PIECE_BOUNDARY.finditer(probe):
            left, right = probe[: cut.end()], probe[cut.end() :]
            if left and right:
                parts = (
                    backend.encode(left, add_special_tokens=False).ids
                    + backend.encode(right, add_special_tokens=False).ids
                )
                if parts != whole:
                    return False
    return True


def _without_added_tokens(backend: HFTokenizer) -> HFTokenizer:
    """A copy of `backend` that matches no added token in input text: every added
    token is marked special and special tokens are encoded as text."""
    state = json.loads(backend.to_str())
    for token in state.get("added_tokens", []):
        token["special"] = True
    plain = HFTokenizer.from_str(json.dumps(state))
    plain.encode_special_tokens = True
    return plain


def _token_text(token: Any) -> str | None:
    """tokenizer_config tokens are strings or AddedToken dicts."""
    if isinstance(token, dict):
        content = token.get("content")
        return content if isinstance(content, str) else None
    return token if isinstance(token, str) else None


def _piece_style(decoder: dict[str, Any] | None) -> str:
    """How a token's vocabulary string maps to output bytes, read off the decoder."""
    if decoder is None:
        raise ValueError("tokenizer has no decoder; cannot detokenize")
    kinds = [d["type"] for d in decoder.get("decoders", [])] if decoder["type"] == "Sequence" else [decoder["type"]]
    if "ByteLevel" in kinds:
        return "byte-level"
    if "Metaspace" in kinds or "ByteFallback" in kinds or "Replace" in kinds:
        strips = "Strip" in kinds or (decoder["type"] == "Metaspace" and decoder.get("prepend_scheme") != "never")
        return "sentencepiece-strip" if strips else "sentencepiece"
    raise ValueError(f"unsupported tokenizer decoder {kinds}")


class IncrementalDetokenizer:
    """Turns a stream of token ids into text, sans-IO and O(1) per token.

    `push(id)` returns the text that became final with this token: complete UTF-8
    characters only, so a character split across byte-level or `<0xNN>` tokens is
    emitted whole by the token that completes it, never as U+FFFD. Special tokens
    come out as their text. The concatenation of every `push` and the final
    `flush` equals `tokenizer.decode(all ids)`.
    """

    def __init__(self, tokenizer: Tokenizer):
        self._tokenizer = tokenizer
        # 'replace' mirrors the full decode's lossy handling of invalid bytes.
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._strip_space = tokenizer.strips_leading_space

    def push(self, token_id: int) -> str:
        return self._emit(self._utf8.decode(self._tokenizer.piece_bytes(token_id)))

    def flush(self) -> str:
        """Text still held at the end of the stream (an incomplete UTF-8 tail
        becomes U+FFFD, as in a full decode)."""
        return self._emit(self._utf8.decode(b"", final=True))

    def _emit(self, text: str) -> str:
        if self._strip_space and text:
            self._strip_space = False
            if text.startswith(" "):
                text = text[1:]
        return text
