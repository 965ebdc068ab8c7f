"""Unit tests for addon/diagnosis/ and the dialects' error rules (addon/dialects/): every known error text, in the
envelope it really arrives in.

Texts come from the public issues named beside each group of cases and in the module (quoted with the variants seen
in the wild), and from the fake providers in tests/support, driven the way the proxy's clients drive them so that
the envelope is the fake's own.
"""

from __future__ import annotations

import ast
import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from llm_reasoning_proxy import dialects
from llm_reasoning_proxy import wire as formats
from llm_reasoning_proxy.diagnosis import MAX_MESSAGE, RULE_TABLE, RULES, Diagnosis, classify, error_messages
from llm_reasoning_proxy.dialects import (
    anthropic,
    base,
    bedrock,
    cerebras,
    copilot,
    deepseek,
    gateways,
    gemini,
    kimi_anthropic,
    openai,
    zai,
)
from llm_reasoning_proxy.shared.redact import REDACTED
from llm_reasoning_proxy.wire import RepairContext, by_name

from tests.support import fake_anthropic, fake_chat, fake_gemini, fake_responses
from tests.support.fake_chat import ChatFake
from tests.support.fake_gemini import GeminiDialect
from tests.support.fake_provider import Options, Recorded, Reply
from tests.support.planted import planted

# Ids shaped like the real ones (the items of one response share its hex prefix in the fixture
# openai-responses/pydanticai_gpt5_reasoning_function_call_roundtrip_0_response_200.json).
RS_ID = "rs_0c71d6d8526a7a4b006920e03fd67c81a2b9c3d4e5f60718"
FC_ID = "fc_0c71d6d8526a7a4b006920e0447ea881a2b9c3d4e5f60718"
MSG_ID = "msg_0c71d6d8526a7a4b006920e0460c1b81a2b9c3d4e5f60718"
RESP_ID = "resp_0c71d6d8526a7a4b006920e03f691c81a2b9c3d4e5f60718"
CALL_ID = "call_1w9YRdMtRTRucwZShoZYlLJp"

GEMINI_TEXT = (
    "Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
    "correctly, and missing thought_signature may lead to degraded model performance. Additional data, function "
    "call `default_api:shell` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures "
    "for more details."
)
VERTEX_TEXT = (
    "Unable to submit request because function call `default_api:read_file` in the 3. content block is missing a "
    "`thought_signature`. Learn more: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures"
)
ZED_COPILOT_TEXT = (
    "Unable to submit request because function call `default_api:list_directory` in the 2. content block is "
    "missing a `thought_signature`."
)
ANTHROPIC_EXPECTED = (
    "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` "
    "is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of "
    "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid "
    "this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
ANTHROPIC_SIGNATURE = "messages.1.content.0: Invalid `signature` in `thinking` block"
ANTHROPIC_MODIFIED = (
    "messages.3.content.9: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be "
    "modified. These blocks must remain as they were in the original response."
)
DEEPSEEK_TEXT = (
    "Missing `reasoning_content` field in the assistant message at message index 2. For more information, please "
    "refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
)
DEEPSEEK_V4_TEXT = "The `reasoning_content` in the thinking mode must be passed back to the API."
MOONSHOT_TEXT = "thinking is enabled but reasoning_content is missing in assistant tool call message at index 13"
NOT_PERSISTED_TEXT = (
    f"Item with id '{RS_ID}' not found. Items are not persisted when `store` is set to false. Try again with "
    "`store` set to true, or remove this item from your input."
)


def openai_error(message: str, param: str | None = "input", code: str | None = None) -> str:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}})


def anthropic_error(message: str) -> str:
    return json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": message}})


def google_error(message: str) -> str:
    return json.dumps({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}})


def copilot_error(message: str, code: str = "invalid_request_body") -> str:
    return json.dumps({"error": {"message": message, "code": code}})


def openrouter_error(raw: str, provider_name: str) -> str:
    return json.dumps(
        {
            "error": {
                "message": "Provider returned error",
                "code": 400,
                "metadata": {"raw": raw, "provider_name": provider_name, "is_byok": True},
            },
            "user_id": "user_2smDyoir6cVtTliFhxZDiolmcWC",
        }
    )


