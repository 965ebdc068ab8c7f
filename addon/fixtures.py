"""Captured LLM exchanges as redacted test fixtures, and fixtures as flows again.

A user whose conversation fails records it (`mitmdump -w flows.mitm`) and exports it
into `flows/<name>/`; the test suite replays every exchange found there through the
addon. This module is the data layer of that: flows become `ExchangeFixture`s with
every credential removed, opaque reasoning state can be swapped for placeholders,
fixture directories are written and read, and a fixture becomes a flow the addon's
hooks can process.

Credentials:
* headers: only names on an allowlist survive (`REQUEST_HEADERS`, `RESPONSE_HEADERS`;
  never a name in `redact.SECRET_HEADERS`), and their values still go through
  `redact_text`;
* URL: user info and every query parameter named in `redact.SECRET_QUERY_PARAMS` are
  removed entirely, not masked;
* bodies: every JSON string and key, and every line of an event stream, goes through
  `redact_text`; a string or number under a key that names a secret (`api_key`,
  `client_secret`, `password`, `authorization`, `aws_secret_access_key`, ...) becomes
  "[REDACTED]" whatever it looks like. An event stream is redacted as text, line by
  line, so its framing survives byte for byte; a `data:` line whose decoded JSON would
  still hold a secret is written again from the redacted document instead.

Opaque values are found by where they sit, never by how they look: string values
under `reasoning_opaque`, `encrypted_content`, `signature`, `thoughtSignature` and
`thought_signature` (Copilot, Responses, Anthropic and OpenRouter text signatures,
Gemini native and its OpenAI-compatible `extra_content`, LiteLLM
`provider_specific_fields`), the items of `thought_signatures`, `data` beside
`"type": "redacted_thinking"` or `"reasoning.encrypted"`, and the part after
`__thought__` in a LiteLLM tool call id. Tool call arguments and function results are
user data and never searched. Google's documented dummy signatures stay as they are.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus, urlsplit, urlunsplit

import orjson
from mitmproxy import connection, http
from pydantic import BaseModel, ConfigDict, PrivateAttr

from . import __version__, decoding, formats, jsoncodec
from .annotate import META
from .decoding import message_body
from .formats.gemini import PLACEHOLDER_BASE64, PLACEHOLDER_PHRASE
from .limits import MAX_DECODED_BYTES
from .private_files import make_private_dir, write_private
from .records import SIGNATURE_IN_ID
from .redact import SECRET_HEADERS, SECRET_QUERY_PARAMS, redact_json, redact_json_text, redact_text, redact_url
from .settings import PROJECT

# What a fixture keeps of the request headers: what says which client spoke (and so which
# quirks to expect) and what changes how the provider reads the body. Anything naming an
# account, a session, a machine or a request (organisation, project, session and request
# ids) is dropped with the credentials; content-length and content-encoding go because
# the body is stored decoded.
REQUEST_HEADERS = frozenset(
    {
        "content-type",
        "accept",
        "user-agent",
        # Anthropic: the API version and betas decide the thinking rules (interleaved thinking)
        "anthropic-version",
        "anthropic-beta",
        # OpenAI
        "openai-beta",
        # GitHub Copilot: which editor and integration, and agent vs user initiated turns
        "openai-intent",
        "x-initiator",
        "editor-version",
        "editor-plugin-version",
        "copilot-integration-id",
        "copilot-vision-request",
        "x-github-api-version",
        # Google SDKs name themselves here
        "x-goog-api-client",
        # OpenAI/Anthropic SDKs (Stainless) name their language and version
        "x-stainless-lang",
        "x-stainless-package-version",
        "x-stainless-runtime",
        "x-stainless-runtime-version",
        # OpenRouter: the calling application's name
        "x-title",
    }
)
# Of the response headers only what a replay needs: the body type (SSE or JSON) and a
# rate-limit hint; request ids, rate-limit counters and cookies are dropped.
RESPONSE_HEADERS = frozenset({"content-type", "retry-after"})

OPAQUE_KEYS = frozenset({"reasoning_opaque", "encrypted_content", "signature", "thoughtSignature", "thought_signature"})
OPAQUE_LIST_KEYS = frozenset({"thought_signatures"})
OPAQUE_DATA_TYPES = frozenset({"redacted_thinking", "reasoning.encrypted"})
# Published dummy values that clients send on purpose; replacing them would change their meaning.
PUBLIC_VALUES = frozenset({PLACEHOLDER_PHRASE, PLACEHOLDER_BASE64})
# Tool arguments and tool results are the user's data, not reasoning state, even under a key named "signature".
_USER_DATA_KEYS = frozenset({"args", "functionResponse", "function_response"})
_LITELLM_ID = re.compile(rf"\S*?{SIGNATURE_IN_ID}([A-Za-z0-9+/=_-]+)")
# Values at least this long are also replaced inside longer text (an error message quoting one);
# shorter ones only where a whole JSON string equals them, so that "abc123" never hits prose.
MIN_EMBEDDED = 16
# Url-safe base64 spells "+/" as "-_"; a client that re-encodes a signature keeps its placeholder's letters.
_BASE64_CANONICAL = str.maketrans("-_", "+/")

EXCHANGE_FILE = re.compile(r"^(\d+)\.json$")
META_FILE = "meta.json"
_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")


class RequestFixture(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: str
    url: str  # secret query parameters and user info removed
    headers: dict[str, str] = {}  # allowlisted names only, lower case
    body: Any  # a JSON object/array when the body is one, else its text; None when empty


class ResponseFixture(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: int
    headers: dict[str, str] = {}
    body: Any = None  # JSON object/array or text, for answers that are not event streams
    sse: str | None = None  # an event stream as text, framing and comments as received


class Expectation(BaseModel):
    """What replaying the exchange must do; filled in by whoever records the expectation."""

    model_config = ConfigDict(extra="forbid")

    repairs: list[str] = []  # RepairAction.describe() of each repair on this request, in order
    fails_after_repair: list[str] = []


class ExchangeFixture(BaseModel):
    model_config = ConfigDict(extra="forbid")

    request: RequestFixture
    response: ResponseFixture | None
    expect: Expectation | None = None
    # The recording proxy repaired this request live: the response answers the repaired request, not this one.
    repaired_live: bool = False
    # Whether opaque values were replaced by placeholders: a property of the export, kept in meta.json.
    _placeholders: bool = PrivateAttr(default=False)


# --- credentials ---------------------------------------------------------------------------------


def clean_url(url: str) -> str:
    """A URL without user info and without its secret query parameters."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    kept = [param for param in parts.query.split("&") if param and _param_name(param) not in SECRET_QUERY_PARAMS]
    cleaned = urlunsplit((parts.scheme, netloc, parts.path, "&".join(kept), ""))
    # A secret behind another separator (";key=...") is masked rather than missed.
    return redact_text(redact_url(cleaned))


