"""What a provider dialect is: who is behind a request, what that provider wants sent back, and its error texts.

A wire format (addon/wire/) knows how a body is shaped; a dialect knows who answers it. Each provider family is one
module of this package with its `DIALECT` (how to tell its traffic, what its models require) and its error rules,
registered in one line of `__init__.py`; the diagnosis (addon/diagnosis/) matches error bodies against the rules of
every registered dialect.

A rule is a provider's error text (a regular expression and a cheap phrase to skip it by) with what it means: a rule
id, the kind of problem and the field it is about. The places a text names (message index, content-block position,
part, item ids, function) are taken from the match's named groups exactly as the text gives them; each module cites
where its texts come from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

# "foreign": the error says the value was issued for another model, account, caller or conversation.
Kind = Literal[
    "missing", "invalid", "foreign", "orphaned", "duplicate", "not_found", "schema", "unsupported", "unknown"
]

# Rule ids more than one family's texts name (and the formats' checks name them too).
TOOL_RESULT_MISSING = "tool_result_missing"
TOOL_RESULT_ORPHANED = "tool_result_orphaned"
ENCRYPTED_CONTENT_FOREIGN = "encrypted_content_foreign"
REASONING_CONTENT_MISSING = "reasoning_content_missing"
# OpenAI's and xAI's texts for encrypted reasoning they cannot read back.
RESPONSES_ENCRYPTED_CONTENT_INVALID = "responses_encrypted_content_invalid"
# Rule ids of one family that a gateway in front of it passes on, and that the gateway's dialect names as what a
# request without a signature breaks (Copilot relays Anthropic's and Vertex AI's texts).
ANTHROPIC_THINKING_EXPECTED = "anthropic_thinking_expected"
VERTEX_SIGNATURE_MISSING = "vertex_signature_missing"

# Which assistant turns' reasoning a provider reads when a request sends it back: every turn's, or only the current
# tool loop's (earlier turns' is discarded unless the request asks the provider to preserve it).
ReadBack = Literal["all", "current_loop"]


# What a rule's `refine` reads more of a text with: the match, and the places found so far (to add to or change).
Refine = Callable[[re.Match[str], dict[str, Any]], None]

# What a person can do about a rule's error where the remedy of its kind of problem does not say it: a text, or one
# made of what the error says changed (the diagnosis's `cause`, None when it names nothing).
Advice = str | Callable[[str | None], str]

# What the proxy finds of a refused signed or encrypted value, held against the one it captured for that place
# (addon/diagnosis/explanation.py): sent exactly as captured ("as_issued"), different from it ("altered"), never
# captured ("unseen"), sent without it by a request that never asked the provider for such values ("not_asked");
# for a text that names no value, none sent differs from a captured one and some were never captured
# ("none_differs").
Verdict = Literal["as_issued", "altered", "unseen", "not_asked", "none_differs"]


@dataclass(frozen=True)
class Rule:
    rule: str
    provider: str
    kind: Kind
    field: str | None
    # A lower-case phrase every text the rule matches holds (whitespace collapsed): skips the regex cheaply.
    needle: str
    pattern: re.Pattern[str]
    summary: str
    generic: bool = False  # only when no specific rule matched any text
    refine: Refine | None = None
    # Given instead of the advice for its kind, when the problem is the rule's own kind (a generic rule whose cause
    # the format's own checks found is advised as that cause). Rules of one id share it: the first given counts.
    advice: Advice | None = None
    # A signature the provider requires, which llm_signature_placeholder can stand in for (degraded) where the
    # format's repair sends placeholders: the remedy named when nothing was cached and the setting is off.
    placeholder_remedy: bool = False
    # The error is about a signed or encrypted value the request sent back: the explanation finds the value (by the
    # ids the text names, the ends of it the text quotes, or else as the one that differs from what the proxy
    # captured) and judges it. The advice for a verdict where the provider's own words are needed; the others get
    # the advice every provider shares. None: the value is not judged.
    verdicts: Mapping[Verdict, str] | None = None


def rx(*parts: str) -> re.Pattern[str]:
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


# Optional backticks around a name: some copies of a text lose them.
B = "`?"
Q = "['\"]"
# A list of ids as texts end with them ("…: toolu_01, toolu_02"); Qwen's "message[15].role" among them.
IDS = r"(?P<ids>[\w:\-\[\]]+(?:\s*,\s*[\w:\-\[\]]+)*)"

_PATH_INDEX = re.compile(r"(?:contents|messages|input)\.?\[(\d+)\]")
_PATH_PART = re.compile(r"\.(?:parts|content)\.?\[(\d+)\]")
_MESSAGE_AT = re.compile(r"^messages?\[(\d+)\]")
# Gemini names a function by its tool namespace: "default_api:read_file".
_DEFAULT_API = "default_api:"


def places(match: re.Match[str]) -> dict[str, Any]:
    """Index, position, block, function and ids from a match's named groups: `index` (a 0-based message index),
    `pos` (a 1-based content-block position), `block`, `fq`/`fb` (a function name with or without backticks),
    `id1`/`id2` and `ids` (item or call ids), `head` and `tail` (the ends of a value the text quotes, its middle
    elided)."""
    named = {k: v for k, v in match.groupdict().items() if v is not None}
    found: dict[str, Any] = {}
    if "index" in named:
        found["index"] = int(named["index"])
    if "pos" in named:
        found["position"] = int(named["pos"])
        found["index"] = found["position"] - 1
    if "block" in named:
        found["block"] = int(named["block"])
    name = named.get("fq") or named.get("fb")
    if name:
        found["function"] = name[len(_DEFAULT_API) :] if name.startswith(_DEFAULT_API) else name
    ids = [named[k] for k in ("id1", "id2") if k in named]
    for value in (named.get("ids") or "").split(","):
        value = value.strip()
        at = _MESSAGE_AT.match(value)
        if at:  # Qwen names the unanswered message instead of the call ids: "message[15].role"
            found.setdefault("index", int(at.group(1)))
        elif value:
            ids.append(value)
    if ids:
        found["item_ids"] = ids
    if "head" in named and "tail" in named:
        found["quoted_ends"] = (named["head"], named["tail"])
    return found


def path_places(match: re.Match[str], found: dict[str, Any]) -> None:
    """The message and part a field path names ("contents[3].parts[0].thought_signature", "messages[2].content")."""
    field_path = match.group("path")
    index = _PATH_INDEX.search(field_path)
    part = _PATH_PART.search(field_path)
    found["index"] = int(index.group(1)) if index else None
    found["block"] = int(part.group(1)) if part else None


def reasoning_content_missing(provider: str, pattern: re.Pattern[str]) -> Rule:
    """One rule id for a tool-call message sent back without its reasoning_content, however each host words it."""
    return Rule(
        REASONING_CONTENT_MISSING,
        provider,
        "missing",
        "reasoning_content",
        "reasoning_content",
        pattern,
        "an assistant tool-call message was sent back without its reasoning_content",
    )


def thinking_option(doc: Any, name: str) -> Any:
    """A key of a chat request's `thinking` object (`{"type": "enabled", "keep": "all"}`), None without one."""
    thinking = doc.get("thinking") if isinstance(doc, dict) else None
    return thinking.get(name) if isinstance(thinking, dict) else None


