"""Credential-shaped values for the tests that prove secrets stay out of what the proxy writes.

Each is put together at run time: written whole in the source, it would look like a leaked key to a
secret scanner, yet it must keep the exact shape the redaction rules look for.
"""

from __future__ import annotations


def planted(prefix: str, rest: str) -> str:
    """A fake credential: a provider's key prefix (`sk-proj-`, `AIza`, `ghu_`, ...) and made-up characters."""
    return prefix + rest
