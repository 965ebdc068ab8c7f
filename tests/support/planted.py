"""Credential-shaped values for the tests that prove secrets stay out of what the proxy writes.

Each is put together at run time: written whole in the source, it would look like a leaked key to a
secret scanner, yet it must keep the exact shape the redaction rules look for.
"""

from __future__ import annotations

import hashlib


def planted(prefix: str, rest: str) -> str:
    """A fake credential: a provider's key prefix (`sk-proj-`, `AIza`, `ghu_`, ...) and made-up characters."""
    return prefix + rest


def every_shape(nonce: str) -> dict[str, tuple[str, str]]:
    """One made-up credential of every shape the redactor must find: name -> (credential, marker). Each marker is
    a random part of its credential alone, derived from `nonce`, for a test to look for in what the proxy wrote."""
    marks = {name: hashlib.sha256(f"{nonce}:{name}".encode()).hexdigest()[:20] for name in _SHAPES}
    marks["aws"] = marks["aws"].upper()[:16]
    return {name: (shape(marks[name]), marks[name]) for name, shape in _SHAPES.items()}


_SHAPES = {
    "openai": lambda m: planted("sk-proj-", f"{m}Xy7QpL2mN8vR4tK9wZ3bC6d"),
    "anthropic": lambda m: planted("sk-ant-api03-", f"{m}Ab3dEf6hIj9kLm2nOp5q-RsAA"),
    "github_pat": lambda m: planted("github_pat_", f"11AB{m}cdefghijklmnopqrstuv_wxyz0123456789"),
    "github": lambda m: planted("ghp_", f"{m}ABCDEFGHIJKLMNOPQRST"),
    "aws": lambda m: planted("AKIA", m),
    "stripe": lambda m: planted("sk_live_", f"51H8{m}abcdefghijklmnop"),
    "slack": lambda m: planted("xoxb-", f"123456789012-1234567890123-{m}"),
    "huggingface": lambda m: planted("hf_", f"{m}abcdefghijklmnopqr"),
    "groq": lambda m: planted("gsk_", f"{m}WGdyb3FYabcdefghijklmnop"),
    "xai": lambda m: planted("xai-", f"{m}abcdefghijklmnopqrstuvwxyz"),
    "google": lambda m: planted("AIza", f"Sy{m}abcdefghijklmnopq"),
    "google_oauth": lambda m: planted("ya29.", f"a0AfB_{m}abcdefghijkl"),
    "gitlab": lambda m: planted("glpat-", f"{m}abcdefgh"),
    "jwt": lambda m: planted("eyJ", f"hbGciOiJIUzI1NiJ9.eyJzdWIiOiJ{m}IiwiYWRtaW4iOnRydWV9.c2lnbmF0dXJl{m}"),
    "copilot": lambda m: planted("tid=", f"{m};exp=1764000000;sku=copilot_for_business;8kp=1:{m}"),
    "pem": lambda m: planted(
        "-----BEGIN RSA PRIVATE ", f"KEY-----\nMIIEowIBAAKCAQEA{m}\nAbCdEf0123456789+/=\n-----END RSA PRIVATE KEY-----"
    ),
    "env": lambda m: planted("MY_SERVICE_API_KEY", f"={m}"),
}


TID = hashlib.md5(b"one user").hexdigest()  # the shape of a tracking id: 32 hex
MAC = hashlib.sha256(b"one issue of the token").hexdigest()
# The fields of a Copilot token that say who holds it, as a 2023 token has them (the MAC follows `8kp=1:`)...
ACCOUNT = {"sku": "free_educational", "st": "dotcom", "chat": "1", "sn": "1", "rt": "1", "8kp": "1"}
# ...and as a 2025 one does: organisations, the endpoint, more flags, then where and when it was issued.
ORG_ACCOUNT = {
    "ol": ",".join(hashlib.md5(org).hexdigest() for org in (b"one org", b"another org")),
    "sku": "copilot_enterprise_seat",
    "proxy-ep": "proxy.enterprise.githubcopilot.com",
    "st": "dotcom",
    "ssc": "1",
    "chat": "1",
    "cit": "1",
    "malfil": "1",
    "agent_mode": "1",
    "mcp": "1",
    "ccr": "1",
    "8kp": "1",
}


def copilot_token(
    tid: str = TID,
    exp: int = 1702022150,
    mac: str = MAC,
    account: dict[str, str] = ACCOUNT,
    issue: dict[str, str] | None = None,
) -> str:
    """A GitHub Copilot API token laid out as GitHub issues it: tid, exp, the account's fields, those of the issue
    (when, from where, quota left), then ":" and the MAC."""
    fields = [("exp", str(exp)), *account.items(), *(issue or {}).items()]
    return planted("tid=", tid + "".join(f";{name}={value}" for name, value in fields) + f":{mac}")
