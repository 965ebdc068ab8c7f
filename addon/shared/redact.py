"""Keeping credentials out of everything the addon writes down.

One redactor serves the event log, the cache, exports, the offline report, flow comments and the addon's own
log lines. Its shapes are the documented key prefixes of the providers and services an LLM session meets.
detect-secrets was measured and left out: made to flag candidates in source files, with its default plugins
it marks ordinary words through its entropy and keyword detectors, it knows none of the LLM providers' own
prefixes (hf_, gsk_, xai-, sk-ant-), and it reports a partial match for longer keys of some shapes.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import string
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import ahocorasick

from . import jsoncodec
from .limits import MAX_OUTPUT_LINE_CHARS, cut_text

REDACTED = "[REDACTED]"

# Headers known to carry a credential: the providers' own, and those of the gateways in front of them.
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "x-auth-token",
        "x-access-token",
        "x-litellm-api-key",  # LiteLLM
        "cf-aig-authorization",  # Cloudflare AI Gateway
        "x-portkey-api-key",  # Portkey
        "helicone-auth",  # Helicone
        "ocp-apim-subscription-key",  # Azure API Management
        "x-functions-key",  # Azure Functions
    }
)
# Any other header one of whose words (between - and _) says it carries a credential is one too...
CREDENTIAL_WORDS = frozenset(
    {
        "auth",
        "authorization",
        "key",
        "apikey",
        "token",
        "accesstoken",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "credential",
        "credentials",
        "cookie",
        "signature",
    }
)
# ...except these, which change with every request and identify nobody.
NOT_CREDENTIAL_HEADERS = frozenset({"idempotency-key", "x-idempotency-key", "sec-websocket-key"})


def is_credential_header(name: str, also: frozenset[str] = frozenset()) -> bool:
    """Whether a request header carries a credential: a known name, one of `also` (lower case), or a name that
    says so ("x-myproxy-api-key", "x-gateway-token")."""
    # Asked of every header of every LLM request, and clients send the same few names: the answers for names of
    # up to 64 characters are remembered (1,024 of them: under 0.5 MiB as Python holds them, however many names a
    # client makes up).
    return _remembered_answer(name, also) if len(name) <= 64 else _is_credential_header(name, also)


def _is_credential_header(name: str, also: frozenset[str]) -> bool:
    lowered = name.lower()
    if lowered in SECRET_HEADERS or lowered in also:
        return True
    # By whole words: x-portkey-trace-id holds "key" only inside "portkey", x-max-tokens says "tokens".
    return lowered not in NOT_CREDENTIAL_HEADERS and not CREDENTIAL_WORDS.isdisjoint(re.split(r"[-_]", lowered))


_remembered_answer = functools.lru_cache(maxsize=1024)(_is_credential_header)


SECRET_QUERY_PARAMS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "api-key",
        "access_token",
        "access-token",
        "accesstoken",
        "token",
        "auth",
        "sig",
        "signature",
        "code",
        "subscription-key",  # Azure API Management
        "subscription_key",
        "password",
        "secret",
        "client_secret",
        # a presigned AWS URL's signature and the credentials it was made with
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
    }
)

_QUERY_NAMES = "|".join(re.escape(p) for p in sorted(SECRET_QUERY_PARAMS))
_HEADER_NAMES = "|".join(re.escape(h) for h in sorted(SECRET_HEADERS - {"cookie", "set-cookie"}))
_TOKEN = r"[A-Za-z0-9._~+/=:;-]"
# A key starts where a token starts: not inside a word, an id or a run of base64.
_START = r"(?<![A-Za-z0-9_-])"

# Credential shapes by their documented or observed prefixes, each named for the tests and the docs, with the
# literals one of which a text must hold for the shape to be looked for at all. No shape can match a quote or
# a backslash, so masking JSON text as text keeps it JSON.
KEY_SHAPES: dict[str, tuple[tuple[str, ...], str]] = {
    # OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-), Anthropic (sk-ant-), DeepSeek, OpenRouter (sk-or-v1-), ...
    "sk": (("sk-",), r"sk-[A-Za-z0-9_-]{16,}"),
    "stripe": (("sk_live_", "rk_live_", "sk_test_", "rk_test_"), r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    "github": (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{20,}"),
    "github_pat": (("github_pat_",), r"github_pat_[A-Za-z0-9_]{20,}"),
    "gitlab": (("glpat-",), r"glpat-[A-Za-z0-9_-]{20,}"),
    "google_api_key": (("AIza",), r"AIza[0-9A-Za-z_-]{30,}"),
    "google_oauth": (("ya29.",), r"ya29\.[0-9A-Za-z_-]{20,}"),
    "aws_access_key": (
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])",
    ),
    "slack": (("xox",), r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    "slack_app": (("xapp-",), r"xapp-\d-[A-Za-z0-9-]{10,}"),
    "slack_webhook": (("hooks.slack.com",), r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
    "huggingface": (("hf_",), r"hf_[A-Za-z0-9]{30,}"),
    "groq": (("gsk_",), r"gsk_[A-Za-z0-9]{20,}"),
    "xai": (("xai-",), r"xai-[A-Za-z0-9]{20,}"),
    "replicate": (("r8_",), r"r8_[A-Za-z0-9]{20,}"),
    "perplexity": (("pplx-",), r"pplx-[A-Za-z0-9]{20,}"),
    "nvidia": (("nvapi-",), r"nvapi-[A-Za-z0-9_-]{20,}"),
    "langsmith": (("lsv2_",), r"lsv2_(?:pt|sk)_[A-Za-z0-9_]{20,}"),
    "tavily": (("tvly-",), r"tvly-[A-Za-z0-9_-]{20,}"),
    "npm": (("npm_",), r"npm_[A-Za-z0-9]{30,}"),
    "pypi": (("pypi-",), r"pypi-[A-Za-z0-9_-]{50,}"),
    "sendgrid": (("SG.",), r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),
    "twilio": (("SK",), r"SK[0-9a-fA-F]{32}(?![0-9a-fA-F])"),
    "jwt": (("eyJ",), r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    # GitHub Copilot's API token: tid=…;exp=…;sku=…;proxy-ep=…;…;8kp=1:<mac>
    "copilot": (("tid=",), r"tid=[0-9A-Fa-f]{16,};[A-Za-z0-9_.;=:+/-]*"),
}


@dataclass(frozen=True, slots=True)
class _Rule:
    """A pattern tried only where one of its `anchors` occurs in the text (in lower case when `folded`), and what
    replaces it (a template with the pattern's groups). The pattern must begin where its anchor does; unless
    `inside_words`, a match must also begin where a token does. Most texts hold no anchor at all, and a literal
    search costs a small part of a regex scan."""

    anchors: tuple[str, ...]
    pattern: re.Pattern[str]
    replacement: str = REDACTED
    folded: bool = True
    inside_words: bool = False
    # A credential recognised by its own shape (a key prefix, a PEM block), not by the words around it: precise
    # enough to decide what the cache may not keep (`holds_credential`).
    shape: bool = False


def _rule(anchors: tuple[str, ...], pattern: str, replacement: str = REDACTED, **options: bool) -> _Rule:
    folded = options.get("folded", True)
    return _Rule(anchors, re.compile(("(?i)" if folded else "") + pattern), replacement, **options)


_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")

# The value after a name that says it holds a secret: OPENAI_API_KEY=…, "client_secret": "…", DB_PASSWORD=…,
# aws_secret_access_key = …; found from the name's last word, whatever comes before it.
_SECRET_NAME_ENDS = (
    "api_key", "api-key", "apikey", "secret", "_token", "-token", "password", "passwd", "passphrase",
    "access_key", "access-key", "accesskey", "private_key", "private-key", "privatekey", "credential",
    "credentials", "auth_key", "auth-key", "accountkey", "-key", "_key",
)  # fmt: skip
_VALUE = r"""[^\s"'&,;\\<>(){}\[\]]"""
# The longest value a rule masks: no credential is longer, and a bound keeps a match from running through a whole
# hostile text (4 MB of "api_key=" would otherwise cost one scan to its end per anchor).
_LONGEST = 4096

_RULES: tuple[_Rule, ...] = (
    _rule(
        ("-----begin ",),
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        # A body never runs into another BEGIN: the search for its END stops there, not 16 KiB on, at every BEGIN.
        r"(?:(?:(?!-----BEGIN )[A-Za-z0-9+/=\s:,.-]|\\+[nrt]){0,16384}?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:[A-Za-z0-9+/=\s]|\\+[nrt]){0,16384})",
        inside_words=True,
        shape=True,
    ),
    # "Bearer abc" as it appears in headers and error texts
    _rule(("bearer",), rf"(bearer)\s+{_TOKEN}{{8,{_LONGEST}}}", rf"\1 {REDACTED}"),
    # "Basic abc", "token abc": only token-looking values, not the next English word
    _rule(
        ("basic", "token"),
        rf"(basic|token)\s+(?={_TOKEN}{{0,{_LONGEST}}}\d){_TOKEN}{{16,{_LONGEST}}}",
        rf"\1 {REDACTED}",
    ),
    # key=... in URLs and query strings quoted inside free text
    _rule(
        ("?", "&"),
        rf"([?&](?:{_QUERY_NAMES})=)[^&\s\"'\\]{{1,{_LONGEST}}}",
        rf"\1{REDACTED}",
        inside_words=True,
    ),
    # cookie headers hold several values separated by "; ": mask up to the end of the value
    _rule(
        ("cookie", "set-cookie"),
        rf"(set-cookie|cookie)([\"']?\s*[:=]\s*)[^\r\n\"'\\]{{1,{_LONGEST}}}",
        rf"\1\2{REDACTED}",
    ),
    # other header lines quoted inside free text: "x-api-key: abc", "x-api-key":"abc", 'api-key': 'abc'
    _rule(
        tuple(SECRET_HEADERS - {"cookie", "set-cookie"}),
        rf"({_HEADER_NAMES})([\"']?\s*[:=]\s*[\"']?)[^\r\n\"',}}\\]{{1,{_LONGEST}}}",
        rf"\1\2{REDACTED}",
    ),
    # a value after a name that says it holds a secret (the name may go on before the anchor: OPENAI_API_KEY)
    _rule(
        _SECRET_NAME_ENDS,
        rf"((?:{'|'.join(map(re.escape, _SECRET_NAME_ENDS))})(?:[_-]?(?:id|key))?[\"']?\s*[:=]\s*[\"']?){_VALUE}{{4,{_LONGEST}}}",
        rf"\1{REDACTED}",
        inside_words=True,
    ),
    *(_rule(anchors, shape, folded=False, shape=True) for anchors, shape in KEY_SHAPES.values()),
)


# Every anchor of every rule, found in one pass over the lower-cased text (an Aho-Corasick automaton, in C): a
# log line holds no anchor at all most of the time, and 75 separate searches cost four times as much.
def _automaton() -> ahocorasick.Automaton:
    by_anchor: dict[str, list[int]] = {}
    for index, rule in enumerate(_RULES):
        for anchor in rule.anchors:
            by_anchor.setdefault(anchor.lower(), []).append(index)
    automaton = ahocorasick.Automaton()
    for anchor, rules in by_anchor.items():
        automaton.add_word(anchor, (len(anchor), tuple(rules)))
    automaton.make_automaton()
    return automaton


_ANCHORS = _automaton()
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
# user:password@ in URLs: anchored on "://", the scheme before it
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]{0,31}://)[^/\s:@\"'\\]{0,256}:[^/\s@\"'\\]{1,4096}@")
_QUERY_SECRET = re.compile(rf"(?i)(^|[&;])((?:{_QUERY_NAMES})=)[^&;]*")


def _candidates(text: str, first_rule: int) -> dict[int, list[int]]:
    """Where each rule from `first_rule` on may match: the positions of its anchors (in any case; a rule that is
    not `folded` then matches only the right case)."""
    lowered = text.lower()
    if len(lowered) != len(text):  # "İ" lowers to two characters: fold ASCII alone, as the anchors are ASCII
        lowered = text.translate(_ASCII_LOWER)
    found: dict[int, list[int]] = {}
    for end, (length, rules) in _ANCHORS.iter(lowered):
        for index in rules:
            if index >= first_rule:
                found.setdefault(index, []).append(end - length + 1)
    return found


def _at_token_start(text: str, at: int) -> bool:
    """Whether a token starts at `at`: nothing of a word before it, or an escape such as the \\n of JSON text."""
    return at == 0 or text[at - 1] not in _WORD or (at >= 2 and text[at - 2] == "\\" and text[at - 1] in "nrtbf")


def _matches(rule: _Rule, text: str, positions: list[int]) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    end = 0
    for at in sorted(positions):  # anchors come in the order they end, not the order they start
        if at < end:  # inside what this rule already masks: one scan of the text, however many anchors it holds
            continue
        if rule.inside_words or _at_token_start(text, at):
            match = rule.pattern.match(text, at)
            if match:
                found.append((match.start(), match.end(), match.expand(rule.replacement)))
                end = match.end()
    return found


def redact_text(text: str) -> str:
    """Any text (a prompt, a reasoning text, an error message, a log line) with credential-looking values
    masked: every shape in `KEY_SHAPES`, PEM private keys, `NAME_API_KEY=value` and its kin, bearer and basic
    credentials, secret query parameters, cookies and credential headers quoted in the text, and passwords in
    URLs. JSON text stays JSON: no rule matches across a quote or a backslash."""
    if "://" in text and "@" in text:
        text = _USERINFO.sub(rf"\1{REDACTED}@", text)
    # Rule by rule, in order: "Authorization: Bearer x" loses its token before the header rule masks "Bearer".
    first_rule = 0
    candidates = _candidates(text, first_rule)
    while candidates:
        for index in sorted(candidates):
            spans = _matches(_RULES[index], text, candidates[index])
            if spans:
                text = _replace(text, spans)
                first_rule = index + 1
                candidates = _candidates(text, first_rule)  # the text changed: look again, for the rules after it
                break
        else:
            return text
    return text


def _replace(text: str, spans: list[tuple[int, int, str]]) -> str:
    out, last = [], 0
    for start, stop, replacement in sorted(spans, key=lambda span: (span[0], -span[1])):
        if start >= last:  # overlapping finds of one rule: the first, longest one wins
            out += [text[last:start], replacement]
            last = stop
    return "".join(out) + text[last:]


class _Masking(logging.Filter):
    """Masks credentials in a log record's message before any handler (mitmdump's output) sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = cut_text(redact_text(message), MAX_OUTPUT_LINE_CHARS)  # masked first: a cut could hide a key's shape
        if masked != message:
            record.msg, record.args = masked, None
        return True


_MASKING = _Masking()


def masked_logger(name: str) -> logging.Logger:
    """`logging.getLogger(name)` whose messages have credentials masked: every logger of the addon is one."""
    logger = logging.getLogger(name)
    if _MASKING not in logger.filters:
        logger.addFilter(_MASKING)
    return logger


def holds_credential(text: str) -> bool:
    """Whether `text` holds a credential recognised by its shape alone (`KEY_SHAPES`, a PEM private key). The
    broader rules (`api_key = …`, `password: …`) are right for what is masked, but would call ordinary code in a
    model's reasoning a secret; this is what decides that a value the provider signed is not kept at all."""
    candidates = _candidates(text, 0)
    return any(
        _RULES[index].shape and _matches(_RULES[index], text, positions) for index, positions in candidates.items()
    )


def redact_json_text(text: str) -> str:
    """A JSON text (a stream's data, a recorded body) with every credential in it masked, still JSON: masked as
    text, and as the document it decodes to, which shows what the text escapes (a text quoting JSON inside a
    string) and the values under secret-naming keys. Text that is not JSON is masked as text."""
    masked = redact_text(text)
    try:
        doc = json.loads(text)
    except ValueError:
        return masked
    clean = redact_json(doc)
    if clean == doc:
        if masked == text:
            return text
        try:
            json.loads(masked)
            return masked
        except ValueError:
            pass  # a match ran into an escape: the document, masked, is written instead
    return jsoncodec.dumps(clean).decode()


def redact_url(url: str) -> str:
    """A URL with its user info and secret query parameters masked, the rest as it was."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = _QUERY_SECRET.sub(rf"\1\2{REDACTED}", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


# Keys whose value is a secret wherever they appear in a body, compared without case and
# punctuation ("api_key", "apiKey", "X-API-Key" are one name). "token" alone is not one:
# chat completions logprobs carry answer text under it.
_SECRET_KEY_NAMES = frozenset(
    {
        "authorization",
        "proxyauthorization",
        "cookie",
        "setcookie",
        "xgoogapikey",
        "idtoken",
        "passwd",
        "secret",
    }
)
_SECRET_KEY_SUFFIXES = (
    "apikey",
    "accesstoken",
    "refreshtoken",
    "authtoken",
    "sessiontoken",
    "bearertoken",
    "password",
    "clientsecret",
    "privatekey",
    "secretkey",
    "secretaccesskey",
    "credentials",
)


def names_secret(key: str) -> bool:
    """Whether a JSON key names a credential, however it is spelled."""
    name = re.sub(r"[^a-z0-9]", "", key.lower())
    return name in _SECRET_KEY_NAMES or name.endswith(_SECRET_KEY_SUFFIXES)


def redact_json(value: Any) -> Any:
    """A JSON value with credential-looking text masked and values under secret-naming keys replaced."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    if isinstance(value, dict):
        return {
            redact_text(key): REDACTED if names_secret(key) and _is_secret_value(item) else redact_json(item)
            for key, item in value.items()
        }
    return value


def _is_secret_value(value: Any) -> bool:
    return (isinstance(value, str) and value != "") or (isinstance(value, (int, float)) and not isinstance(value, bool))


def display_url(url: str) -> str:
    """The URL without its password (in the user info or as a query parameter), for logs and messages."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, hostpart = rest.rpartition("@")
    if at:
        user, colon, _ = userinfo.partition(":")
        url = f"{scheme}{sep}{user}{':***' if colon else ''}@{hostpart}"
    return redact_url(url) if "?" in url else url
