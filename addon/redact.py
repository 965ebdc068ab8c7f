"""Keeping credentials out of everything the addon writes down."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

REDACTED = "[REDACTED]"

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
    }
)
SECRET_QUERY_PARAMS = frozenset(
    {"key", "api_key", "apikey", "api-key", "access_token", "token", "auth", "sig", "signature", "code"}
)

_QUERY_NAMES = "|".join(re.escape(p) for p in sorted(SECRET_QUERY_PARAMS))
_HEADER_NAMES = "|".join(re.escape(h) for h in sorted(SECRET_HEADERS - {"cookie", "set-cookie"}))
_TOKEN = r"[A-Za-z0-9._~+/=:;-]"
# Order matters: "Authorization: Bearer x" must lose its token before the header rule sees it.
_TEXT_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # "Bearer abc" as it appears in headers and error texts
    (re.compile(rf"(?i)\b(bearer)\s+{_TOKEN}{{8,}}"), rf"\1 {REDACTED}"),
    # "Basic abc", "token abc": only token-looking values, not the next English word
    (re.compile(rf"(?i)\b(basic|token)\s+(?={_TOKEN}*\d){_TOKEN}{{16,}}"), rf"\1 {REDACTED}"),
    # key=... in URLs and query strings quoted inside free text
    (re.compile(rf"(?i)([?&](?:{_QUERY_NAMES})=)[^&\s\"']+"), rf"\1{REDACTED}"),
    # cookie headers hold several values separated by "; ": mask up to the end of the value
    (re.compile(r"(?i)\b(set-cookie|cookie)([\"']?\s*[:=]\s*)[^\r\n\"']+"), rf"\1\2{REDACTED}"),
    # other header lines quoted inside free text: "x-api-key: abc", "x-api-key":"abc", 'api-key': 'abc'
    (re.compile(rf"(?i)\b({_HEADER_NAMES})([\"']?\s*[:=]\s*[\"']?)[^\s\"',}}]+"), rf"\1\2{REDACTED}"),
    # well-known key shapes: OpenAI/Anthropic sk-..., GitHub tokens, Google API keys
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), REDACTED),
    (re.compile(r"\bgh[opsur]_[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"), REDACTED),
)
_QUERY_SECRET = re.compile(rf"(?i)(^|[&;])((?:{_QUERY_NAMES})=)[^&;]*")


def redact_text(text: str) -> str:
    """Free text (an error message, an exception) with credential-looking values masked."""
    for pattern, replacement in _TEXT_RULES:
        text = pattern.sub(replacement, text)
    return text


def redact_url(url: str) -> str:
    """A URL with its user info and secret query parameters masked, the rest as it was."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = _QUERY_SECRET.sub(rf"\1\2{REDACTED}", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(k, REDACTED if k.lower() in SECRET_HEADERS else v) for k, v in headers]
