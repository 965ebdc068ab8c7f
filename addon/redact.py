"""Keeping credentials out of everything the addon writes down."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

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
# Any other header whose name says it carries a credential is one too...
_CREDENTIAL_WORDS = re.compile(r"auth|key|token|secret|passw|credential|cookie|signature")
# ...except these, which change with every request and identify nobody.
NOT_CREDENTIAL_HEADERS = frozenset({"idempotency-key", "x-idempotency-key", "sec-websocket-key"})


def is_credential_header(name: str, also: frozenset[str] = frozenset()) -> bool:
    """Whether a request header carries a credential: a known name, one of `also` (lower case), or a name that
    says so ("x-myproxy-api-key", "x-gateway-token")."""
    lowered = name.lower()
    if lowered in SECRET_HEADERS or lowered in also:
        return True
    return lowered not in NOT_CREDENTIAL_HEADERS and _CREDENTIAL_WORDS.search(lowered) is not None


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
    return [(k, REDACTED if is_credential_header(k) else v) for k, v in headers]


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