def expect(
    rule: str,
    provider: str,
    kind: str,
    field: str | None,
    *,
    index: int | None = None,
    position: int | None = None,
    block: int | None = None,
    item_ids: tuple[str, ...] = (),
    function: str | None = None,
    wrapped_by: str | None = None,
    cause: str | None = None,
    quoted_ends: tuple[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "rule": rule,
        "provider": provider,
        "kind": kind,
        "field": field,
        "index": index,
        "position": position,
        "block": block,
        "item_ids": list(item_ids),
        "function": function,
        "wrapped_by": wrapped_by,
        "cause": cause,
        "quoted_ends": quoted_ends,
    }


def facts(diagnosis: Diagnosis) -> dict[str, Any]:
    return diagnosis.model_dump(exclude={"summary", "message"})


# --------------------------------------------------------------------------------------
# every known error text, in its provider's envelope (sources named beside each group)

PROTOCOL_CASES = [
    # GitHub Copilot, in case order: https://github.com/github/copilot-cli/issues/785,
    # https://github.com/caozhiyuan/copilot-api/issues/176 (its first reason), then two texts from Zed's notes
    # (zed-industries/zed@e6eed972d47e, crates/language_models/THOUGHT_SIGNATURES.md)
    pytest.param(
        400,
        copilot_error("invalid request body"),
        "invalid request body",
        expect("copilot_invalid_request_body", "copilot", "invalid", None),
        id="copilot-invalid-request-body",
    ),
    pytest.param(
        400,
        copilot_error(
            "invalid request body, failed to validate schema: (1) Reason: got array, want string, Location: "
            "/properties/messages/items/properties/content/oneOf/0/type."
        ),
        "invalid request body, failed to validate schema: (1) Reason: got array, want string, Location: "
        "/properties/messages/items/properties/content/oneOf/0/type.",
        expect("copilot_schema", "copilot", "schema", "content"),
        id="copilot-schema",
    ),
    pytest.param(
        400,
        copilot_error(ZED_COPILOT_TEXT),
        ZED_COPILOT_TEXT,
        expect(
            "vertex_signature_missing",
            "vertex",
            "missing",
            "reasoning_opaque",
            index=1,
            position=2,
            function="list_directory",
            wrapped_by="copilot",
        ),
        id="copilot-vertex-passthrough",
    ),
    pytest.param(
        400,
        copilot_error("model gemini-3-pro-preview is not supported via Responses API.", "unsupported_api_for_model"),
        "model gemini-3-pro-preview is not supported via Responses API.",
        expect("unsupported_api_for_model", "copilot", "unsupported", "model"),
        id="copilot-unsupported-api",
    ),
    # OpenRouter: the Moonshot error of https://github.com/iOfficeAI/AionUi/issues/2746, as quoted there
    pytest.param(
        400,
        '{"error":{"message":"Error from provider: Provider returned error","code":400,"metadata":{"raw":"{\\"error'
        '\\":{\\"message\\":\\"thinking is enabled but reasoning_content is missing in assistant tool call message'
        ' at index 2\\",\\"type\\":\\"invalid_request_error\\"}}","provider_name":"Moonshot AI","is_byok":true}},'
        '"user_id":"user_2z4xm5LomaIHfsnVqMhFsWrVrGY"}',
        "thinking is enabled but reasoning_content is missing in assistant tool call message at index 2",
        expect(
            "reasoning_content_missing", "moonshot", "missing", "reasoning_content", index=2, wrapped_by="openrouter"
        ),
        id="openrouter-moonshot",
    ),
    # OpenRouter in front of Vertex: https://github.com/microsoft/vscode/issues/279676, as quoted there
    pytest.param(
        400,
        '{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"Gemini models require '
        "OpenRouter reasoning details to be preserved in each request. Please refer to our docs: "
        "https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks. Upstream error: "
        '{\\n  \\"error\\": {\\n    \\"code\\": 400,\\n    \\"message\\": \\"Unable to submit request because '
        "function call `default_api:list_dir` in the 2. content block is missing a `thought_signature`. Learn "
        'more: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures\\",\\n    \\"status'
        '\\": \\"INVALID_ARGUMENT\\"\\n  }\\n}\\n","provider_name":"Google"}},"user_id":"user_2smDyoir6cVtTliFhxZDi'
        'olmcWC"}',
        "Unable to submit request because function call `default_api:list_dir` in the 2. content block is missing a "
        "`thought_signature`. Learn more: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures",
        expect(
            "vertex_signature_missing",
            "vertex",
            "missing",
            "reasoning_details",
            index=1,
            position=2,
            function="list_dir",
            wrapped_by="openrouter",
        ),
        id="openrouter-vertex",
    ),
    # OpenAI Responses, in case order: https://github.com/cline/cline/issues/12242,
    # https://github.com/openai/openai-node/issues/1567, https://github.com/continuedev/continue/issues/12620,
    # https://github.com/vercel/ai/issues/7883, https://github.com/anomalyco/opencode/issues/7724
    pytest.param(
        400,
        openai_error(
            f"Item '{FC_ID}' of type 'function_call' was provided without its required 'reasoning' item: '{RS_ID}'."
        ),
        f"Item '{FC_ID}' of type 'function_call' was provided without its required 'reasoning' item: '{RS_ID}'.",
        expect("responses_reasoning_missing", "openai", "missing", "reasoning item", item_ids=(FC_ID, RS_ID)),
        id="responses-function-call-without-reasoning",
    ),
    pytest.param(
        400,
        openai_error(f"Item '{RS_ID}' of type 'reasoning' was provided without its required following item."),
        f"Item '{RS_ID}' of type 'reasoning' was provided without its required following item.",
        expect("responses_reasoning_orphaned", "openai", "orphaned", "reasoning item", item_ids=(RS_ID,)),
        id="responses-reasoning-without-following",
    ),
    pytest.param(
        400,
        openai_error(
            f"Item '{MSG_ID}' of type 'message' was provided without its required 'reasoning' item: '{RS_ID}'."
        ),
        f"Item '{MSG_ID}' of type 'message' was provided without its required 'reasoning' item: '{RS_ID}'.",
        expect("responses_reasoning_missing", "openai", "missing", "reasoning item", item_ids=(MSG_ID, RS_ID)),
        id="responses-message-without-reasoning",
    ),
    pytest.param(
        400,
        openai_error(f"Duplicate item found with id {RS_ID}. Remove duplicate items from your input and try again."),
        f"Duplicate item found with id {RS_ID}. Remove duplicate items from your input and try again.",
        expect("responses_duplicate_item", "openai", "duplicate", "reasoning item", item_ids=(RS_ID,)),
        id="responses-duplicate",
    ),
    pytest.param(
        404,
        openai_error(NOT_PERSISTED_TEXT),
        NOT_PERSISTED_TEXT,
        expect("responses_item_not_found", "openai", "not_found", "reasoning item", item_ids=(RS_ID,)),
        id="responses-not-persisted",
    ),
    # Gemini API and Vertex AI, in case order: https://github.com/manthanabc/paws/issues/103,
    # https://github.com/google-gemini/gemini-cli/issues/14437,
    # https://github.com/langchain-ai/langchain-google/pull/1581, https://github.com/BerriAI/litellm/pull/38333
    pytest.param(
        400,
        google_error(GEMINI_TEXT),
        GEMINI_TEXT,
        expect(
            "gemini_signature_missing", "gemini", "missing", "thought_signature", index=1, position=2, function="shell"
        ),
        id="gemini-api",
    ),
    pytest.param(
        400,
        google_error(VERTEX_TEXT),
        VERTEX_TEXT,
        expect(
            "vertex_signature_missing",
            "vertex",
            "missing",
            "thought_signature",
            index=2,
            position=3,
            function="read_file",
        ),
        id="vertex",
    ),
    pytest.param(
        400,
        google_error("Thought signature is not valid."),
        "Thought signature is not valid.",
        expect("signature_invalid", "gemini", "invalid", "thought_signature"),
        id="signature-not-valid",
    ),
    pytest.param(
        400,
        google_error("Invalid thought signature"),
        "Invalid thought signature",
        expect("signature_invalid", "gemini", "invalid", "thought_signature"),
        id="signature-invalid-litellm-wording",
    ),
    # https://github.com/google-gemini/gemini-cli/issues/8003: the whole `Base64 decoding failed for "…"` text
    pytest.param(
        400,
        google_error(
            "Invalid value at 'contents[3].parts[0].thought_signature' (TYPE_BYTES), Base64 decoding failed for "
            '"CiQB0e2KbwT0b61TcAOcqVb3XjcevLDTQWxQkB5NYbtFVMZQFZIKXAHR7Ypv8N-_"'
        ),
        "Invalid value at 'contents[3].parts[0].thought_signature' (TYPE_BYTES), Base64 decoding failed for "
        '"CiQB0e2KbwT0b61TcAOcqVb3XjcevLDTQWxQkB5NYbtFVMZQFZIKXAHR7Ypv8N-_"',
        expect("signature_not_base64", "gemini", "invalid", "thought_signature", index=3, block=0),
        id="signature-base64",
    ),
    # Gemini's OpenAI-compatible endpoint: the JSON-array wrapper (https://github.com/manthanabc/paws/issues/103)
    pytest.param(
        400,
        json.dumps([{"error": {"code": 400, "message": GEMINI_TEXT, "status": "INVALID_ARGUMENT"}}], indent=2),
        GEMINI_TEXT,
        expect(
            "gemini_signature_missing", "gemini", "missing", "thought_signature", index=1, position=2, function="shell"
        ),
        id="gemini-openai-compat-array",
    ),
    # Anthropic, in case order: https://github.com/mastra-ai/mastra/issues/9277,
    # https://github.com/anthropics/claude-code/issues/10627, https://github.com/anthropics/claude-code/issues/25361
    pytest.param(
        400,
        anthropic_error(ANTHROPIC_EXPECTED),
        ANTHROPIC_EXPECTED,
        expect("anthropic_thinking_expected", "anthropic", "missing", "thinking block", index=1, block=0),
        id="anthropic-thinking-expected",
    ),
    pytest.param(
        400,
        anthropic_error(ANTHROPIC_SIGNATURE),
        ANTHROPIC_SIGNATURE,
        expect("anthropic_signature_invalid", "anthropic", "invalid", "signature", index=1, block=0),
        id="anthropic-signature",
    ),
    pytest.param(
        400,
        anthropic_error(ANTHROPIC_MODIFIED),
        ANTHROPIC_MODIFIED,
        expect("anthropic_thinking_modified", "anthropic", "invalid", "thinking block", index=3, block=9),
        id="anthropic-modified",
    ),
    # reasoning_content, in case order: https://github.com/hotovo/aider-desk/issues/529,
    # https://github.com/endolith/open-interpreter/issues/215, https://github.com/iOfficeAI/AionUi/issues/2746 (raw)
    pytest.param(
        400,
        openai_error(DEEPSEEK_TEXT, param=None, code="invalid_request_error"),
        DEEPSEEK_TEXT,
        expect("reasoning_content_missing", "deepseek", "missing", "reasoning_content", index=2),
        id="deepseek",
    ),
    pytest.param(
        400,
        openai_error(DEEPSEEK_V4_TEXT, param=None, code="invalid_request_error"),
        DEEPSEEK_V4_TEXT,
        expect("reasoning_content_missing", "deepseek", "missing", "reasoning_content"),
        id="deepseek-v4",
    ),
    pytest.param(
        400,
        json.dumps({"error": {"message": MOONSHOT_TEXT, "type": "invalid_request_error"}}),
        MOONSHOT_TEXT,
        expect("reasoning_content_missing", "moonshot", "missing", "reasoning_content", index=13),
        id="moonshot",
    ),
]


@pytest.mark.parametrize(("status", "body", "message", "expected"), PROTOCOL_CASES)
def test_protocol_texts(status, body, message, expected):
    diagnosis = classify(status, body)
    assert facts(diagnosis) == expected
    assert diagnosis.message == message


@pytest.mark.parametrize(("status", "body", "message", "expected"), PROTOCOL_CASES)
def test_bytes_body_classifies_like_text(status, body, message, expected):
    assert classify(status, body.encode()) == classify(status, body)


# --------------------------------------------------------------------------------------
# the 2026 texts: block binding, foreign state on every target, and their neighbours (each from the issue or PR
# named; `…` stands where the source elides)

BINDING_TEXT = (
    "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation. "
    'Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
)
# anomalyco/opencode #48637: the optional tail that names what changed
BINDING_SYSTEM_TEXT = (
    BINDING_TEXT + " That setting requires the `thinking-binding-controls-2026-08-01` value in the `anthropic-beta` "
    "header. The `system` prompt differs from the one this block was created with."
)
VERTEX_NOT_VALID = "Unable to submit request because Thought signature is not valid.. Learn more: …"
UNVERIFIED_ITEM = (
    f"The encrypted content for item {RS_ID} could not be verified. Reason: Encrypted content could not be decrypted "
    "or parsed."
)
XAI_UNDECRYPTABLE = (
    "Could not decrypt the provided encrypted_content. Ensure the value is the unmodified encrypted_content from a "
    "previous response."
)
CEREBRAS_UNSUPPORTED = (
    "messages.{index}.assistant.reasoning_content: property 'messages.{index}.assistant.reasoning_content' is "
    "unsupported"
)
XAI_COMPACTION_BLOB = "Could not decode the compaction blob. Ensure it is unmodified from the compact response."
NOT_THIS_CALLER = "reasoning `encrypted_content` was not issued to this caller"
OPENROUTER_OTHER_MODEL = (
    "Your request contains encrypted reasoning or compaction content that was produced under a different model..."
)
DEEPSEEK_REDACTED = (
    "Failed to deserialize the JSON body into the target type: messages[1].content: unknown variant "
    "`redacted_thinking`, expected one of `text`, `image`, `document`, `thinking`, …"
)
BEDROCK_SIGNATURE = "The model returned the following errors: messages.369.content.0.thinking.signature: Field required"
BEDROCK_REASONING_TEXT = (
    "This model doesn't support the reasoningContent.reasoningText.text field for assistant messages. Remove "
    "reasoningContent.reasoningText.text and try again."
)
BEDROCK_OTHER_ACCOUNT = "encrypted reasoning was created for a different account or model"
# AWS's text for a SigV4 signature that does not match (IAM user guide, "Troubleshoot Signature Version 4 signing")
BEDROCK_SIGV4_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access "
    "Key and signing method. Consult the service documentation for details."
)
# Converse without the reasoning before a tool use (langchain-ai/langchain-aws #844)
BEDROCK_THINKING_EXPECTED = (
    "The model returned the following errors: messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, "
    "but found `text`. When `thinking` is enabled, a final `assistant` message must start with a thinking block"
)
FIREWORKS_THINKING_BLOCKS = "Extra inputs are not permitted, field: 'messages[2].thinking_blocks'"
COPILOT_EFFORT = "model claude-haiku-4.5 does not support reasoning effort"
DEEPSEEK_THINKING = "The `content[].thinking` in the thinking mode must be passed back to the API."
COPILOT_ANTHROPIC = "messages.1.content.0: Invalid signature in thinking block"

