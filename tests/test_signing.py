"""addon/signing.py: which requests a signature over their body forbids the proxy to change."""

from __future__ import annotations

import pytest
from llm_reasoning_proxy.signing import SIGV4, body_signer
from mitmproxy import http
from mitmproxy.test import tutils


@pytest.mark.parametrize(
    "authorization",
    [
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host, "
        "Signature=fe5f80f7",
        "AWS4-ECDSA-P256-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/bedrock/aws4_request, SignedHeaders=host, "
        "Signature=3045022100",  # SigV4a, the multi-region variant
    ],
)
def test_a_sigv4_signed_request_is_recognised(authorization: str) -> None:
    assert body_signer(tutils.treq(headers=http.Headers(authorization=authorization))) == SIGV4


def test_a_bearer_token_signs_no_body() -> None:
    assert body_signer(tutils.treq(headers=http.Headers(authorization="Bearer ABSKQmVkcm9ja0FQSUtleQ"))) is None