def _param_name(param: str) -> str:
    return unquote_plus(param.partition("=")[0]).strip().lower()


def kept_headers(headers: http.Headers, allowed: frozenset[str]) -> dict[str, str]:
    """The allowlisted headers, names in lower case, repeated values joined."""
    kept: dict[str, list[str]] = {}
    for name, value in headers.items(multi=True):
        name = name.lower()
        if name in allowed and name not in SECRET_HEADERS:
            kept.setdefault(name, []).append(redact_text(value))
    return {name: ", ".join(values) for name, values in kept.items()}


def redact_event_stream(text: str) -> str:
    """An event stream with credentials masked line by line; line breaks and comments stay as they were."""
    return "".join(_redact_stream_line(line) + end for line, end in _lines(text))


def _redact_stream_line(line: str) -> str:
    split = _data_line(line)
    if split is None:
        return redact_text(line)
    prefix, payload = split
    return prefix + redact_json_text(payload)


def _compact(doc: Any) -> str:
    return jsoncodec.dumps(doc).decode("utf-8", "surrogateescape")


def _lines(text: str) -> list[tuple[str, str]]:
    """Lines with their own line break ("\\r\\n", "\\n", "\\r" or "" at the end), as SSE splits them."""
    pieces = _LINE_BREAK.split(text)
    return list(zip(pieces[0::2], [*pieces[1::2], ""]))


def _data_line(line: str) -> tuple[str, str] | None:
    """A `data:` line's prefix (with the one space SSE strips) and its payload; None for other lines."""
    if not line.startswith("data:"):
        return None
    cut = 6 if line[5:6] == " " else 5
    return line[:cut], line[cut:]


# --- flows to fixtures ---------------------------------------------------------------------------


def _text(raw: bytes) -> str:
    # surrogateescape keeps bytes that are not UTF-8, so a fixture gives back exactly what it was made of.
    return raw.decode("utf-8", "surrogateescape")