REFERENCE_2026_CASES = [
    # Anthropic's block binding (platform.claude.com preserved-thinking docs; anomalyco/opencode #48637)
    pytest.param(
        anthropic_error(BINDING_TEXT),
        BINDING_TEXT,
        expect("anthropic_block_binding", "anthropic", "foreign", "signature", index=1, block=0),
        id="anthropic-block-binding",
    ),
    pytest.param(
        anthropic_error(BINDING_SYSTEM_TEXT),
        BINDING_SYSTEM_TEXT,
        expect("anthropic_block_binding", "anthropic", "foreign", "signature", index=1, block=0, cause="system prompt"),
        id="anthropic-block-binding-system",
    ),
    # Wei-Shaw/sub2api PR #6677: the binding controls without their beta header
    pytest.param(
        anthropic_error("thinking.adaptive.block_binding: Extra inputs are not permitted"),
        "thinking.adaptive.block_binding: Extra inputs are not permitted",
        expect("anthropic_block_binding_beta", "anthropic", "schema", "thinking.block_binding"),
        id="anthropic-block-binding-beta",
    ),
    # Gemini API and Vertex given another model's signature or a malformed one (google-gemini/gemini-cli #13467,
    # Antigravity-Manager PR #3342, NoeFabris/opencode-antigravity-auth #368)
    pytest.param(
        google_error("Corrupted thought signature."),
        "Corrupted thought signature.",
        expect("signature_invalid", "gemini", "invalid", "thought_signature"),
        id="gemini-corrupted",
    ),
    pytest.param(
        google_error("Invalid thought signature."),
        "Invalid thought signature.",
        expect("signature_invalid", "gemini", "invalid", "thought_signature"),
        id="gemini-invalid",
    ),
    pytest.param(
        google_error(VERTEX_NOT_VALID),
        VERTEX_NOT_VALID,
        expect("signature_invalid", "gemini", "invalid", "thought_signature"),
        id="vertex-not-valid",
    ),
    # OpenAI Responses, both wordings of invalid_encrypted_content (openai/codex #8145; Wei-Shaw/sub2api #2863)
    pytest.param(
        '{"error":{"message":"The encrypted content gAAA...DQ== could not be verified.","type":"invalid_request_error",'
        '"param":null,"code":"invalid_encrypted_content"}}',
        "The encrypted content gAAA...DQ== could not be verified.",
        expect(
            "responses_encrypted_content_invalid",
            "openai",
            "invalid",
            "encrypted_content",
            quoted_ends=("gAAA", "DQ=="),
        ),
        id="openai-unverified",
    ),
    pytest.param(
        openai_error(UNVERIFIED_ITEM, param=None, code="invalid_encrypted_content"),
        UNVERIFIED_ITEM,
        expect("responses_encrypted_content_invalid", "openai", "invalid", "encrypted_content", item_ids=(RS_ID,)),
        id="openai-unverified-item",
    ),
    # gateways (oh-my-pi #11928, opencode #48864)
    pytest.param(
        openai_error(NOT_THIS_CALLER, param=None),
        NOT_THIS_CALLER,
        expect("encrypted_content_foreign", "gateway", "foreign", "encrypted_content"),
        id="gateway-not-this-caller",
    ),
    # OpenRouter (hackerai-tech/hackerai PR #1171)
    pytest.param(
        json.dumps({"error": {"message": OPENROUTER_OTHER_MODEL, "code": 400}}),
        OPENROUTER_OTHER_MODEL,
        expect("encrypted_content_foreign", "openrouter", "foreign", "reasoning_details"),
        id="openrouter-other-model",
    ),
    # xAI's envelope (chenyme/grok2api tests; hackerai-tech/hackerai PR #996)
    pytest.param(
        json.dumps({"code": "invalid-argument", "error": XAI_UNDECRYPTABLE}),
        XAI_UNDECRYPTABLE,
        expect("responses_encrypted_content_invalid", "xai", "invalid", "encrypted_content"),
        id="xai-undecryptable",
    ),
    # Copilot's /v1/messages, in Copilot's envelope: without backticks (caozhiyuan/copilot-api #63), and wrapped once
    # more as a JSON text by copilot-api (#78)
    pytest.param(
        json.dumps(
            {
                "error": {
                    "message": "messages.1.content.0: Invalid signature in thinking block",
                    "code": "invalid_request_body",
                }
            }
        ),
        "messages.1.content.0: Invalid signature in thinking block",
        expect(
            "anthropic_signature_invalid", "anthropic", "invalid", "signature", index=1, block=0, wrapped_by="copilot"
        ),
        id="copilot-messages-invalid-signature",
    ),
    pytest.param(
        json.dumps(
            {
                "error": {
                    "message": json.dumps(
                        {
                            "type": "error",
                            "error": {"type": "invalid_request_error", "message": ANTHROPIC_SIGNATURE},
                            "request_id": "req_011CXXe12eFiE3gWLgWSZ1eg",
                        }
                    ),
                    "type": "error",
                }
            }
        ),
        ANTHROPIC_SIGNATURE,
        expect("anthropic_signature_invalid", "anthropic", "invalid", "signature", index=1, block=0),
        id="copilot-api-nested-invalid-signature",
    ),
    # Cerebras takes no reasoning_content back (Kilo-Org/kilocode #10375; one line a message, as
    # Alishahryar1/free-claude-code #1136 shows it)
    pytest.param(
        json.dumps(
            {
                "message": CEREBRAS_UNSUPPORTED.format(index=2) + "\n" + CEREBRAS_UNSUPPORTED.format(index=4),
                "type": "invalid_request_error",
                "param": "validation_error",
                "code": "wrong_api_format",
            }
        ),
        CEREBRAS_UNSUPPORTED.format(index=2) + "\n" + CEREBRAS_UNSUPPORTED.format(index=4),
        expect("reasoning_content_unsupported", "cerebras", "unsupported", "reasoning_content", index=2),
        id="cerebras-reasoning-content",
    ),
    # A reasoning item sent back without its summary (chenyme/grok2api #688, PR #689)
    pytest.param(
        json.dumps({"code": "invalid-argument", "error": XAI_COMPACTION_BLOB}),
        XAI_COMPACTION_BLOB,
        expect("reasoning_summary_missing", "xai", "missing", "summary"),
        id="xai-compaction-blob",
    ),
    # Passed on by a gateway in front of xAI (chenyme/grok2api #688, as Claude Code shows it)
    pytest.param(
        f"API Error: 400 {XAI_COMPACTION_BLOB}",
        f"API Error: 400 {XAI_COMPACTION_BLOB}",
        expect("reasoning_summary_missing", "xai", "missing", "summary"),
        id="xai-compaction-blob-passed-on",
    ),
    # DeepSeek's /anthropic endpoint, HTTP 422
    pytest.param(
        DEEPSEEK_REDACTED,
        DEEPSEEK_REDACTED,
        expect("redacted_thinking_unsupported", "deepseek", "foreign", "redacted_thinking", index=1),
        id="deepseek-redacted-thinking",
    ),
    pytest.param(
        openai_error(DEEPSEEK_THINKING, param=None, code="invalid_request_error"),
        DEEPSEEK_THINKING,
        expect("deepseek_thinking_missing", "deepseek", "missing", "thinking block"),
        id="deepseek-anthropic-thinking",
    ),
    # Anthropic after a model switch dropped the signature (anomalyco/opencode #25005), and Bedrock's copy
    # (can1357/oh-my-pi PR #10486)
    pytest.param(
        anthropic_error("messages.4.content.0.thinking.signature: Field required"),
        "messages.4.content.0.thinking.signature: Field required",
        expect("anthropic_signature_missing", "anthropic", "missing", "signature", index=4, block=0),
        id="anthropic-signature-field-required",
    ),
    pytest.param(
        json.dumps({"type": "error", "error": {"type": "ValidationException", "message": BEDROCK_SIGNATURE}}),
        BEDROCK_SIGNATURE,
        expect("anthropic_signature_missing", "anthropic", "missing", "signature", index=369, block=0),
        id="bedrock-signature-field-required",
    ),
    # Bedrock Converse (UKGovernmentBEIS/inspect_ai #5217) and OpenAI models on Bedrock (BerriAI/litellm #41793)
    pytest.param(
        json.dumps({"message": BEDROCK_REASONING_TEXT}),
        BEDROCK_REASONING_TEXT,
        expect("reasoning_text_unsupported", "bedrock", "foreign", "reasoningContent.reasoningText.text"),
        id="bedrock-reasoning-text",
    ),
    pytest.param(
        json.dumps({"message": BEDROCK_OTHER_ACCOUNT}),
        BEDROCK_OTHER_ACCOUNT,
        expect("encrypted_content_foreign", "bedrock", "foreign", "encrypted_content"),
        id="bedrock-other-account",
    ),
    pytest.param(
        json.dumps({"message": BEDROCK_SIGV4_MISMATCH}),
        BEDROCK_SIGV4_MISMATCH,
        expect("sigv4_signature_mismatch", "bedrock", "invalid", "signature"),
        id="bedrock-sigv4-signature-mismatch",
    ),
    pytest.param(
        json.dumps({"message": BEDROCK_THINKING_EXPECTED}),
        BEDROCK_THINKING_EXPECTED,
        expect("anthropic_thinking_expected", "anthropic", "missing", "thinking block", index=1, block=0),
        id="bedrock-converse-thinking-expected",
    ),
    # Fireworks behind LiteLLM (AndyMik90/Aperant #1988)
    pytest.param(
        openai_error(FIREWORKS_THINKING_BLOCKS, param=None),
        FIREWORKS_THINKING_BLOCKS,
        expect("thinking_blocks_not_permitted", "fireworks", "foreign", "thinking_blocks", index=2),
        id="fireworks-thinking-blocks",
    ),
    pytest.param(
        openai_error("litellm.BadRequestError: Fireworks_aiException - " + FIREWORKS_THINKING_BLOCKS, param=None),
        "litellm.BadRequestError: Fireworks_aiException - " + FIREWORKS_THINKING_BLOCKS,
        expect(
            "thinking_blocks_not_permitted", "fireworks", "foreign", "thinking_blocks", index=2, wrapped_by="litellm"
        ),
        id="fireworks-through-litellm",
    ),
    # GitHub Copilot: effort for a model without it (litellm #28053), and Anthropic's texts on /v1/messages as
    # Copilot wraps them (caozhiyuan/copilot-api #63, #78)
    pytest.param(
        json.dumps({"code": "invalid_reasoning_effort", "message": COPILOT_EFFORT}),
        COPILOT_EFFORT,
        expect("reasoning_effort_unsupported", "copilot", "unsupported", "reasoning_effort"),
        id="copilot-reasoning-effort",
    ),
    pytest.param(
        copilot_error(COPILOT_ANTHROPIC),
        COPILOT_ANTHROPIC,
        expect(
            "anthropic_signature_invalid", "anthropic", "invalid", "signature", index=1, block=0, wrapped_by="copilot"
        ),
        id="copilot-anthropic-signature",
    ),
    pytest.param(
        json.dumps(
            {
                "error": {
                    "message": anthropic_error(ANTHROPIC_SIGNATURE.replace("messages.1", "messages.3")),
                    "type": "error",
                }
            }
        ),
        ANTHROPIC_SIGNATURE.replace("messages.1", "messages.3"),
        expect("anthropic_signature_invalid", "anthropic", "invalid", "signature", index=3, block=0),
        id="copilot-anthropic-envelope-in-message",
    ),
    pytest.param(
        copilot_error(BINDING_SYSTEM_TEXT),
        BINDING_SYSTEM_TEXT,
        expect(
            "anthropic_block_binding",
            "anthropic",
            "foreign",
            "signature",
            index=1,
            block=0,
            wrapped_by="copilot",
            cause="system prompt",
        ),
        id="copilot-block-binding",
    ),
]


