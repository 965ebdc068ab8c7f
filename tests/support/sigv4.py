"""AWS Signature Version 4, as a client signs a request and as AWS checks it, for the fake Bedrock and its clients.

Written from AWS's description (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html): a
canonical request (method, path, query, the signed headers, the SHA-256 of the body), a string to sign with the date
and the credential scope, and an HMAC-SHA256 chain from the secret key through the date, region and service. The
signature covers the body: a body changed on the way is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from datetime import datetime, timezone
from urllib.parse import quote, urlsplit

ALGORITHM = "AWS4-HMAC-SHA256"
_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256\s+Credential=(?P<key>[^/]+)/(?P<scope>[^,]+),\s*SignedHeaders=(?P<signed>[^,]+),\s*"
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _canonical_request(
    method: str, path: str, query: str, headers: Mapping[str, str], signed: list[str], body: bytes
) -> str:
    # Every AWS service but S3 encodes the path it was sent once more (botocore quotes it with safe "/~").
    canonical_headers = "".join(f"{name}:{' '.join(headers[name].split())}\n" for name in signed)
    pairs = sorted(part.split("=", 1) if "=" in part else [part, ""] for part in query.split("&") if part)
    canonical_query = "&".join(f"{name}={value}" for name, value in pairs)
    payload = hashlib.sha256(body).hexdigest()
    return "\n".join([method, quote(path, safe="/~"), canonical_query, canonical_headers, ";".join(signed), payload])


def _signature(secret: str, scope: str, amz_date: str, canonical: str) -> str:
    day, region, service, _ = scope.split("/")
    string_to_sign = "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret}".encode(), day), region), service), "aws4_request")
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()


def sign(
    method: str,
    url: str,
    body: bytes,
    *,
    key_id: str,
    secret: str,
    region: str = "us-east-1",
    service: str = "bedrock",
    headers: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The headers a request to `url` is sent with, signed: the given ones, host, x-amz-date, x-amz-content-sha256
    and authorization."""
    parts = urlsplit(url)
    amz_date = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    signed_headers = {name.lower(): value for name, value in (headers or {}).items()}
    signed_headers |= {
        "host": parts.netloc,
        "x-amz-date": amz_date,
        "x-amz-content-sha256": hashlib.sha256(body).hexdigest(),
    }
    names = sorted(signed_headers)
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    canonical = _canonical_request(method, parts.path, parts.query, signed_headers, names, body)
    signature = _signature(secret, scope, amz_date, canonical)
    authorization = f"{ALGORITHM} Credential={key_id}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"
    return {**signed_headers, "authorization": authorization}


def verify(method: str, target: str, headers: Mapping[str, str], body: bytes, secrets: Mapping[str, str]) -> bool:
    """Whether a received request carries a valid signature by one of `secrets` (access key id -> secret key) over
    the body and the headers it names. `headers` in lower case; `target` the request target (path and query)."""
    match = _AUTHORIZATION.match(headers.get("authorization", ""))
    if match is None or match["key"] not in secrets or "x-amz-date" not in headers:
        return False
    signed = match["signed"].split(";")
    if any(name not in headers for name in signed):
        return False
    path, _, query = target.partition("?")
    canonical = _canonical_request(method, path, query, headers, signed, body)
    expected = _signature(secrets[match["key"]], match["scope"], headers["x-amz-date"], canonical)
    return hmac.compare_digest(expected, match["signature"])
