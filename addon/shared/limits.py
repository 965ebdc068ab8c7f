"""Every bound the addon keeps, in one place: what it decodes, stores, remembers and logs.

Whatever a client or an upstream sends, the addon's own memory, disk and time stay within these; what is
over a bound is forwarded untouched and left unread, uncached or cut, with an event that says so. The
README's table of bounds (under Guarantees) sums these up.
"""

from __future__ import annotations

import hashlib

KiB = 1024
MiB = 1024 * KiB

# Bytes decoded of one compressed body (a request, an answer, the copy of a stream): a compression bomb
# costs at most this much, and a body that decodes to more is forwarded untouched and not read.
MAX_DECODED_BYTES = 16 * MiB
# The copy of one stream held unread until the client has the stream's end, then read (as received, before any
# decoding): a turn of a few thousand events is read after the client has all of it, at no cost to the client. A
# longer stream is read as it passes from this point on, so memory stays bounded.
MAX_HELD_STREAM_BYTES = 2 * MiB
# Bytes of an error answer read to explain it: provider error texts are a few KB.
MAX_ERROR_BODY_BYTES = 1 * MiB
# One stored value (a reasoning field, a signature, a thinking block, a reasoning item) and one stored
# record (the reasoning of one answer) as serialised JSON; an answer over either is logged, not cached.
MAX_VALUE_BYTES = 4 * MiB
MAX_RECORD_BYTES = 8 * MiB
# One line of the event log; a longer event has its longest strings and lists cut to fit.
MAX_LOG_LINE_BYTES = 64 * KiB
# Readable text (reasoning text, thinking) written to the log per field; its length and hash are kept.
MAX_LOGGED_TEXT_CHARS = 4096
# What a reader holds of one answer while it streams, in all, and the tool calls of one answer: past either the
# answer is read to its end but nothing more is kept, and it is not cached.
MAX_ANSWER_BYTES = 16 * MiB
MAX_TOOL_CALLS = 256
# The choices of one chat completion a reader keeps apart (OpenAI takes `n` up to 128), and the content block index
# it takes from a stream (Bedrock's `contentBlockIndex`): a real answer of 256 tool calls, each after a reasoning and
# a text block, stays far below it. Past either the answer is read to its end, not cached.
MAX_CHOICES = 128
MAX_CONTENT_BLOCKS = 4096
# Header blocks an AWS event-stream parser remembers having read, by their bytes, so that a stream's frames (Bedrock's
# repeat one block per event type, under 100 bytes each) are parsed once a block: this many blocks of up to this many
# bytes each, a stream's own, let go of when the stream ends; at most 16 KiB of headers, some 320 KiB parsed. A frame
# with a larger block (up to the 128 KiB the AWS SDKs accept) is parsed on its own and not kept.
MAX_KNOWN_HEADER_BLOCKS = 64
MAX_KNOWN_HEADER_BLOCK_BYTES = 256
# Repairs each proxy process remembers having logged (a 64-bit hash each, least recently seen dropped first), so
# that a `repaired` event lists a repair once per conversation and only counts it on later turns. About 8 MB when
# full; past it, the repairs of the longest-idle conversations are listed in full once more if they come back.
MAX_REMEMBERED_REPAIRS = 65536


def utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class Budget:
    """What one answer's reader may still hold. The first bound it meets is kept as `over`, for the capture to
    say why the answer was not cached; from then on nothing more is held."""

    __slots__ = ("over", "used", "calls")

    def __init__(self) -> None:
        self.over: str | None = None
        self.used = 0
        self.calls = 0

    def take(self, what: str, size: int, held: int = 0) -> bool:
        """Whether `size` more bytes of `what` (which holds `held` already) may be kept."""
        if self.over is not None:
            return False
        if held + size > MAX_VALUE_BYTES:
            self.over = f"its {what} is over the {MAX_VALUE_BYTES // MiB} MiB limit per stored value"
        elif self.used + size > MAX_ANSWER_BYTES:
            self.over = f"its reasoning state is over the {MAX_ANSWER_BYTES // MiB} MiB limit per answer"
        else:
            self.used += size
            return True
        return False

    def refuse(self, why: str) -> None:
        """Marks the answer over a bound of a reader's own (`why` says which, after "it"): nothing more is held."""
        if self.over is None:
            self.over = why

    def take_call(self) -> bool:
        """Whether one more tool call may be kept."""
        if self.over is None and self.calls >= MAX_TOOL_CALLS:
            self.over = f"it makes more than {MAX_TOOL_CALLS} tool calls"
        self.calls += 1
        return self.over is None


class Parts:
    """A text that arrives in pieces, kept within a budget and joined once."""

    __slots__ = ("what", "budget", "pieces", "size")

    def __init__(self, what: str, budget: Budget) -> None:
        self.what = what
        self.budget = budget
        self.pieces: list[str] = []
        self.size = 0

    def append(self, piece: str) -> None:
        size = utf8_size(piece)
        if self.budget.take(self.what, size, self.size):
            self.pieces.append(piece)
            self.size += size
        elif self.pieces:
            self.pieces = []  # never used once over: let it go


# A name a request gives (its model) is logged and stored with every value of its answer: one longer than this
# is cut, and keeps its own hash so that two long names stay two.
MAX_NAME_CHARS = 256


# A line in mitmdump's output or a flow comment: a diagnosis names what the client sent (a function's name, a
# message's block type), which a client can make as long as a body.
MAX_OUTPUT_LINE_CHARS = 8192


def short_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def cut_text(text: str, keep: int) -> str:
    """A long text cut to `keep` characters, saying how long it was and which it was (a short SHA-256)."""
    if len(text) <= keep:
        return text
    return f"{text[:keep]}…[cut: {len(text)} chars, sha256 {short_digest(text)}]"


def bounded_name(name: str | None) -> str | None:
    return cut_text(name, MAX_NAME_CHARS - 48) if name is not None and len(name) > MAX_NAME_CHARS else name


# Steps one comparison of two versions of a conversation (the content view, the report) may take to align the
# messages between their common start and end: past them, those messages are paired in order. difflib's alignment
# can take the cube of their count when thousands are alike (minutes for a capture of 0.3 MB); a turn's changes in a
# real conversation take a few thousand steps, and this many some 20 ms.
MAX_ALIGNMENT_STEPS = 250_000


# Records the cache drops at most in one step of its upkeep (addon/hooks/upkeep.py), and as many origins: a step reads
# only what it drops, 2 to 3 ms in a SQLite file of 400,000 entries.
PRUNE_STEP = 64


# Requests the proxy remembers so that the next turn of their conversation is read from where they ended (see
# addon/request/history.py), in all and per scope and route, and the bytes they may hold: the body the client sent, the one
# sent on when it was repaired, and what was parsed and found of them, counted from above (a body of `[]`s parses to
# over twenty times its bytes). Past either, the longest-idle conversation's turn is read whole.
MAX_HISTORIES = 256
MAX_HISTORIES_PER_ROUTE = 16
MAX_HISTORY_BYTES = 128 * MiB

# Memos of what a tool call's name and arguments hash to (addon/shared/records.py), which a long history asks once per call
# on every turn: calls of up to MEMO_KEY_CHARS characters in all (name, model and arguments), MEMO_ENTRIES of them per
# memo; longer arguments (an agent writing a file sends megabytes) only while they and their hashes hold at most
# MAX_MEMO_BYTES, the least recently asked dropped first. Other memos keep only keys of a few hundred bytes.
MEMO_KEY_CHARS = 256
MEMO_ENTRIES = 8192
MAX_MEMO_BYTES = 8 * MiB