@pytest.mark.parametrize(("body", "message", "expected"), REFERENCE_2026_CASES)
def test_2026_texts(body, message, expected):
    diagnosis = classify(400, body)
    assert facts(diagnosis) == expected
    assert diagnosis.message == message
    assert classify(400, body.encode()) == diagnosis


# --------------------------------------------------------------------------------------
# chat hosts that keep reasoning as text: Kimi's whole body, and GLM's error for a malformed history

KIMI_BODY = (  # https://github.com/VicBilibily/GCMP/issues/162
    '{"error":{"type":"invalid_request_error","message":"thinking is enabled but reasoning_content is missing in '
    'assistant tool call message at index 12"},"type":"error"}'
)
GLM_ILLEGAL = "The messages parameter is illegal. Please check the documentation."  # continuedev/continue #13259
GLM_ILLEGAL_ZH = "messages 参数非法。请检查文档。"

CHAT_HOST_CASES = [
    pytest.param(
        KIMI_BODY,
        "thinking is enabled but reasoning_content is missing in assistant tool call message at index 12",
        expect("reasoning_content_missing", "moonshot", "missing", "reasoning_content", index=12),
        id="kimi-whole-body",
    ),
    pytest.param(
        json.dumps({"error": {"code": "1214", "message": GLM_ILLEGAL}}),
        GLM_ILLEGAL,
        expect("zai_messages_illegal", "zai", "schema", "messages"),
        id="glm-1214",
    ),
    pytest.param(
        json.dumps({"error": {"code": "1214", "message": GLM_ILLEGAL_ZH}}, ensure_ascii=False),
        GLM_ILLEGAL_ZH,
        expect("zai_messages_illegal", "zai", "schema", "messages"),
        id="glm-1214-chinese",
    ),
]


@pytest.mark.parametrize(("body", "message", "expected"), CHAT_HOST_CASES)
def test_chat_host_texts(body, message, expected):
    diagnosis = classify(400, body)
    assert facts(diagnosis) == expected
    assert diagnosis.message == message


def test_glm_generic_text_loses_to_a_specific_one():
    body = json.dumps({"error": {"message": f"{GLM_ILLEGAL} {MOONSHOT_TEXT}"}})
    assert classify(400, body).rule == "reasoning_content_missing"


@pytest.mark.parametrize(
    ("tail", "cause"),
    [
        pytest.param("The `system` prompt differs from the one this block was created with.", "system prompt"),
        # Only the system prompt's tail is quoted; the others are read by the same shape.
        pytest.param("The `tools` differ from the ones this block was created with.", "tools"),
        pytest.param("An earlier message differs from the one this block was created with.", "earlier message"),
        pytest.param("", None),
    ],
)
def test_block_binding_names_what_changed(tail, cause):
    diagnosis = classify(400, anthropic_error(f"{BINDING_TEXT} {tail}".strip()))
    assert (diagnosis.rule, diagnosis.index, diagnosis.block, diagnosis.cause) == (
        "anthropic_block_binding",
        1,
        0,
        cause,
    )


def test_a_plain_invalid_signature_is_not_the_binding():
    diagnosis = classify(400, anthropic_error(ANTHROPIC_SIGNATURE + ". Check the block."))
    assert (diagnosis.rule, diagnosis.kind, diagnosis.cause) == ("anthropic_signature_invalid", "invalid", None)


# --------------------------------------------------------------------------------------
# the variants seen in the wild

VARIANT_CASES = [
    # Vertex without backticks behind a gateway's prefix (JohnnyZ93/oai-compatible-copilot #49)
    pytest.param(
        json.dumps(
            {
                "error": {
                    "code": 400,
                    "message": "Provider API error: Unable to submit request because function call "
                    "default_api:manage_todo_list in the 3. content block is missing a thought_signature. Learn "
                    "more: ip:port (request id: 20251125125118745593999RQBlMtWD)",
                    "type": "gemini_error",
                }
            }
        ),
        expect(
            "vertex_signature_missing",
            "vertex",
            "missing",
            "thought_signature",
            index=2,
            position=3,
            function="manage_todo_list",
        ),
        id="vertex-no-backticks",
    ),
    # Vertex with the backticks and spaces lost, in Google's array wrapper with `errors` (danny-avila/LibreChat #11826)
    pytest.param(
        '[{ "error": { "code": 400, "message": "Unable to submit request because function call default_api:esql_mcp_'
        "elastic-local-mcp-serverin the 12. content block is missing athought_signature. Learn more: https://docs."
        'cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures", "errors": [ { "message": "Unable to '
        "submit request because function call default_api:esql_mcp_elastic-local-mcp-serverin the 12. content block "
        "is missing athought_signature. Learn more: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/"
        'thought-signatures", "domain": "global", "reason": "badRequest" } ], "status": "INVALID_ARGUMENT" } } ]',
        expect(
            "vertex_signature_missing",
            "vertex",
            "missing",
            "thought_signature",
            index=11,
            position=12,
            function="esql_mcp_elastic-local-mcp-server",
        ),
        id="vertex-lost-spaces",
    ),
    # Vertex naming a function without the default_api: prefix (google-gemini/gemini-cli #26683)
    pytest.param(
        google_error(
            "Unable to submit request because function call `run_shell_command` in the 99. content block is missing "
            "a `thought_signature`. Learn more: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/"
            "thought-signatures"
        ),
        expect(
            "vertex_signature_missing",
            "vertex",
            "missing",
            "thought_signature",
            index=98,
            position=99,
            function="run_shell_command",
        ),
        id="vertex-no-prefix",
    ),
    # The docs' template: no dot after the number, no backticks
    pytest.param(
        google_error("Function call default_api:get_weather in the 4 content block is missing a thought_signature."),
        expect(
            "vertex_signature_missing",
            "vertex",
            "missing",
            "thought_signature",
            index=3,
            position=4,
            function="get_weather",
        ),
        id="vertex-docs-template",
    ),
    # Vertex text wrapped across lines by a terminal, in a gateway's envelope (google-gemini/gemini-cli #14437)
    pytest.param(
        json.dumps(
            {
                "error": {
                    "message": "Unable to submit request because function call `default_api:read_file` in the 3.\n"
                    "  content block is missing a `thought_signature`. Learn more:\n  https://docs.cloud.google.com/",
                    "type": "api_error",
                    "upstreamStatus": 400,
                    "upstreamResponse": {
                        "error": {
                            "message": "Unable to submit request because function call\n  `default_api:read_file` "
                            "in the 3. content block is missing a `thought_signature`.",
                            "type": "upstream_error",
                            "param": "",
                            "code": 400,
                        }
                    },
                }
            }
        ),
        expect(
            "vertex_signature_missing",
            "vertex",
            "missing",
            "thought_signature",
            index=2,
            position=3,
            function="read_file",
        ),
        id="vertex-line-wrapped",
    ),
    # Gemini without backticks, as JSON inside a gateway's message (microsoft/vscode #299370)
    pytest.param(
        json.dumps(
            {
                "error": {
                    "message": '{\n "error": {\n "code": 400,\n "message": "Function call is missing a thought_'
                    "signature in functionCall parts. This is required for tools to work correctly, and missing "
                    "thought_signature may lead to degraded model performance. Additional data, function call "
                    "default_api:list_dir , position 3. Please refer to https://ai.google.dev/gemini-api/docs/"
                    'thought-signatures for more details.",\n "status": "INVALID_ARGUMENT"\n }\n}\n',
                    "code": 400,
                    "status": "Bad Request",
                }
            }
        ),
        expect(
            "gemini_signature_missing",
            "gemini",
            "missing",
            "thought_signature",
            index=2,
            position=3,
            function="list_dir",
        ),
        id="gemini-no-backticks-nested",
    ),
    # Gemini's text as plain text, not JSON (lbjlaq/Antigravity-Manager #938)
    pytest.param(
        "OpenAI completion error: 400 Function call is missing a thought_signature in functionCall parts. This is "
        "required for tools to work correctly, and missing thought_signature may lead to degraded model performance. "
        "Additional data, function call `default_api:update_todo_list` , position 2. Please refer to "
        "https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
        expect(
            "gemini_signature_missing",
            "gemini",
            "missing",
            "thought_signature",
            index=1,
            position=2,
            function="update_todo_list",
        ),
        id="gemini-plain-text",
    ),
    # Anthropic's older URL
    pytest.param(
        anthropic_error(
            ANTHROPIC_EXPECTED.replace(
                "https://docs.claude.com/en/docs/build-with-claude/extended-thinking",
                "https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking",
            )
        ),
        expect("anthropic_thinking_expected", "anthropic", "missing", "thinking block", index=1, block=0),
        id="anthropic-old-url",
    ),
    # "found `text`", line-wrapped, inside a Google envelope (Claude on Vertex via lbjlaq/Antigravity-Manager #139)
    pytest.param(
        google_error(
            json.dumps(
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": "messages.129.content.0.type: \nExpected `thinking` or `redacted_thinking`, but "
                        "found `text`. When `thinking` is \nenabled, a final `assistant` message must start with a "
                        "thinking block (preceeding\n the lastmost set of `tool_use` and `tool_result` blocks).",
                    },
                    "request_id": "req_vrtx_011CWZNqMnwwWbDcm11oxfHb",
                }
            )
        ),
        expect("anthropic_thinking_expected", "anthropic", "missing", "thinking block", index=129, block=0),
        id="anthropic-found-text",
    ),
    # Bedrock's copy without backticks, through OpenRouter with no "error" key (linanwx/nagobot #21)
    pytest.param(
        '{"message":"Provider returned error","code":400,"metadata":{"raw":"{\\"message\\":\\"messages.7.content.2: '
        'Invalid signature in thinking block\\"}","provider_name":"Amazon Bedrock","is_byok":false}}',
        expect(
            "anthropic_signature_invalid",
            "anthropic",
            "invalid",
            "reasoning_details",
            index=7,
            block=2,
            wrapped_by="openrouter",
        ),
        id="anthropic-bedrock-openrouter",
    ),
    # Anthropic under a gateway's own key (ding113/claude-code-hub #518)
    pytest.param(
        json.dumps(
            {
                "type": "error",
                "error": {"type": "request_fail", "upstream_error": json.loads(anthropic_error(ANTHROPIC_SIGNATURE))},
            }
        ),
        expect("anthropic_signature_invalid", "anthropic", "invalid", "signature", index=1, block=0),
        id="anthropic-gateway-key",
    ),
    # Moonshot in a Python repr, not JSON (MoonshotAI/kimi-agent-sdk #169)
    pytest.param(
        "Error code: 400 - {'error': {'type': '<nil>', 'message': 'thinking is enabled but reasoning_content is "
        "missing in assistant tool call message at index 13 (request id: 202604230913188261227178268d9d624DV4QBl)'}, "
        "'type': 'error'}",
        expect("reasoning_content_missing", "moonshot", "missing", "reasoning_content", index=13),
        id="moonshot-python-repr",
    ),
    # OpenAI's encrypted-content error with the reason appended (Wei-Shaw/sub2api #2863)
    pytest.param(
        openai_error(
            "The encrypted content gAAA...DQ== could not be verified. Reason: Encrypted content could not be "
            "decrypted or parsed.",
            param=None,
            code="invalid_encrypted_content",
        ),
        expect(
            "responses_encrypted_content_invalid",
            "openai",
            "invalid",
            "encrypted_content",
            quoted_ends=("gAAA", "DQ=="),
        ),
        id="encrypted-content-reason",
    ),
    # "Corrupted thought signature." behind a gateway's upstreamResponse (anomalyco/opencode #4832)
    pytest.param(
        '{"error":{"message":"Corrupted thought signature.","type":"api_error","upstreamStatus":400,'
        '"upstreamStatusText":"Bad Request","upstreamResponse":{"error":{"code":400,"message":"Corrupted thought '
        'signature.","status":"INVALID_ARGUMENT"}}}}',
        expect("signature_invalid", "gemini", "invalid", "thought_signature"),
        id="corrupted-signature",
    ),
]


