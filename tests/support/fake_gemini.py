"""Fake gemini dialect (placeholder until written: matches nothing)."""

from __future__ import annotations

from .fake_provider import Options, Recorded, Reply


class GeminiDialect:
    name = "gemini"

    def __init__(self) -> None:
        self.issued: dict = {}

    def matches(self, path: str) -> bool:
        return False

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        raise NotImplementedError
