"""Fake GitHub Copilot `/v1/messages` (`POST /copilot/v1/messages`, standing for
`https://api.githubcopilot.com/v1/messages`): Claude behind Copilot on Anthropic's own API.

Copilot lists `/v1/messages` among the endpoints of every `claude-*` model (pydantic/pydantic-ai #8232) and passes
Anthropic's blocks and signatures through, so the rules are the Anthropic fake's (tests/support/fake_anthropic.py).
Only the envelope differs: Copilot's own, with Anthropic's text as its message and code `invalid_request_body`, as
caozhiyuan/copilot-api #63 and #73 show it for an invalid signature (for the other texts, the fake's assumption).
The path prefix routes requests here instead of to the Anthropic fake.
"""

from __future__ import annotations

from .fake_anthropic import AnthropicDialect
from .fake_provider import Options, Recorded, Reply


def copilot_envelope(reply: Reply) -> Reply:
    """An Anthropic error answer in Copilot's envelope; any other answer as it is."""
    if reply.status < 400 or not isinstance(reply.doc, dict):
        return reply
    message = reply.doc.get("error", {}).get("message", "")
    return Reply(reply.status, {"error": {"message": message, "code": "invalid_request_body"}}, headers=reply.headers)


class CopilotMessagesDialect(AnthropicDialect):
    name = "copilot_messages"

    def matches(self, path: str) -> bool:
        route = path.split("?")[0].rstrip("/")
        return route.startswith("/copilot/") and route.endswith("/v1/messages")

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        return copilot_envelope(super().handle(doc, recorded, options))