@pytest.mark.parametrize(("body", "expected"), VARIANT_CASES)
def test_variants(body, expected):
    assert facts(classify(400, body)) == expected


def test_line_wrapped_text_keeps_its_own_spelling():
    diagnosis = classify(400, google_error("Function call is missing a\nthought_signature in functionCall parts."))
    assert diagnosis.rule == "gemini_signature_missing"
    assert (diagnosis.index, diagnosis.position, diagnosis.function) == (None, None, None)
    assert diagnosis.message == "Function call is missing a\nthought_signature in functionCall parts."


# --------------------------------------------------------------------------------------
# neighbouring errors the proxy can meet (tool pairing, empty content, turn order)

NEIGHBOUR_CASES = [
    # anthropics/claude-code #13460
    pytest.param(
        anthropic_error(
            "messages.48.content.1: unexpected `tool_use_id` found in `tool_result` blocks: "
            "toolu_019ETtGZEhTBXgWPVsdVnXMh. Each `tool_result` block must have a corresponding `tool_use` block in "
            "the previous message."
        ),
        expect(
            "tool_result_orphaned",
            "anthropic",
            "orphaned",
            "tool result",
            index=48,
            block=1,
            item_ids=("toolu_019ETtGZEhTBXgWPVsdVnXMh",),
        ),
        id="anthropic-tool-result-orphaned",
    ),
    # lbjlaq/Antigravity-Manager #654 (Claude on Vertex in Google's envelope; a client-chosen id)
    pytest.param(
        google_error(
            anthropic_error(
                "messages.243: `tool_use` ids were found without `tool_result` blocks immediately after: "
                "bash-uOQIdN0O. Each `tool_use` block must have a corresponding `tool_result` block in the next "
                "message."
            )
        ),
        expect(
            "tool_result_missing",
            "anthropic",
            "missing",
            "tool result",
            index=243,
            item_ids=("bash-uOQIdN0O",),
        ),
        id="anthropic-tool-result-missing",
    ),
    # anthropics/claude-code #4416
    pytest.param(
        anthropic_error(
            "messages.11: all messages must have non-empty content except for the optional final assistant message"
        ),
        expect("content_empty", "anthropic", "schema", "content", index=11),
        id="anthropic-content-empty",
    ),
    # justlovemaki/AIClient2API #437, JohnnyZ93/oai-compatible-copilot #217
    pytest.param(
        anthropic_error("messages.2.content.1.thinking.signature: Field required"),
        expect("anthropic_signature_missing", "anthropic", "missing", "signature", index=2, block=1),
        id="anthropic-signature-missing",
    ),
    pytest.param(
        anthropic_error("messages.5.content.0: Invalid `data` in `redacted_thinking` block"),
        expect("anthropic_redacted_data_invalid", "anthropic", "invalid", "data", index=5, block=0),
        id="anthropic-redacted-data",
    ),
    # smarter-sh/smarter #264: OpenAI names the message in `param`
    pytest.param(
        openai_error(
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
            "'tool_calls'.",
            param="messages.[4].role",
        ),
        expect("tool_result_orphaned", "openai", "orphaned", "tool result", index=4),
        id="openai-tool-orphaned",
    ),
    # FoundationAgents/OpenManus #744 (DeepSeek's spelling, no param)
    pytest.param(
        openai_error(
            "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'",
            param=None,
            code="invalid_request_error",
        ),
        expect("tool_result_orphaned", "openai", "orphaned", "tool result"),
        id="openai-compatible-tool-orphaned",
    ),
    # router-for-me/CLIProxyAPI #2798
    pytest.param(
        '{"error":{"message":"An assistant message with \'tool_calls\' must be followed by tool messages responding\\n'
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages:\\ncall_RTlWVuE5MqEb3WZJ"
        'gTIl7Rsb","type":"invalid_request_error","param":"messages.[6].role","code":null}}',
        expect(
            "tool_result_missing",
            "openai",
            "missing",
            "tool result",
            index=6,
            item_ids=("call_RTlWVuE5MqEb3WZJgTIl7Rsb",),
        ),
        id="openai-tool-result-missing",
    ),
    # QwenLM/qwen-code #315: Qwen names the message instead of the ids
    pytest.param(
        '<400> InternalError.Algo.InvalidParameter: An assistant message with "tool_calls" must be followed by tool '
        'messages responding to each "tool_call_id". The following tool_call_ids did not have response messages: '
        "message[15].role",
        expect("tool_result_missing", "openai", "missing", "tool result", index=15),
        id="qwen-tool-result-missing",
    ),
    # router-for-me/CLIProxyAPI #2368, microsoft/vscode #320060
    pytest.param(
        openai_error("No tool output found for function call call_uK3eDRSXx9p45csFRjvXDNPq."),
        expect(
            "tool_result_missing",
            "openai",
            "missing",
            "tool result",
            item_ids=("call_uK3eDRSXx9p45csFRjvXDNPq",),
        ),
        id="responses-tool-output-missing",
    ),
    pytest.param(
        openai_error("No tool call found for function call output with call_id call_TnakLSVsqtVt5cJssAhRwMoe."),
        expect(
            "tool_result_orphaned",
            "openai",
            "orphaned",
            "tool result",
            item_ids=("call_TnakLSVsqtVt5cJssAhRwMoe",),
        ),
        id="responses-tool-output-orphaned",
    ),
    pytest.param(
        openai_error(
            "Invalid 'messages[2].content': empty array. Expected an array with minimum length 1, but got an empty "
            "array instead.",
            param="messages[2].content",
            code="empty_array",
        ),
        expect("content_empty_array", "openai", "schema", "content", index=2),
        id="openai-content-empty-array",
    ),
    # continuedev/continue #11164
    pytest.param(
        google_error(
            "Please ensure that function call turn comes immediately after a user turn or after a function response "
            "turn."
        ),
        expect("gemini_turn_order", "gemini", "invalid", "contents"),
        id="gemini-turn-order",
    ),
    # google-gemini/gemini-cli #17208
    pytest.param(
        json.dumps(
            [
                {
                    "error": {
                        "code": 400,
                        "message": "Please ensure that the number of function response parts is equal to the "
                        "number of function call parts of the function call turn.",
                        "status": "INVALID_ARGUMENT",
                    }
                }
            ]
        ),
        expect("gemini_function_response_count", "gemini", "invalid", "functionResponse"),
        id="gemini-function-response-count",
    ),
]


@pytest.mark.parametrize(("body", "expected"), NEIGHBOUR_CASES)
def test_neighbouring_errors(body, expected):
    assert facts(classify(400, body)) == expected


# --------------------------------------------------------------------------------------
# texts of the fake providers, in the envelopes the fakes send


def _chat(dialect: ChatFake, model: str, path: str, messages: list[dict]) -> Reply:
    recorded = Recorded("POST", path, {}, b"", None)
    return dialect.handle({"model": model, "messages": messages}, recorded, Options())


def chat_round_trip(model: str, path: str = "/v1/chat/completions", change=None) -> Reply:
    """A tool turn from the fake, sent back (after `change` edited the assistant message) with its result."""
    dialect = ChatFake()
    user = {"role": "user", "content": "List the directory."}
    first = _chat(dialect, model, path, [user])
    assert first.status == 200
    # A copy: the fake keeps what it issued by reference.
    assistant = json.loads(json.dumps(first.doc["choices"][0]["message"]))
    if change is not None:
        change(assistant)
    result = {"role": "tool", "tool_call_id": assistant["tool_calls"][0]["id"], "content": "a.txt b.txt"}
    return _chat(dialect, model, path, [user, assistant, result])


def _drop(*keys: str):
    def change(message: dict) -> None:
        for key in keys:
            message.pop(key, None)

    return change


def _drop_call_field(key: str):
    def change(message: dict) -> None:
        message["tool_calls"][0].pop(key, None)

    return change


def _alter_details(message: dict) -> None:
    message["reasoning_details"][-1]["data" if "data" in message["reasoning_details"][-1] else "text"] += "x"


def _alter_extra_content(message: dict) -> None:
    message["tool_calls"][0]["extra_content"]["google"]["thought_signature"] = "AAAA"


def _alter_opaque(message: dict) -> None:
    message["reasoning_opaque"] = message["reasoning_opaque"][::-1]


