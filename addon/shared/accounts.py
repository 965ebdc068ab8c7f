"""The account behind a credential that rotates.

Most credentials are keys: the value is the account, and the scope hashes it as it is. Some are short-lived
tokens that a client exchanges again and again for the same account. Hashed as they are, each new token would
start an empty scope and lose every tool call captured under the one before. For those whose account can be
read off the token itself, without asking anyone, `stable_identity` gives the part that stays. `rotating_kind`
names those that rotate with nothing stable in them: their scope stays the raw value, and ends when they rotate.

Nothing here checks a token: the provider does. A forged token is refused upstream, and the cache only ever
sends reasoning to the host that issued it, so reading the fields unchecked can merge nothing but what one
account's tokens say about that account.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_BEARER = re.compile(r"bearer[ \t]+(\S+)", re.IGNORECASE)

# GitHub Copilot's API token, as https://api.github.com/copilot_internal/v2/token issues it to each client about
# every 25 minutes: `name=value` fields joined by ";", then ":" and a hex MAC over them. For example
#   tid=<hex>;ol=<hex>,<hex>;exp=<unix time>;iat=<unix time>;sku=…;proxy-ep=…;st=dotcom;chat=1;…;8kp=1;ip=…;asn=…:<mac>
# Older tokens end with `8kp=1:<mac>` and carry fewer fields. tid is the user's tracking id, ol their
# organisations; sku, st, proxy-ep and the flags are what the account may use.
_COPILOT_FIELD = re.compile(r"([A-Za-z0-9_-]+)=([^;\s]*)")
_COPILOT_TID = re.compile(r"[0-9A-Fa-f]{16,}")
_COPILOT_TIME = re.compile(r"[0-9]+")
_COPILOT_MAC = re.compile(r"[0-9A-Fa-f]{32,}")
# The fields that describe one issue of the token, not the account it is issued to: when (exp, iat), from where
# (ip, asn: the address that asked for it) and with how much quota left (cq, rd). A long-lived key used from two
# networks is one scope too.
COPILOT_ISSUE_FIELDS = frozenset({"exp", "iat", "ip", "asn", "cq", "rd"})

# AWS Signature Version 4 puts a new signature (and the day's date) in every request's Authorization header, after the
# access key id that signed it: `AWS4-HMAC-SHA256 Credential=AKIA…/20260101/us-east-1/bedrock/aws4_request, …`
# (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html). The key id is what stays.
_SIGV4_CREDENTIAL = re.compile(r"\s*AWS4-HMAC-SHA256\s+Credential=([A-Za-z0-9]{16,128})/", re.IGNORECASE)

_JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")


def bearer_token(value: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` value, any case and spacing; None for any other scheme."""
    match = _BEARER.fullmatch(value.strip())
    return match.group(1) if match else None


def copilot_account(token: str) -> str | None:
    """The account a GitHub Copilot API token is issued to: its fields but those of the issue
    (`COPILOT_ISSUE_FIELDS`), sorted by name, without the MAC. None when the token is not laid out as Copilot's
    are (no tid, no exp, no MAC, a field that is not `name=value`, a name twice).

    Sorted, since the order of the fields is how one token is written, not what it says: the provider reads
    each by its name, and a field may move between versions of the issuing service. Names are unique and
    values hold no ";", so the sorted text is as distinct as the fields are."""
    fields_text, colon, mac = token.rpartition(":")
    if not colon or not _COPILOT_MAC.fullmatch(mac):
        return None
    fields: dict[str, str] = {}
    for field in fields_text.split(";"):
        match = _COPILOT_FIELD.fullmatch(field)
        if match is None or match[1] in fields:
            return None
        fields[match[1]] = match[2]
    if not _COPILOT_TID.fullmatch(fields.get("tid", "")) or not _COPILOT_TIME.fullmatch(fields.get("exp", "")):
        return None
    return ";".join(f"{name}={value}" for name, value in sorted(fields.items()) if name not in COPILOT_ISSUE_FIELDS)


# Per provider: the credential header whose bearer token a reader knows, the kind of token, and the reader.
_READERS: tuple[tuple[str, str, Callable[[str], str | None]], ...] = (("authorization", "copilot", copilot_account),)


def stable_identity(name: str, value: str) -> str | None:
    """The account behind a rotating credential in header `name` (lower case), as `kind:identity`; None when
    the value is its own identity (a key) or nothing stable can be read from it."""
    if name == "authorization" and (sigv4 := _SIGV4_CREDENTIAL.match(value)) is not None:
        return f"sigv4:{sigv4.group(1)}"
    for header, kind, read in _READERS:
        if name != header:
            continue
        token = bearer_token(value)
        account = read(token) if token is not None else None
        if account is not None:
            return f"{kind}:{account}"
    return None


def rotating_kind(value: str) -> str | None:
    """What short-lived credential with no account readable in it a header's or query parameter's value is
    (for the log: never the value), or None: a key, or a credential not known to rotate."""
    token = bearer_token(value) or value.strip()
    if token.startswith("ya29."):
        return "a Google OAuth access token (ya29.…)"
    if _JWT.fullmatch(token):
        return "a JWT"
    if token.startswith("tid="):
        return "a GitHub Copilot token whose fields could not be read"
    return None
