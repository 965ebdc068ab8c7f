"""Amazon Bedrock: Claude (and other models) behind the bedrock-runtime API, and its error texts.

Routes (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_Operations_Amazon_Bedrock_Runtime.html):
`POST /model/{modelId}/invoke` and `/invoke-with-response-stream` (InvokeModel: the model's own body, for Claude the
Anthropic Messages body with `anthropic_version: "bedrock-2023-05-31"` and no `model`), `/converse` and
`/converse-stream` (Converse: a body shape of Bedrock's own, addon/wire/bedrock_converse/format.py). The model id is in the
path, its `:` sent raw by some clients and as `%3A` by others (anthropic-sdk-python `lib/bedrock/_client.py` quotes
it with `safe=":"`; botocore quotes it whole), and may be an inference profile's ARN.

A model's own error comes in Bedrock's envelope, `{"message": "The model returned the following errors: …"}` with
the model's text after the colon (a ValidationException): Anthropic's texts there are matched by Anthropic's rules
(addon/dialects/anthropic.py). The texts below are Bedrock's own.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import unquote

from .base import ENCRYPTED_CONTENT_FOREIGN, Dialect, Rule, rx

REASONING_TEXT_UNSUPPORTED = "reasoning_text_unsupported"
SIGV4_SIGNATURE_MISMATCH = "sigv4_signature_mismatch"

INVOKE = "invoke"
INVOKE_STREAM = "invoke-with-response-stream"
CONVERSE = "converse"
CONVERSE_STREAM = "converse-stream"
_ROUTE = re.compile(
    r"/model/(?P<model>[^?#]+)/(?P<action>invoke-with-response-stream|invoke|converse-stream|converse)$"
)


class BedrockRoute(NamedTuple):
    model: str  # the model id or inference profile (ARN) the path names, decoded
    action: str  # INVOKE, INVOKE_STREAM, CONVERSE or CONVERSE_STREAM


def bedrock_route(path: str) -> BedrockRoute | None:
    """The model and operation of a bedrock-runtime path; None for any other path."""
    match = _ROUTE.search(path.split("?", 1)[0].rstrip("/"))
    if match is None:
        return None
    return BedrockRoute(unquote(match.group("model")), match.group("action"))


RULES: tuple[Rule, ...] = (
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
    # AWS's answer (HTTP 403, SignatureDoesNotMatch) to a SigV4-signed request changed after it was signed: the
    # signature covers the body's SHA-256 (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-troubleshooting.html).
    Rule(
        SIGV4_SIGNATURE_MISMATCH,
        "bedrock",
        "invalid",
        "signature",
        "does not match the signature you provided",
        rx(r"The\s+request\s+signature\s+we\s+calculated\s+does\s+not\s+match\s+the\s+signature\s+you\s+provided"),
        "the request was changed after the client signed it with AWS SigV4 (the signature covers the body)",
    ),
)


class Bedrock(Dialect):
    name = "bedrock"
    otel_name = "aws.bedrock"
    rules = RULES

    def serves(self, host: str, path: str, model: str) -> bool:
        return host.startswith("bedrock-runtime.") or bedrock_route(path) is not None


DIALECT = Bedrock()