def _alter_litellm_signature(message: dict) -> None:
    call = message["tool_calls"][0]
    call["id"] = call["id"].split("__thought__")[0]
    call["provider_specific_fields"] = {"thought_signature": "AAAA"}


def _reply_body(reply: Reply) -> bytes:
    return json.dumps(reply.doc).encode()


FAKE_CHAT_CASES = [
    pytest.param(
        "gemini-3-pro-preview",
        "/chat/completions",
        _drop("reasoning_opaque"),
        fake_chat.VERTEX_MISSING_SIGNATURE.format(name="list_directory", block=2),
        expect(
            "vertex_signature_missing",
            "vertex",
            "missing",
            "reasoning_opaque",
            index=1,
            position=2,
            function="list_directory",
            wrapped_by="copilot",
        ),
        id="copilot-missing-opaque",
    ),
    pytest.param(
        "gemini-3-pro-preview",
        "/chat/completions",
        lambda m: m.update(reasoning_opaque="AAAA"),
        "Thought signature is not valid.",
        expect("signature_invalid", "gemini", "invalid", "reasoning_opaque", wrapped_by="copilot"),
        id="copilot-altered-opaque",
    ),
    pytest.param(
        "gemini-3-pro-preview",
        "/chat/completions",
        lambda m: m.update(content=[]),
        "invalid request body",
        expect("copilot_invalid_request_body", "copilot", "invalid", None),
        id="copilot-content-empty-array",
    ),
    pytest.param(
        "deepseek-v4-flash",
        "/chat/completions",
        _drop("reasoning_content"),
        fake_chat.DEEPSEEK_MISSING_REASONING.format(index=1),
        expect("reasoning_content_missing", "deepseek", "missing", "reasoning_content", index=1),
        id="deepseek-missing",
    ),
    pytest.param(
        "google/gemini-3-pro-preview",
        "/api/v1/chat/completions",
        _drop("reasoning_details"),
        fake_chat.VERTEX_MISSING_SIGNATURE.format(name="list_directory", block=2),
        expect(
            "vertex_signature_missing",
            "vertex",
            "missing",
            "reasoning_details",
            index=1,
            position=2,
            function="list_directory",
            wrapped_by="openrouter",
        ),
        id="openrouter-gemini-missing",
    ),
    pytest.param(
        "google/gemini-3-pro-preview",
        "/api/v1/chat/completions",
        _alter_details,
        "Corrupted thought signature.",
        expect("signature_invalid", "gemini", "invalid", "reasoning_details", wrapped_by="openrouter"),
        id="openrouter-gemini-altered",
    ),
    pytest.param(
        "anthropic/claude-sonnet-4.5",
        "/api/v1/chat/completions",
        _drop("reasoning_details"),
        fake_chat.ANTHROPIC_EXPECTED_THINKING.format(index=1),
        expect(
            "anthropic_thinking_expected",
            "anthropic",
            "missing",
            "reasoning_details",
            index=1,
            block=0,
            wrapped_by="openrouter",
        ),
        id="openrouter-anthropic-missing",
    ),
    pytest.param(
        "anthropic/claude-sonnet-4.5",
        "/api/v1/chat/completions",
        _alter_details,
        "messages.1.content.0: Invalid `signature` in `thinking` block",
        expect(
            "anthropic_signature_invalid",
            "anthropic",
            "invalid",
            "reasoning_details",
            index=1,
            block=0,
            wrapped_by="openrouter",
        ),
        id="openrouter-anthropic-altered",
    ),
    pytest.param(
        "gemini-3-pro-preview",
        "/v1beta/openai/chat/completions",
        _drop_call_field("extra_content"),
        fake_chat.GEMINI_MISSING_SIGNATURE.format(name="list_directory", block=2),
        expect(
            "gemini_signature_missing",
            "gemini",
            "missing",
            "thought_signature",
            index=1,
            position=2,
            function="list_directory",
        ),
        id="gemini-compat-missing",
    ),
    pytest.param(
        "gemini-3-pro-preview",
        "/v1beta/openai/chat/completions",
        _alter_extra_content,
        "Thought signature is not valid.",
        expect("signature_invalid", "gemini", "invalid", "thought_signature"),
        id="gemini-compat-altered",
    ),
    # Claude 5 on Copilot's chat completions: Anthropic's texts in Copilot's envelope
    pytest.param(
        "claude-sonnet-5",
        "/chat/completions",
        _drop("reasoning_opaque"),
        fake_chat.ANTHROPIC_EXPECTED_THINKING.format(index=1),
        expect(
            "anthropic_thinking_expected",
            "anthropic",
            "missing",
            "thinking block",
            index=1,
            block=0,
            wrapped_by="copilot",
        ),
        id="copilot-claude-missing",
    ),
    pytest.param(
        "claude-sonnet-5",
        "/chat/completions",
        _alter_opaque,
        "messages.1.content.0: Invalid signature in thinking block",
        expect(
            "anthropic_signature_invalid", "anthropic", "invalid", "signature", index=1, block=0, wrapped_by="copilot"
        ),
        id="copilot-claude-altered",
    ),
    pytest.param(
        "gemini-3-pro-preview",
        "/litellm/v1/chat/completions",
        _alter_litellm_signature,
        "litellm.BadRequestError: VertexAIException BadRequestError - Thought signature is not valid.",
        expect("signature_invalid", "gemini", "invalid", "thought_signature", wrapped_by="litellm"),
        id="litellm-altered",
    ),
]


@pytest.mark.parametrize(("model", "path", "change", "message", "expected"), FAKE_CHAT_CASES)
def test_fake_chat_errors(model, path, change, message, expected):
    reply = chat_round_trip(model, path, change)
    assert reply.status == 400
    diagnosis = classify(reply.status, _reply_body(reply))
    assert facts(diagnosis) == expected
    assert diagnosis.message == message


def test_fake_litellm_tool_result_without_call():
    dialect = ChatFake()
    messages = [
        {"role": "user", "content": "List the directory."},
        {"role": "tool", "tool_call_id": "call_unknown", "content": "a.txt"},
    ]
    reply = _chat(dialect, "gemini-3-pro-preview", "/litellm/v1/chat/completions", messages)
    assert reply.status == 400
    diagnosis = classify(reply.status, _reply_body(reply))
    assert facts(diagnosis) == expect("tool_result_orphaned", "openai", "orphaned", "tool result")


def _gemini(path: str, contents: list) -> Reply:
    recorded = Recorded("POST", path, {}, b"", None)
    return GeminiDialect().handle({"contents": contents}, recorded, Options())


GEMINI_CONTENTS = [
    {"role": "user", "parts": [{"text": "List the directory."}]},
    {"role": "model", "parts": [{"functionCall": {"name": "list_directory", "args": {"path": "."}}}]},
    {"role": "user", "parts": [{"functionResponse": {"name": "list_directory", "response": {"files": []}}}]},
]


@pytest.mark.parametrize(
    ("path", "message", "expected"),
    [
        pytest.param(
            "/v1beta/models/gemini-3-pro-preview:generateContent",
            fake_gemini.GEMINI_API_MISSING_SIGNATURE.format(name="list_directory", position=2),
            expect(
                "gemini_signature_missing",
                "gemini",
                "missing",
                "thought_signature",
                index=1,
                position=2,
                function="list_directory",
            ),
            id="gemini-api",
        ),
        pytest.param(
            "/v1/projects/p/locations/global/publishers/google/models/gemini-3-pro-preview:generateContent",
            fake_gemini.VERTEX_MISSING_SIGNATURE.format(name="list_directory", position=2),
            expect(
                "vertex_signature_missing",
                "vertex",
                "missing",
                "thought_signature",
                index=1,
                position=2,
                function="list_directory",
            ),
            id="vertex",
        ),
    ],
)
def test_fake_gemini_missing_signature(path, message, expected):
    reply = _gemini(path, GEMINI_CONTENTS)
    assert reply.status == 400
    diagnosis = classify(reply.status, _reply_body(reply))
    assert facts(diagnosis) == expected
    assert diagnosis.message == message


def test_fake_gemini_invalid_signature():
    contents = json.loads(json.dumps(GEMINI_CONTENTS))
    contents[1]["parts"][0]["thoughtSignature"] = "AAAA"
    reply = _gemini("/v1beta/models/gemini-3-pro-preview:generateContent", contents)
    diagnosis = classify(reply.status, _reply_body(reply))
    assert facts(diagnosis) == expect("signature_invalid", "gemini", "invalid", "thought_signature")
    assert diagnosis.message == fake_gemini.INVALID_SIGNATURE


def test_fake_gemini_text_no_rule_knows_is_unknown_with_its_text():
    reply = _gemini("/v1beta/models/gemini-3-pro-preview:generateContent", [])
    diagnosis = classify(reply.status, _reply_body(reply))
    assert facts(diagnosis) == expect("unknown", "gemini", "unknown", None)
    assert diagnosis.message == fake_gemini.NO_CONTENTS.strip()


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        pytest.param(
            fake_responses.error(
                fake_responses.MISSING_REASONING.format(item_id=FC_ID, item_type="function_call", rs_id=RS_ID)
            ),
            expect("responses_reasoning_missing", "openai", "missing", "reasoning item", item_ids=(FC_ID, RS_ID)),
            id="missing-reasoning",
        ),
        pytest.param(
            fake_responses.error(fake_responses.ORPHANED_REASONING.format(rs_id=RS_ID)),
            expect("responses_reasoning_orphaned", "openai", "orphaned", "reasoning item", item_ids=(RS_ID,)),
            id="orphaned-reasoning",
        ),
        pytest.param(
            fake_responses.error(fake_responses.DUPLICATE_ITEM.format(item_id=FC_ID)),
            expect("responses_duplicate_item", "openai", "duplicate", "function_call item", item_ids=(FC_ID,)),
            id="duplicate",
        ),
        pytest.param(
            fake_responses.error(fake_responses.NOT_PERSISTED.format(item_id=RS_ID), status=404),
            expect("responses_item_not_found", "openai", "not_found", "reasoning item", item_ids=(RS_ID,)),
            id="not-persisted",
        ),
        pytest.param(
            fake_responses.error(
                fake_responses.UNVERIFIED.format(abbreviated="gAAA...DQ=="),
                param=None,
                code="invalid_encrypted_content",
            ),
            expect(
                "responses_encrypted_content_invalid",
                "openai",
                "invalid",
                "encrypted_content",
                quoted_ends=("gAAA", "DQ=="),
            ),
            id="unverified",
        ),
        pytest.param(
            fake_responses.error(fake_responses.NO_PREVIOUS.format(response_id=RESP_ID), param="previous_response_id"),
            expect(
                "responses_previous_response_not_found",
                "openai",
                "not_found",
                "previous_response_id",
                item_ids=(RESP_ID,),
            ),
            id="no-previous",
        ),
    ],
)
def test_fake_responses_errors(reply, expected):
    diagnosis = classify(reply.status, _reply_body(reply))
    assert facts(diagnosis) == expected
    assert diagnosis.message == reply.doc["error"]["message"]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param(
            fake_anthropic.MISSING_THINKING.format(index=3, found="text"),
            expect("anthropic_thinking_expected", "anthropic", "missing", "thinking block", index=3, block=0),
            id="missing-thinking",
        ),
        pytest.param(
            fake_anthropic.INVALID_SIGNATURE.format(index=1, block=2),
            expect("anthropic_signature_invalid", "anthropic", "invalid", "signature", index=1, block=2),
            id="invalid-signature",
        ),
        pytest.param(
            fake_anthropic.MODIFIED.format(index=5, block=1),
            expect("anthropic_thinking_modified", "anthropic", "invalid", "thinking block", index=5, block=1),
            id="modified",
        ),
        pytest.param(
            fake_anthropic.INVALID_DATA.format(index=1, block=0),
            expect("anthropic_redacted_data_invalid", "anthropic", "invalid", "data", index=1, block=0),
            id="invalid-data",
        ),
    ],
)
def test_fake_anthropic_errors(message, expected):
    reply = fake_anthropic.error(message)
    diagnosis = classify(reply.status, _reply_body(reply))
    assert facts(diagnosis) == expected
    assert diagnosis.message == message


