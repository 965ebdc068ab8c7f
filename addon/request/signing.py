"""Requests whose body a signature covers: the proxy cannot change one without the client's secret.

AWS Signature Version 4 signs a canonical request that ends with the SHA-256 of the body
(https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html), in the `Authorization` header
(`AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`) or in a presigned URL's `X-Amz-Signature`. A body
changed after signing is refused ("The request signature we calculated does not match the signature you provided"),
so such a request is forwarded byte for byte, and the proxy says what it would have repaired. Amazon Bedrock also
takes API keys, sent as `Authorization: Bearer …` (https://docs.aws.amazon.com/bedrock/latest/userguide/api-keys-use.html),
which sign nothing: those requests are repaired as any other.
"""

from __future__ import annotations

from mitmproxy import http

from ..shared.headers import header_values

SIGV4 = "AWS SigV4"
# What a client can do about it, said wherever a signed request is left unrepaired (in words the redactor, which masks
# every "Authorization: Bearer …", leaves alone).
SIGNED_REMEDY = "a Bedrock API key (a bearer token, which signs no body) lets the proxy repair such requests"


def body_signer(request: http.Request) -> str | None:
    """What signs a request's body, for people ("AWS SigV4"); None when nothing does."""
    # Read over the stored fields, and the query only where the path has one: this is asked of every request that
    # is repaired, on its way.
    for value in header_values(request.headers, b"authorization"):
        # SigV4, and SigV4a (multi-region: the same scheme signed with ECDSA)
        if value.lstrip().upper().startswith(("AWS4-HMAC-SHA256", "AWS4-ECDSA-P256-SHA256")):
            return SIGV4
    if b"?" in request.data.path and any(name.lower() == "x-amz-signature" for name in request.query):
        return SIGV4
    return None