def decode_body(raw: bytes | None) -> Any:
    """A body as a fixture stores it: a JSON object or array when it is one, else its text; None when empty."""
    if not raw:
        return None
    try:
        doc = jsoncodec.loads(raw)
    except ValueError:
        return _text(raw)
    # A JSON scalar is stored as text so that text and JSON bodies can never be mistaken for each other.
    return doc if isinstance(doc, (dict, list)) else _text(raw)


def _redacted_body(raw: bytes | None) -> Any:
    body = decode_body(raw)
    return redact_text(body) if isinstance(body, str) else redact_json(body)


def _client_body(flow: http.HTTPFlow) -> bytes | None:
    """The request body as the client sent it: the copy kept before a live repair, if there is one."""
    meta = flow.metadata.get(META)
    original = meta.get("original_request") if isinstance(meta, dict) else None
    if isinstance(original, str):
        original = original.encode("utf-8", "surrogateescape")
    if not isinstance(original, bytes):
        return message_body(flow.request, MAX_DECODED_BYTES)
    content_encoding = flow.request.headers.get("content-encoding", "").strip()
    if not content_encoding or original.lstrip()[:1] in (b"{", b"["):
        return original
    try:
        return decoding.decode_body(original, content_encoding, MAX_DECODED_BYTES)
    except (decoding.NotDecodable, decoding.UnsupportedEncoding):
        return original  # kept already decoded


def _is_event_stream(headers: http.Headers) -> bool:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower() == "text/event-stream"


def _looks_like_event_stream(text: str) -> bool:
    start = text.lstrip()
    return start.startswith(("data:", "event:", ":"))


def response_fixture(response: http.Response) -> ResponseFixture:
    headers = kept_headers(response.headers, RESPONSE_HEADERS)
    raw = message_body(response, MAX_DECODED_BYTES) if response.raw_content is not None else None
    if raw and _is_event_stream(response.headers):
        return ResponseFixture(status=response.status_code, headers=headers, sse=redact_event_stream(_text(raw)))
    body = decode_body(raw)
    if isinstance(body, str) and _looks_like_event_stream(body):
        # An event stream sent without its content type: the addon reads it as one, so keep it as one.
        return ResponseFixture(status=response.status_code, headers=headers, sse=redact_event_stream(body))
    body = redact_text(body) if isinstance(body, str) else redact_json(body)
    return ResponseFixture(status=response.status_code, headers=headers, body=body)


def exchange_fixture(flow: Any) -> ExchangeFixture | None:
    """One flow as a redacted fixture (opaque values as they were); None for traffic that is not an LLM exchange.
    Raises decoding.Undecodable for an LLM exchange whose body cannot be read within the addon's bounds."""
    if not isinstance(flow, http.HTTPFlow):
        return None
    request = flow.request
    if not formats.routed(request.method, request.path):  # what is not LLM traffic is never decoded
        return None
    raw = _client_body(flow) if request.raw_content is not None else None
    if formats.claim(request.method, request.path, raw or b"") is None:
        return None
    return ExchangeFixture(
        request=RequestFixture(
            method=request.method,
            url=clean_url(request.url),
            headers=kept_headers(request.headers, REQUEST_HEADERS),
            body=_redacted_body(raw),
        ),
        response=response_fixture(flow.response) if flow.response is not None else None,
        repaired_live=_repaired_live(flow),
    )


def _repaired_live(flow: http.HTTPFlow) -> bool:
    meta = flow.metadata.get(META)
    return isinstance(meta, dict) and isinstance(meta.get("original_request"), (bytes, str))


def build_fixtures(
    flows: Iterable[Any], *, placeholders: bool, left_out: list[str] | None = None
) -> list[ExchangeFixture]:
    """The LLM exchanges among `flows`, in order, redacted; with `placeholders`, opaque values replaced. An
    exchange whose body cannot be read within the addon's bounds is left out, its reason added to `left_out`."""
    fixtures = []
    for flow in flows:
        try:
            fixture = exchange_fixture(flow)
        except decoding.Undecodable as e:
            if left_out is not None:
                left_out.append(f"{redact_url(flow.request.pretty_url)}: {e}")
            continue
        if fixture is not None:
            fixtures.append(fixture)
    return with_placeholders(fixtures) if placeholders else fixtures


# --- placeholders --------------------------------------------------------------------------------