class ChatSignature(NamedTuple):
    """What a Gemini 3 function call of the current turn must carry back on chat completions, behind a dialect."""

    rule: str  # the rule id a request without it breaks
    field: str  # where the dialect's clients send the signature back


class MessagesThinking(NamedTuple):
    """How a provider serving the Anthropic Messages format treats thinking blocks, where it differs from Anthropic
    (which thinks only when asked, wants the current tool loop's blocks back and takes both block types)."""

    who: str  # the provider, for a person: "DeepSeek's Anthropic-compatible API"
    by_default: bool  # it thinks when the request does not say (no `thinking` field)
    every_turn: bool  # every assistant turn with tool use must carry its thinking back, not only the current loop's
    refused_blocks: frozenset[str]  # block types it cannot read (a request holding one is refused whole)
    refused_rule: str  # the rule id of a request holding such a block
    missing_rule: str  # the rule id of an assistant turn sent back without its thinking
    # What stands in for thinking the proxy cannot put back (llm_recover): "thinking_off", the request sent with
    # thinking turned off, as Anthropic's own error advises; "empty_block", an empty thinking block where the provider
    # only checks that one is there.
    stand_in: str = "thinking_off"


class Dialect:
    """A provider, or a gateway in front of providers: what the proxy must know of it beyond the wire format.

    Every answer is "nothing special" by default; a dialect overrides what its provider requires."""

    name: str = ""
    # Its `gen_ai.provider.name` in OpenTelemetry's GenAI conventions (a listed value where there is one, such as
    # "aws.bedrock"), and the hosts (or their last labels) where it answers, by which a trace names it.
    otel_name: str = ""
    known_hosts: tuple[str, ...] = ()
    # Where it answers, for a request whose error came in its envelope through another host (a local gateway such
    # as copilot-api passes Copilot's errors on): that request is checked as if sent here.
    host: str = ""
    rules: tuple[Rule, ...] = ()
    # A gateway's clients send back, under these names, the fields its upstream providers' error texts name.
    gateway_fields: dict[str, str] = {}
    # True where a request without the reasoning state the provider issued is answered all the same, only worse:
    # a repair there is said to be one the provider would not have asked for.
    silent_drops: bool = False
    # True where answers carry their reasoning as a `<think>…</think>` block at the start of `content`, which the
    # provider wants back there (a client that strips it gets it put back).
    think_in_content: bool = False
    # Opaque assistant-message fields its chat answers carry beyond those every chat host knows
    # (wire/chat_completions/fields.py), to be captured and sent back verbatim.
    message_fields: tuple[str, ...] = ()

    def serves(self, host: str, path: str, model: str) -> bool:
        """Whether this provider answers a request to `host` and `path` for `model` (judged without its body)."""
        return False

    def chat_signature(self, model: str) -> ChatSignature | None:
        """For a request it serves: what a current-turn function call of `model` must carry on chat completions."""
        return None

    def requires_reasoning_content(self, model: str) -> bool:
        """Whether `model` refuses an assistant tool-call message without `reasoning_content`, whoever serves it."""
        return False

    def reasoning_summary_required(self, model: str) -> bool:
        """For a request it serves on the Responses API: whether a reasoning item sent back with its
        `encrypted_content` is refused without its `summary`."""
        return False

    def refused_message_fields(self, model: str) -> frozenset[str]:
        """For a request it serves: the fields of an assistant message on chat completions it refuses the request for
        (another provider's reasoning fields, where its schema is closed)."""
        return frozenset()

    def messages_thinking(self, model: str, host: str | None = None, path: str = "") -> MessagesThinking | None:
        """How `model` treats thinking blocks on the Anthropic Messages format; None: as Anthropic does. Without a
        `host` (where only the model is known: which cache keys a request may need) it answers for any host that
        might serve the model; with one, only where the dialect's rules hold, since they change the body sent."""
        return None

    def thinking_off(self, model: str, doc: Any) -> bool:
        """Whether a request turns `model`'s thinking off, so that none of it is required back."""
        return False

    def empty_reasoning_accepted(self, model: str) -> bool:
        """Whether an assistant tool-call message it requires `reasoning_content` on is taken with `""` there: what
        stands in for reasoning the proxy cannot put back (llm_recover)."""
        return False

    def reads_back(self, path: str, doc: Any) -> ReadBack:
        """For a request it serves: which turns' reasoning the provider reads. The repair puts back no more."""
        return "all"