def test_fake_anthropic_binding_names_a_changed_system_prompt():
    dialect = fake_anthropic.MessagesFake()
    bound = Recorded("POST", "/v1/messages", {"x-fake-binding": "1"}, b"", None)
    question = {"role": "user", "content": "List the directory."}
    doc = {"model": "claude-sonnet-5", "system": "You are terse.", "thinking": {"type": "adaptive"}}
    first = dialect.handle(doc | {"messages": [question]}, bound, Options())
    use = first.doc["content"][-1]
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": "a.txt"}]}
    again = doc | {"messages": [question, {"role": "assistant", "content": first.doc["content"]}, result]}
    assert dialect.handle(again, bound, Options()).status == 200

    changed = dialect.handle(again | {"system": "You are verbose."}, bound, Options())
    diagnosis = classify(changed.status, _reply_body(changed))
    assert facts(diagnosis) == expect(
        "anthropic_block_binding", "anthropic", "foreign", "signature", index=1, block=0, cause="system prompt"
    )
    bound_elsewhere = fake_anthropic.BOUND_ELSEWHERE.format(index=1, block=0)
    assert diagnosis.message == bound_elsewhere + fake_anthropic.BINDING_NEEDS_BETA + fake_anthropic.SYSTEM_CHANGED
    # Other tools: refused, the cause not named; with the beta header, its sentence is not said.
    beta = Recorded(
        "POST", "/v1/messages", {"x-fake-binding": "1", "anthropic-beta": fake_anthropic.BINDING_BETA}, b"", None
    )
    tools = dialect.handle(again | {"tools": [{"name": "ls", "input_schema": {"type": "object"}}]}, beta, Options())
    assert tools.doc["error"]["message"] == bound_elsewhere
    assert classify(tools.status, _reply_body(tools)).cause is None
    # Without the opt-in, blocks are not bound.
    plain = Recorded("POST", "/v1/messages", {}, b"", None)
    assert dialect.handle(again | {"system": "You are verbose."}, plain, Options()).status == 200


# --------------------------------------------------------------------------------------
# precedence: innermost specific text first, generic texts last


def test_openrouter_preamble_alone_is_the_generic_rule():
    raw = fake_chat.OPENROUTER_GEMINI_DETAILS + json.dumps(
        {"error": {"code": 400, "message": "Something else went wrong.", "status": "INVALID_ARGUMENT"}}, indent=2
    )
    diagnosis = classify(400, openrouter_error(raw, "Google"))
    assert facts(diagnosis) == expect("openrouter_reasoning_details", "openrouter", "missing", "reasoning_details")
    assert diagnosis.message == raw.strip()


def test_copilot_bare_text_loses_to_a_specific_one_anywhere_in_the_body():
    body = json.dumps(
        {"error": {"message": "invalid request body", "code": "invalid_request_body", "detail": VERTEX_TEXT}}
    )
    assert classify(400, body).rule == "vertex_signature_missing"


def test_openrouter_wrapper_with_unknown_upstream_text_is_unknown_with_that_text():
    raw = json.dumps({"error": {"message": "The model is overloaded.", "type": "invalid_request_error"}})
    diagnosis = classify(400, openrouter_error(raw, "Moonshot AI"))
    assert facts(diagnosis) == expect("unknown", "moonshot", "unknown", None, wrapped_by="openrouter")
    assert diagnosis.message == "The model is overloaded."
    assert diagnosis.summary == "no known rule matches this HTTP 400 error"


def test_openrouter_wrapper_with_an_unnamed_provider():
    diagnosis = classify(400, openrouter_error("upstream timed out", "Some New Host"))
    assert facts(diagnosis) == expect("unknown", "openrouter", "unknown", None)
    assert diagnosis.message == "upstream timed out"


@pytest.mark.parametrize(
    ("provider_name", "provider"),
    [
        ("Google", "vertex"),
        ("Google Vertex", "vertex"),
        ("Google AI Studio", "gemini"),
        ("Anthropic", "anthropic"),
        ("Amazon Bedrock", "bedrock"),
        ("Moonshot AI", "moonshot"),
        ("Z.AI", "zai"),
        ("MiniMax", "minimax"),
        ("Alibaba", "dashscope"),
        ("DeepSeek", "deepseek"),
        ("OpenAI", "openai"),
        ("Azure", "azure"),
    ],
)
def test_openrouter_names_the_upstream_of_a_text_no_rule_knows(provider_name: str, provider: str) -> None:
    diagnosis = classify(400, openrouter_error("upstream said no", provider_name))
    assert facts(diagnosis) == expect("unknown", provider, "unknown", None, wrapped_by="openrouter")


# --------------------------------------------------------------------------------------
# error_messages


def test_error_messages_of_openrouter_wrapper_innermost_last():
    inner = fake_chat.VERTEX_MISSING_SIGNATURE.format(name="list_dir", block=2)
    raw = fake_chat.OPENROUTER_GEMINI_DETAILS + json.dumps(
        {"error": {"code": 400, "message": inner, "status": "INVALID_ARGUMENT"}}, indent=2
    )
    assert error_messages(openrouter_error(raw, "Google")) == ["Provider returned error", raw, inner]


def test_error_messages_of_gemini_array_and_duplicate_errors_list():
    body = json.dumps(
        [
            {
                "error": {
                    "code": 400,
                    "message": GEMINI_TEXT,
                    "errors": [{"message": GEMINI_TEXT, "domain": "global", "reason": "badRequest"}],
                    "status": "INVALID_ARGUMENT",
                }
            }
        ]
    )
    assert error_messages(body.encode()) == [GEMINI_TEXT]


def test_error_messages_of_message_that_is_json():
    body = google_error(anthropic_error(ANTHROPIC_SIGNATURE))
    assert error_messages(body) == [anthropic_error(ANTHROPIC_SIGNATURE), ANTHROPIC_SIGNATURE]


def test_error_messages_of_non_json_is_the_text():
    assert error_messages(b"<html><body>502 Bad Gateway</body></html>\n") == [
        "<html><body>502 Bad Gateway</body></html>"
    ]


def test_error_messages_of_json_after_a_prefix():
    body = "API Error: 400 " + anthropic_error(ANTHROPIC_SIGNATURE) + " (retrying)"
    assert error_messages(body) == [body, ANTHROPIC_SIGNATURE]


@pytest.mark.parametrize("body", [b"", "", b"   ", "{}", "[]", "null", "42", '{"error": null}', '{"error": {}}'])
def test_error_messages_of_bodies_without_text(body):
    assert error_messages(body) == []


# --------------------------------------------------------------------------------------
# garbage in, "unknown" out, never an exception


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b"", "", id="empty-bytes"),
        pytest.param("", "", id="empty-text"),
        pytest.param(b"\xff\xfe\x00garbage\x80", "\ufffd\ufffd\x00garbage\ufffd", id="invalid-utf8"),
        pytest.param("<html>502 Bad Gateway</html>", "<html>502 Bad Gateway</html>", id="html"),
        pytest.param('{"foo": 1}', '{"foo": 1}', id="json-without-error"),
        pytest.param('{"error": {"message": "Rate limit', '{"error": {"message": "Rate limit', id="truncated-json"),
        pytest.param("[" * 200_000 + "]" * 200_000, ("[" * 200_000)[:MAX_MESSAGE], id="deeply-nested"),
        pytest.param('"just a string"', "just a string", id="json-string"),
    ],
)
def test_unknown_bodies(body, message):
    diagnosis = classify(400, body)
    assert facts(diagnosis) == expect("unknown", "unknown", "unknown", None)
    assert diagnosis.message == message


@pytest.mark.parametrize("body", [None, 42, object(), ["x"], bytearray(b'{"error":{"message":"x"}}')])
def test_wrong_types_never_raise(body):
    assert classify(400, body).rule == "unknown"
    assert isinstance(error_messages(body), list)


def test_truncated_body_still_classified_from_its_text():
    body = google_error(VERTEX_TEXT)[:-40]
    diagnosis = classify(400, body)
    assert (diagnosis.rule, diagnosis.index, diagnosis.position, diagnosis.function) == (
        "vertex_signature_missing",
        2,
        3,
        "read_file",
    )


def test_huge_body_is_scanned_only_in_part():
    filler = "x" * 2_000_000
    diagnosis = classify(400, json.dumps({"error": {"message": filler + VERTEX_TEXT}}))
    assert diagnosis.rule == "unknown"
    assert len(diagnosis.message) == MAX_MESSAGE


