"""Which credential a request belongs to: the scope its reasoning is kept and found in."""

from __future__ import annotations

import pytest
from llm_reasoning_proxy.redact import is_credential_header
from llm_reasoning_proxy.scope import ANONYMOUS, request_scope
from mitmproxy import http
from mitmproxy.test import tutils


def request(*headers: tuple[str, str], query: str = "") -> http.Request:
    fields = [(name.encode(), value.encode()) for name, value in headers]
    return tutils.treq(
        host="gateway.example", port=443, path=f"/v1/chat/completions{query}".encode(), headers=http.Headers(fields)
    )


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "x-litellm-api-key",
        "cf-aig-authorization",
        "x-portkey-api-key",
        "helicone-auth",
        "ocp-apim-subscription-key",
        "x-my-gateway-token",
        "x-client-secret",
        "x-vendor-credential",
    ],
)
def test_a_header_that_carries_a_credential_decides_the_scope(name: str) -> None:
    a = request((name, "tenant-a"), ("content-type", "application/json"))
    b = request((name, "tenant-b"), ("content-type", "application/json"))
    assert is_credential_header(name)
    assert request_scope(a) != request_scope(b)
    assert not request_scope(a).anonymous
    assert request_scope(a) == request_scope(request((name, "tenant-a"), ("x-request-id", "other")))


@pytest.mark.parametrize("name", ["idempotency-key", "x-stainless-retry-count", "x-request-id", "anthropic-version"])
def test_headers_that_identify_nobody_do_not_split_the_scope(name: str) -> None:
    a = request(("authorization", "Bearer same"), (name, "one"))
    b = request(("authorization", "Bearer same"), (name, "two"))
    assert request_scope(a) == request_scope(b)


def test_cookies_count_only_when_nothing_else_identifies_the_caller() -> None:
    assert request_scope(request(("cookie", "session=a"))) != request_scope(request(("cookie", "session=b")))
    keyed = request_scope(request(("x-api-key", "k"), ("cookie", "session=a")))
    assert keyed == request_scope(request(("x-api-key", "k"), ("cookie", "session=b")))


def test_secret_query_parameters_decide_the_scope() -> None:
    assert request_scope(request(query="?key=a&alt=sse")) != request_scope(request(query="?key=b&alt=sse"))
    assert request_scope(request(query="?alt=sse")).credential == ANONYMOUS


def test_headers_named_by_the_user_count_too() -> None:
    also = frozenset({"x-team-id"})
    a, b = request(("x-team-id", "red")), request(("x-team-id", "blue"))
    assert request_scope(a) == request_scope(b)  # not a credential by its name...
    assert request_scope(a, also) != request_scope(b, also)  # ...unless the user says so


def test_no_credential_is_the_anonymous_scope() -> None:
    scope = request_scope(request(("content-type", "application/json")))
    assert scope.anonymous and str(scope) == "gateway.example:443|anonymous"


@pytest.mark.parametrize("name", ["x-portkey-trace-id", "x-max-tokens", "x-keyboard-layout", "monkey"])
def test_a_header_is_a_credential_by_its_words_not_by_letters_inside_them(name: str) -> None:
    assert not is_credential_header(name)
    a, b = (
        request(("authorization", "Bearer same"), (name, "one")),
        request(("authorization", "Bearer same"), (name, "two")),
    )
    assert request_scope(a) == request_scope(b)


@pytest.mark.parametrize("param", ["subscription-key", "access-token", "accessToken", "password", "client_secret"])
def test_secret_query_parameters_of_gateways_keep_tenants_apart(param: str) -> None:
    a, b = request(query=f"?{param}=tenant-a"), request(query=f"?{param}=tenant-b")
    assert request_scope(a) != request_scope(b) and not request_scope(a).anonymous
