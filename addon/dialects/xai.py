"""xAI (Grok) on its copy of the Responses API: `POST https://api.x.ai/v1/responses`, `grok-…` models.

The wire format is OpenAI's (addon/wire/responses/ reads it unchanged): a bare UUID as the response id, the
reasoning item `rs_<id>`, the message `msg_<id>`. Its reasoning item carries `encrypted_content` only when the request
asks for it (`include: ["reasoning.encrypted_content"]`; https://docs.x.ai/docs/guides/reasoning), whole in
`response.output_item.done` and byte for byte the same in `response.completed`
(tests/fixtures/xai/vercel_grok_code_fast_1_reasoning_encrypted_store_false_stream.chunks.txt). Sent back, that item
must keep its `summary` beside its `encrypted_content`.

Errors come in xAI's own envelope, `{"code": "invalid-argument", "error": "<text>"}` (the Responses error schema of
https://github.com/vercel/ai/blob/main/packages/xai/src/xai-error.ts). A client that drops the reasoning item is not
refused: the model goes on without its earlier reasoning (https://github.com/duolahypercho/codex-router/issues/888).
"""

from __future__ import annotations

from .base import RESPONSES_ENCRYPTED_CONTENT_INVALID, B, Dialect, Rule, rx

REASONING_SUMMARY_MISSING = "reasoning_summary_missing"

RULES: tuple[Rule, ...] = (
    # The same text for an edited blob and for one issued to another xAI account or by another provider
    # (https://github.com/hackerai-tech/hackerai/pull/996; in its envelope,
    # https://github.com/lidge-jun/opencodex/pull/2229).
    Rule(
        RESPONSES_ENCRYPTED_CONTENT_INVALID,
        "xai",
        "invalid",
        "encrypted_content",
        "could not decrypt the provided",
        rx(r"Could\s+not\s+decrypt\s+the\s+provided\s+", B, "encrypted_content", B),
        "a reasoning item's encrypted_content could not be decrypted (edited, or issued to another xAI account or "
        "by another provider)",
        verdicts={},  # judged, with the advice every provider shares
    ),
    # A reasoning item sent back with its encrypted_content but without its `summary`; the text names neither
    # (https://github.com/chenyme/grok2api/issues/688, verified against xAI in
    # https://github.com/chenyme/grok2api/pull/689: `summary: []` added, 200).
    Rule(
        REASONING_SUMMARY_MISSING,
        "xai",
        "missing",
        "summary",
        "could not decode the compaction blob",
        rx(r"Could\s+not\s+decode\s+the\s+compaction\s+blob"),
        "a reasoning item was sent back with its encrypted_content but without its summary (or with a compaction "
        "blob that is not the one issued)",
    ),
)


class XAI(Dialect):
    """xAI serves Grok at api.x.ai; its Responses API wants a reasoning item's `summary` back with its
    `encrypted_content`."""

    name = "xai"
    otel_name = "x_ai"
    known_hosts = ("api.x.ai",)
    host = "api.x.ai"
    rules = RULES

    def serves(self, host: str, path: str, model: str) -> bool:
        return host == self.host or model.startswith("grok-")

    def reasoning_summary_required(self, model: str) -> bool:
        return True


DIALECT = XAI()
