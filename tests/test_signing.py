"""addon/request/signing.py: which requests a signature over their body forbids the proxy to change."""

from __future__ import annotations

import pytest
from llm_reasoning_proxy.request.signing import SIGV4, body_signer
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


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ([(b"Authorization", b"  aws4-hmac-sha256 Credential=x")], b"/model/m/converse"),  # case, leading spaces
        ([(b"authorization", b"Bearer a"), (b"AUTHORIZATION", b"AWS4-HMAC-SHA256 Credential=x")], b"/x"),  # repeated
        ([(b"x-authorization", b"AWS4-HMAC-SHA256 Credential=x")], b"/x"),  # another header's name
        ([(b"authorization", b"\xa0AWS4-HMAC-SHA256 \xff")], b"/x"),  # not UTF-8
        ([], b"/model/m/converse?X-Amz-Signature=abc&X-Amz-Algorithm=AWS4-HMAC-SHA256"),  # presigned
        ([], b"/model/m/converse?x-amz-signature=abc"),
        ([], b"/model/m/converse#?X-Amz-Signature=abc"),  # a fragment, not a query
        ([], b"/model/m/converse?other=X-Amz-Signature"),
    ],
)
def test_a_signer_is_found_as_mitmproxy_reads_headers_and_query(fields: list, path: bytes) -> None:
    request = tutils.treq(path=path, headers=http.Headers(fields))
    by_mitmproxy = any(
        value.lstrip().upper().startswith(("AWS4-HMAC-SHA256", "AWS4-ECDSA-P256-SHA256"))
        for value in request.headers.get_all("authorization")
    ) or any(name.lower() == "x-amz-signature" for name in request.query)
    assert (body_signer(request) == SIGV4) is by_mitmproxy
