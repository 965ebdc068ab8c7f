"""Qwen on Alibaba Cloud Model Studio (DashScope)'s OpenAI-compatible chat completions: reasoning_content on each
assistant message, read back in the current tool loop and, with `"preserve_thinking": true`, in every turn; qwen4-max
adds encrypted thinking. A request that drops either is answered all the same, only worse.

Documentation: https://www.alibabacloud.com/help/en/model-studio/deep-thinking (preserve_thinking; reasoning_content
with tool results) and https://help.aliyun.com/en/model-studio/cot-summary ("Thinking summary and encryption":
with `"thinking_display": "summarized"` the answer carries a summary in reasoning_content and ciphertext beside it,
to be sent back unchanged with preserve_thinking). Captured answers: tests/fixtures/dashscope/. No error text for
dropped reasoning is known.
"""

from __future__ import annotations

from typing import Any

from .base import Dialect, ReadBack

# Where qwen4-max's ciphertext travels. Its answers carry it on the assistant message, beside reasoning_content; that
# it goes back in the same place under the same name is inferred (the page shows no request with it): if that is
# wrong, this is the one name to change.
ENCRYPTED_THINKING_FIELD = "encrypted_content"
# The public endpoints (dashscope.aliyuncs.com, dashscope-intl.aliyuncs.com, …) and a workspace's own
# ({WorkspaceId}.{region}.maas.aliyuncs.com), all under the compatible-mode route.
HOST_MARKS = ("dashscope", ".maas.aliyuncs.com")
ROUTE = "/compatible-mode/"


class DashScope(Dialect):
    name = "dashscope"
    otel_name = "alibaba.dashscope"
    known_hosts = (
        "dashscope.aliyuncs.com",
        "dashscope-intl.aliyuncs.com",
        "maas.aliyuncs.com",
    )
    silent_drops = True
    message_fields = (ENCRYPTED_THINKING_FIELD,)

    def serves(self, host: str, path: str, model: str) -> bool:
        return ROUTE in path or any(mark in host for mark in HOST_MARKS)

    def reads_back(self, path: str, doc: Any) -> ReadBack:
        return "all" if isinstance(doc, dict) and doc.get("preserve_thinking") is True else "current_loop"


DIALECT = DashScope()
