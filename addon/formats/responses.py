"""Placeholder until written: claims no traffic."""

from __future__ import annotations

from typing import Any

from ..records import RepairAction
from .base import CacheView, RepairContext, body_model


class Responses:
    name = "openai_responses"
    text_fields: frozenset[str] = frozenset()

    def claims(self, method: str, path: str, body: bytes) -> bool:
        return False

    def request_model(self, path: str, body: bytes, doc: Any | None) -> str | None:
        return body_model(body, doc)

    def may_need_repair(self, body: bytes) -> bool:
        return False

    def reader(self):  # noqa: ANN201
        raise NotImplementedError

    def lookup_keys(self, doc: Any, model: str | None) -> list[str]:
        return []

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        return []
