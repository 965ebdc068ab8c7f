"""Errors of gateways and hosts in front of another provider's models, given reasoning state another model, account
or caller issued (foreign state): a gateway that binds encrypted reasoning to its caller, and Fireworks behind a
LiteLLM proxy (whose own wrapping of a text, "litellm.BadRequestError: …", the envelope reader
notes). None of them documents these texts; each rule names the captured error it comes from.
"""

from __future__ import annotations

from .base import ENCRYPTED_CONTENT_FOREIGN, B, Dialect, Rule, path_places, rx

THINKING_BLOCKS_NOT_PERMITTED = "thinking_blocks_not_permitted"

RULES: tuple[Rule, ...] = (
    # https://github.com/can1357/oh-my-pi/issues/11928, https://github.com/anomalyco/opencode/issues/48864
    Rule(
        ENCRYPTED_CONTENT_FOREIGN,
        "gateway",
        "foreign",
        "encrypted_content",
        "not issued to this caller",
        rx(r"reasoning\s+", B, "encrypted_content", B, r"\s+was\s+not\s+issued\s+to\s+this\s+caller"),
        "a reasoning item's encrypted_content was issued to another caller of the gateway",
    ),
    # Fireworks behind LiteLLM, given Claude's thinking_blocks (https://github.com/AndyMik90/Aperant/issues/1988)
    Rule(
        THINKING_BLOCKS_NOT_PERMITTED,
        "fireworks",
        "foreign",
        "thinking_blocks",
        "thinking_blocks",
        rx(r"Extra\s+inputs\s+are\s+not\s+permitted,?\s+field:\s*'(?P<path>[^']{0,200}thinking_blocks)'"),
        "Claude's thinking_blocks were sent to a model that does not take them",
        refine=path_places,
    ),
)


class Gateways(Dialect):
    name = "gateway"
    rules = RULES


DIALECT = Gateways()