def test_long_known_message_is_cut():
    text = VERTEX_TEXT + " " + "y" * 5000
    diagnosis = classify(400, google_error(text))
    assert diagnosis.rule == "vertex_signature_missing"
    assert diagnosis.message == text[:MAX_MESSAGE]


def test_unknown_names_the_provider_only_as_the_envelope_says():
    assert classify(400, anthropic_error("max_tokens: too large")).provider == "anthropic"
    assert classify(400, google_error("Request contains an invalid argument.")).provider == "gemini"
    assert classify(400, copilot_error("something new")).provider == "copilot"
    assert classify(502, '{"error":{"message":"Provider returned error","code":502}}').provider == "openrouter"
    assert classify(400, openai_error("Unsupported parameter: 'foo'.")).provider == "unknown"


def test_sse_framed_error():
    body = "event: error\ndata: " + anthropic_error(ANTHROPIC_SIGNATURE) + "\n\n"
    diagnosis = classify(400, body)
    assert facts(diagnosis) == expect(
        "anthropic_signature_invalid", "anthropic", "invalid", "signature", index=1, block=0
    )
    assert diagnosis.message == ANTHROPIC_SIGNATURE


# --------------------------------------------------------------------------------------
# credentials never reach the message

OPENAI_KEY = planted("sk-proj-", "AbCdEfGh12345678IjKlMnOp")
GOOGLE_KEY = planted("AIzaSy", "A1234567890abcdefghijklmnopqrstu")
GITHUB_TOKEN = planted("ghu_", "abcdefghijklmnopqrstuvwxyz0123")


@pytest.mark.parametrize(
    ("body", "secret", "rule"),
    [
        pytest.param(
            openai_error(f"Incorrect API key provided: {OPENAI_KEY}. You can find your API key at ..."),
            OPENAI_KEY,
            "unknown",
            id="openai-key",
        ),
        pytest.param(
            f"upstream said 401 for Authorization: Bearer {GITHUB_TOKEN}",
            GITHUB_TOKEN,
            "unknown",
            id="bearer-token-plain-text",
        ),
        pytest.param(
            google_error(
                VERTEX_TEXT + f" (request https://aiplatform.googleapis.com/v1/x:generateContent?key={GOOGLE_KEY})"
            ),
            GOOGLE_KEY,
            "vertex_signature_missing",
            id="google-key-in-known-text",
        ),
        pytest.param(
            openrouter_error(
                json.dumps({"error": {"message": f"bad x-api-key: {OPENAI_KEY}", "type": "authentication_error"}}),
                "Anthropic",
            ),
            OPENAI_KEY,
            "unknown",
            id="key-inside-openrouter-raw",
        ),
    ],
)
def test_credentials_are_redacted(body, secret, rule):
    diagnosis = classify(400, body)
    assert diagnosis.rule == rule
    assert secret not in diagnosis.model_dump_json()
    assert REDACTED in diagnosis.message


# --------------------------------------------------------------------------------------
# every rule a format's static check names is a rule the diagnosis knows


def _check_rule_ids_in_source() -> set[str]:
    """The rule ids the `Violation(rule=…)` calls of addon/wire name, by the diagnosis constants the source uses
    there: a constant (or a choice of constants), or the first element of each tuple a `*_rule` function of the
    module returns. A rule id written out as a literal fails: each is defined once, with its diagnosis rules."""
    found: set[str] = set()
    folder = Path(formats.__file__).parent
    for source in sorted(folder.rglob("*.py")):
        parts = [part for part in source.relative_to(folder).with_suffix("").parts if part != "__init__"]
        module = importlib.import_module(".".join([formats.__name__, *parts]))
        tree = ast.parse(source.read_text())
        pickers = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name.endswith("_rule")]
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "Violation"):
                continue
            (value,) = [keyword.value for keyword in call.keywords if keyword.arg == "rule"]
            written = [n for n in ast.walk(value) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            assert not written, f"{source.name}:{call.lineno}: a rule id written out"
            if isinstance(value, ast.Attribute) and value.attr == "rule":  # a dialect's ChatSignature
                found |= {sig.rule for d in dialects.DIALECTS if (sig := d.chat_signature("gemini-3-pro-preview"))}
                continue
            if isinstance(value, ast.Attribute) and value.attr in base.MessagesThinking._fields:  # a dialect's rules
                found |= {getattr(r, value.attr) for d in dialects.DIALECTS if (r := d.messages_thinking("deepseek-"))}
                continue
            names = {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and n.id.isupper()}
            if not names:
                assert pickers, f"{source.name}:{call.lineno}: a rule id this test cannot follow"
                picked = [
                    node.value.elts[0]
                    for picker in pickers
                    for node in ast.walk(picker)
                    if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple)
                ]
                assert all(isinstance(n, ast.Name) for n in picked), f"{source.name}: a rule id written out"
                names = {n.id for n in picked}
            found |= {getattr(module, name) for name in names}
    return found


def _check_rule_ids_run() -> set[str]:
    """The rule ids the formats' checks give for requests that break every rule they know."""

    def run(name: str, doc: dict, path: str, model: str | None = None, host: str = "") -> set[str]:
        return {v.rule for v in by_name(name).check(doc, RepairContext(path=path, model=model, host=host))}

    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    chat = {
        "messages": [
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": [], "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c9", "content": "a"},
        ]
    }
    answered = {"role": "assistant", "content": "Two files.", "reasoning_content": "From DeepSeek."}
    with_reasoning_content = {"messages": [{"role": "user", "content": "u"}, answered]}  # to Mistral
    gemini = {
        "contents": [
            {"role": "user", "parts": [{"text": "u"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]},
        ]
    }
    anthropic = {
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}]},
        ],
    }
    responses = {"input": [{"type": "reasoning", "id": "rs_1", "summary": []}]}
    xai = {"input": [{"type": "reasoning", "id": "rs_1", "encrypted_content": "x"}, {"role": "assistant"}]}
    redacted = {"type": "redacted_thinking", "data": "EtkE"}
    use = {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}
    deepseek_anthropic = {  # thinking on by default there: a turn without its thinking, and a block it cannot read
        "messages": [
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"}]},
            {"role": "assistant", "content": [redacted, {"type": "text", "text": "Two files."}]},
        ],
    }
    converse = {
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
        "messages": [
            {"role": "user", "content": [{"text": "u"}]},
            {"role": "assistant", "content": [{"reasoningContent": {"reasoningText": {"text": "t"}}}]},
            {"role": "user", "content": [{"text": "v"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_1", "name": "ls", "input": {}}}]},
        ],
    }
    gemini_path = "models/gemini-3-pro-preview:generateContent"
    return (
        run("chat_completions", chat, "/v1/chat/completions", "deepseek-reasoner")
        | run("chat_completions", with_reasoning_content, "/v1/chat/completions", "magistral-medium-latest")
        | run("chat_completions", chat, "/chat/completions", "gemini-3-pro-preview", "api.githubcopilot.com")
        | run("chat_completions", chat, "/v1beta/openai/chat/completions", "gemini-3-pro-preview")
        | run("chat_completions", chat, "/api/v1/chat/completions", "google/gemini-3-pro-preview")
        | run("gemini_native", gemini, f"/v1beta/{gemini_path}")
        | run("gemini_native", gemini, f"/v1/projects/p/locations/global/publishers/google/{gemini_path}")
        | run("anthropic_messages", anthropic, "/v1/messages")
        | run("anthropic_messages", deepseek_anthropic, "/anthropic/v1/messages", "deepseek-v4-pro")
        | run("openai_responses", responses, "/v1/responses")
        | run("openai_responses", xai, "/v1/responses", "grok-4")
        | run("bedrock_converse", converse, "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse")
    )


# The rules only a provider's error names: the request alone does not show them broken (a value altered or issued
# elsewhere, a schema, state the server holds), or no format's check looks for them yet.
ERROR_ONLY_RULES = {
    gemini.SIGNATURE_NOT_BASE64,
    gemini.SIGNATURE_INVALID,
    gemini.GEMINI_TURN_ORDER,
    gemini.GEMINI_FUNCTION_RESPONSE_COUNT,
    openai.RESPONSES_REASONING_MISSING,
    openai.RESPONSES_DUPLICATE_ITEM,
    openai.RESPONSES_ITEM_NOT_FOUND,
    openai.RESPONSES_PREVIOUS_RESPONSE_NOT_FOUND,
    openai.RESPONSES_ENCRYPTED_CONTENT_INVALID,
    base.TOOL_RESULT_MISSING,
    base.ENCRYPTED_CONTENT_FOREIGN,
    anthropic.ANTHROPIC_BLOCK_BINDING,
    anthropic.ANTHROPIC_BLOCK_BINDING_BETA,
    anthropic.ANTHROPIC_SIGNATURE_INVALID,
    anthropic.ANTHROPIC_REDACTED_DATA_INVALID,
    anthropic.ANTHROPIC_THINKING_MODIFIED,
    anthropic.CONTENT_EMPTY,
    bedrock.REASONING_TEXT_UNSUPPORTED,
    bedrock.SIGV4_SIGNATURE_MISMATCH,
    gateways.THINKING_BLOCKS_NOT_PERMITTED,
    copilot.COPILOT_SCHEMA,
    copilot.UNSUPPORTED_API_FOR_MODEL,
    copilot.REASONING_EFFORT_UNSUPPORTED,
    copilot.COPILOT_INVALID_REQUEST_BODY,
    cerebras.REASONING_CONTENT_UNSUPPORTED,
    zai.ZAI_MESSAGES_ILLEGAL,
    kimi_anthropic.THINKING_ONLY_ENABLED,
    deepseek.DEEPSEEK_REASONING_TEXT_MISSING,
}


def test_every_rule_a_format_check_names_has_a_diagnosis_rule():
    in_source = _check_rule_ids_in_source()
    assert in_source == _check_rule_ids_run()  # the crafted requests reach every rule the source names
    assert sorted(in_source - RULES.keys()) == []
    # Every other rule is one only errors name, each by choice.
    assert RULES.keys() - in_source == ERROR_ONLY_RULES


def test_a_rule_id_keeps_one_kind_whichever_text_it_matches():
    kinds: dict[str, set[str]] = {}
    for rule in RULE_TABLE:
        kinds.setdefault(rule.rule, set()).add(rule.kind)
    assert {rule: kind for rule, kind in kinds.items() if len(kind) > 1} == {}