def placeholder(value: str) -> str:
    """A stand-in for an opaque value: same length, letters for letters (same case), digits for digits.

    Every other character stays, so base64 padding, "+/" or "-_" and id punctuation keep
    their places. Each character is drawn from a hash of the value up to and including
    it, which makes the mapping deterministic and prefix-stable: a client that cut a value
    short (a truncated LiteLLM id) sends the start of the full value's placeholder. The
    hash reads url-safe base64 as standard base64, so both spellings of one signature get
    the same letters.
    """
    state = hashlib.blake2b(digest_size=8, person=b"llm-fixture-v1")
    out = []
    for char in value:
        state.update(char.translate(_BASE64_CANONICAL).encode("utf-8", "surrogatepass"))
        if "a" <= char <= "z":
            out.append(chr(ord("a") + state.digest()[0] % 26))
        elif "A" <= char <= "Z":
            out.append(chr(ord("A") + state.digest()[0] % 26))
        elif "0" <= char <= "9":
            out.append(chr(ord("0") + state.digest()[0] % 10))
        else:
            out.append(char)
    return "".join(out)


def _is_opaque(value: Any) -> bool:
    return isinstance(value, str) and value != "" and value not in PUBLIC_VALUES


def opaque_values(doc: Any) -> Iterator[str]:
    """Every opaque reasoning value in a JSON document (see the module docstring for where they are looked for)."""
    stack = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            found = _LITELLM_ID.fullmatch(node) if SIGNATURE_IN_ID in node else None
            if found is not None and _is_opaque(found.group(1)):
                yield found.group(1)
        elif isinstance(node, dict):
            kind = _hashable(node.get("type"))
            for key, value in node.items():
                if key in OPAQUE_KEYS or (key == "data" and kind in OPAQUE_DATA_TYPES):
                    if _is_opaque(value):
                        yield value
                elif key in OPAQUE_LIST_KEYS and isinstance(value, list):
                    yield from (item for item in value if _is_opaque(item))
                elif key in _USER_DATA_KEYS or (key == "input" and isinstance(kind, str) and kind.endswith("tool_use")):
                    continue
                else:
                    stack.append(value)


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def stream_fragments(doc: Any) -> list[tuple[tuple[Any, ...], str]]:
    """The pieces of opaque values one stream event carries, each with the slot its pieces are joined in.

    These are the values the format readers concatenate across events: Copilot's
    `reasoning_opaque`, OpenRouter `reasoning_details` strings (joined by type and
    index) and Anthropic's `signature_delta`s (joined per content block).
    """
    pieces: list[tuple[tuple[Any, ...], str]] = []
    if not isinstance(doc, dict):
        return pieces
    choices = doc.get("choices")
    for position, choice in enumerate(choices if isinstance(choices, list) else []):
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(delta, dict):
            continue
        index = _hashable(choice.get("index", position))
        if _is_opaque(delta.get("reasoning_opaque")):
            pieces.append((("choice", index, "reasoning_opaque"), delta["reasoning_opaque"]))
        details = delta.get("reasoning_details")
        for detail in details if isinstance(details, list) else []:
            if not isinstance(detail, dict):
                continue
            identity = (_hashable(detail.get("type")), _hashable(detail.get("index")))
            for key in ("signature", "data"):
                if _is_opaque(detail.get(key)) and (key == "signature" or identity[0] in OPAQUE_DATA_TYPES):
                    pieces.append((("choice", index, "details", *identity, key), detail[key]))
    delta = doc.get("delta")
    if doc.get("type") == "content_block_delta" and isinstance(delta, dict) and delta.get("type") == "signature_delta":
        if _is_opaque(delta.get("signature")):
            pieces.append((("block", _hashable(doc.get("index")), "signature"), delta["signature"]))
    return pieces


def _text_forms(value: str, mask: str) -> dict[str, str]:
    """How a value can be spelled inside JSON text (plain, escaped, with "\\/"), each with its mask spelled alike."""
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    escaped_mask = json.dumps(mask, ensure_ascii=False)[1:-1]
    return {
        value: mask,
        escaped: escaped_mask,
        escaped.replace("/", "\\/"): escaped_mask.replace("/", "\\/"),
    }


