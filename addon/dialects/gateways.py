"""Errors of gateways and hosts in front of another provider's models, given reasoning state another model, account
or caller issued (foreign state): a gateway that binds encrypted reasoning to its caller, Amazon Bedrock, and
Fireworks behind a LiteLLM proxy (whose own wrapping of a text, "litellm.BadRequestError: …", the envelope reader
notes). None of them documents these texts; each rule names the captured error it comes from.
"""

from __future__ import annotations

from .base import ENCRYPTED_CONTENT_FOREIGN, B, Dialect, Rule, path_places, rx

REASONING_TEXT_UNSUPPORTED = "reasoning_text_unsupported"
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
    # OpenAI models on Bedrock (https://github.com/BerriAI/litellm/issues/41793)
    Rule(
        ENCRYPTED_CONTENT_FOREIGN,
        "bedrock",
        "foreign",
        "encrypted_content",
        "created for a different account or model",
        rx(r"encrypted\s+reasoning\s+was\s+created\s+for\s+a\s+different\s+account\s+or\s+model"),
        "encrypted reasoning sent back was created for another account or model",
    ),
    # Bedrock Converse, a non-Claude model given Claude's reasoning text
    # (https://github.com/UKGovernmentBEIS/inspect_ai/issues/5217)
    Rule(
        REASONING_TEXT_UNSUPPORTED,
        "bedrock",
        "foreign",
        "reasoningContent.reasoningText.text",
        "reasoningcontent.reasoningtext.text",
        rx(r"does(?:n['\u2019]t|\s+not)\s+support\s+the\s+reasoningContent\.reasoningText\.text\s+field"),
        "reasoning text another model produced was sent to a model that only takes its own encrypted reasoning",
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