class Substitution:
    """Opaque values and their placeholders, applied to text in one pass, longest match first.

    One pass means a placeholder is never matched again, and at any position the longer
    of two values that start there wins, so a value inside another is never half replaced.
    """

    def __init__(self, values: Iterable[str]) -> None:
        self.forms: dict[str, str] = {}
        for value in values:
            for form, masked in _text_forms(value, placeholder(value)).items():
                if len(value) >= MIN_EMBEDDED:
                    self.forms[form] = masked
                else:
                    self.forms[f'"{form}"'] = f'"{masked}"'
                    self.forms[f'{SIGNATURE_IN_ID}{form}"'] = f'{SIGNATURE_IN_ID}{masked}"'

    def text(self, text: str, extra: dict[str, str] | None = None) -> str:
        """`text` with the values masked; `extra` adds forms for this text only (and wins over the others)."""
        forms = {**self.forms, **extra} if extra else self.forms
        present = sorted((form for form in forms if form in text), key=len, reverse=True)
        if not present:
            return text
        pattern = re.compile("|".join(map(re.escape, present)))
        return pattern.sub(lambda match: forms[match.group(0)], text)

    def string(self, value: str) -> str:
        """One JSON string value (quoted for the match, so short values match only the whole string)."""
        return self.text(f'"{value}"')[1:-1]

    def json(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, list):
            return [self.json(item) for item in value]
        if isinstance(value, dict):
            return {key: self.json(item) for key, item in value.items()}
        return value

    def body(self, body: Any) -> Any:
        """A stored body: text is searched as text, JSON string by string (keys stay)."""
        return self.text(body) if isinstance(body, str) else self.json(body)


def _stream_values(sse: str) -> tuple[set[str], dict[int, dict[str, str]]]:
    """The whole opaque values of an event stream, and for each line the masks of value pieces it holds.

    A value sent in several pieces is known to the next request only whole; its pieces
    are masked with the matching slices of the whole value's placeholder, so that the
    reader, joining them again, gets the placeholder the request holds.
    """
    wholes: set[str] = set()
    slots: dict[tuple[Any, ...], list[tuple[int, str]]] = {}
    for number, (line, _) in enumerate(_lines(sse)):
        split = _data_line(line)
        if split is None:
            continue
        try:
            doc = jsoncodec.loads(split[1])
        except ValueError:
            continue
        found = list(opaque_values(doc))
        for slot, piece in stream_fragments(doc):
            slots.setdefault(slot, []).append((number, piece))
            if piece in found:
                found.remove(piece)
        wholes.update(found)
    local: dict[int, dict[str, str]] = {}
    for pieces in slots.values():
        whole = "".join(piece for _, piece in pieces)
        wholes.add(whole)
        if len(pieces) == 1:
            continue
        mask = placeholder(whole)
        offset = 0
        for number, piece in pieces:
            # A piece is always a whole JSON string of its line: match it quoted, whatever its length.
            for form, masked in _text_forms(piece, mask[offset : offset + len(piece)]).items():
                local.setdefault(number, {})[f'"{form}"'] = f'"{masked}"'
            offset += len(piece)
    return wholes, local


def _masked_stream(sse: str, substitution: Substitution, local: dict[int, dict[str, str]]) -> str:
    return "".join(substitution.text(line, local.get(number)) + end for number, (line, end) in enumerate(_lines(sse)))


def with_placeholders(fixtures: list[ExchangeFixture]) -> list[ExchangeFixture]:
    """The fixtures with every opaque value replaced by its placeholder, consistently across all of them."""
    values: set[str] = set()
    stream_pieces: dict[int, dict[int, dict[str, str]]] = {}
    for position, fixture in enumerate(fixtures):
        values.update(opaque_values(fixture.request.body))
        response = fixture.response
        if response is None:
            continue
        values.update(opaque_values(response.body))
        if response.sse is not None:
            wholes, stream_pieces[position] = _stream_values(response.sse)
            values.update(wholes)
    substitution = Substitution(value for value in values if _is_opaque(value))
    masked = []
    for position, fixture in enumerate(fixtures):
        request = fixture.request.model_copy(update={"body": substitution.body(fixture.request.body)})
        response = fixture.response
        if response is not None:
            sse = response.sse
            if sse is not None:
                sse = _masked_stream(sse, substitution, stream_pieces.get(position, {}))
            response = response.model_copy(update={"body": substitution.body(response.body), "sse": sse})
        copy = fixture.model_copy(update={"request": request, "response": response})
        copy._placeholders = True
        masked.append(copy)
    return masked


# --- fixture directories -------------------------------------------------------------------------


def source_name(source: str | Path) -> str:
    """The file name of a capture, never its path (which would name the user and their folders)."""
    return redact_text(re.split(r"[\\/]", str(source))[-1])


def _pretty(doc: Any) -> bytes:
    try:
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
    except TypeError:  # lone surrogates, integers wider than 64 bits
        return json.dumps(doc, indent=2, ensure_ascii=True).encode() + b"\n"


def write_fixture_dir(
    fixtures: list[ExchangeFixture],
    out_dir: Path,
    *,
    source: str | Path,
    placeholders: bool | None = None,
    overwrite: bool = False,
) -> list[Path]:
    """Writes 0001.json, 0002.json, ... (one exchange each) and meta.json; returns them in that order.

    A directory that holds anything is refused unless `overwrite`; then its earlier
    exchange files and meta.json are removed first (other files are left). `placeholders`
    defaults to what `build_fixtures` did to these fixtures.
    """
    out_dir = Path(out_dir)
    if out_dir.exists():
        existing = list(out_dir.iterdir())
        if existing and not overwrite:
            raise FileExistsError(f"{out_dir} is not empty; pass overwrite=True to replace its fixtures")
        for path in existing:
            if path.is_file() and (path.name == META_FILE or EXCHANGE_FILE.match(path.name)):
                path.unlink()
    # Owner-only, like the cache and the log: redaction is thorough, not proof. Git keeps no such mode.
    make_private_dir(out_dir)
    written = []
    for number, fixture in enumerate(fixtures, 1):
        path = out_dir / f"{number:04d}.json"
        write_private(path, _pretty(fixture.model_dump()))
        written.append(path)
    if placeholders is None:
        placeholders = bool(fixtures) and all(fixture._placeholders for fixture in fixtures)
    meta = {
        "source": source_name(source),
        "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "tool": PROJECT,
        "tool_version": __version__,
        "placeholders": placeholders,
        "exchanges": len(fixtures),
    }
    meta_path = out_dir / META_FILE
    write_private(meta_path, _pretty(meta))
    return [*written, meta_path]


def read_fixture_dir(path: Path) -> list[ExchangeFixture]:
    """The exchanges of a fixture directory in the order of their numbers."""
    path = Path(path)
    numbered = sorted(
        (int(match.group(1)), file)
        for file in path.iterdir()
        if file.is_file() and (match := EXCHANGE_FILE.match(file.name))
    )
    meta_path = path / META_FILE
    meta = jsoncodec.loads(meta_path.read_bytes()) if meta_path.is_file() else {}
    placeholders = isinstance(meta, dict) and meta.get("placeholders") is True
    fixtures = []
    for _, file in numbered:
        try:
            fixture = ExchangeFixture.model_validate(jsoncodec.loads(file.read_bytes()))
        except ValueError as e:
            raise ValueError(f"{file.name} is not an exchange fixture: {e}") from e
        fixture._placeholders = placeholders
        fixtures.append(fixture)
    return fixtures


# --- fixtures to flows ---------------------------------------------------------------------------


def encode_body(body: Any) -> bytes:
    """A stored body as bytes on the wire: JSON compactly, text as it was."""
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8", "surrogateescape")
    return jsoncodec.dumps(body)


def fixture_to_flow(fixture: ExchangeFixture) -> http.HTTPFlow:
    """A flow the addon's hooks can process: the request as the client sent it, the response as received."""
    stored = fixture.request
    headers = dict(stored.headers)
    if isinstance(stored.body, (dict, list)):
        headers.setdefault("content-type", "application/json")
    request = http.Request.make(stored.method, stored.url, encode_body(stored.body), headers)
    client = connection.Client(peername=("127.0.0.1", 0), sockname=("127.0.0.1", 0))
    flow = http.HTTPFlow(client, connection.Server(address=(request.host, request.port)))
    flow.request = request
    answer = fixture.response
    if answer is not None:
        headers = dict(answer.headers)
        if answer.sse is not None:
            headers.setdefault("content-type", "text/event-stream")
            content = answer.sse.encode("utf-8", "surrogateescape")
        else:
            if isinstance(answer.body, (dict, list)):
                headers.setdefault("content-type", "application/json")
            content = encode_body(answer.body)
        flow.response = http.Response.make(answer.status, content, headers)
    if fixture.repaired_live:  # what the offline check reads to say the answer came for the repaired request
        flow.metadata[META] = {"original_request": message_body(request, MAX_DECODED_BYTES)}
    return flow
