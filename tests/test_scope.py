"""Which credential a request belongs to: the scope its reasoning is kept and found in."""

from __future__ import annotations

import hashlib

import pytest
from llm_reasoning_proxy.shared import redact, scope
from llm_reasoning_proxy.shared.accounts import copilot_account
from llm_reasoning_proxy.shared.redact import is_credential_header
from llm_reasoning_proxy.shared.scope import (
    ANONYMOUS,
    Caller,
    Scope,
    account_fingerprint,
    caller_identity,
    credential_fingerprint,
)
from mitmproxy import http
from mitmproxy.test import tutils

from tests.support.planted import ACCOUNT, MAC, ORG_ACCOUNT, TID, copilot_token, planted
from tests.support.scope import request_scope


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


# --- credentials that rotate ---------------------------------------------------------------------


def refreshed(exp: int, seed: str, **issue: str) -> dict[str, object]:
    """What changes when the client exchanges its token again: exp, the MAC, and the other fields of the issue."""
    return {"exp": exp, "mac": hashlib.sha256(seed.encode()).hexdigest(), "issue": issue or None}


def bearer(token: str) -> http.Request:
    return request(("authorization", f"Bearer {token}"))


def raw_scope(*values: str) -> Scope:
    """The scope as it was before accounts were read: the hash of the raw credential values."""
    return Scope("gateway.example:443", credential_fingerprint(list(values)))


def test_a_refreshed_copilot_token_is_the_same_account() -> None:
    first = bearer(copilot_token())
    again = bearer(copilot_token(**refreshed(1702023650, "second")))
    assert request_scope(first) == request_scope(again)
    assert caller_identity(first).derived and caller_identity(first).rotating is None
    # The scope is not the raw token's: that one ended with each refresh.
    assert request_scope(first) != raw_scope(f"authorization:Bearer {copilot_token()}")


def test_a_refreshed_token_of_todays_layout_is_the_same_account() -> None:
    """Newer tokens carry when (iat) and from where (ip, asn) they were issued, and the quota left (cq, rd)."""
    before = copilot_token(account=ORG_ACCOUNT, **refreshed(1735398336, "a", iat="1735396536", ip="156.59.13.4"))
    after = copilot_token(
        account=ORG_ACCOUNT,
        **refreshed(1735400136, "b", iat="1735398336", ip="2001:db8::7", asn="AS21859", cq="1323", rd="1757721600"),
    )
    assert request_scope(bearer(before)) == request_scope(bearer(after))


def test_the_copilot_account_leaves_out_exp_the_issue_and_the_mac() -> None:
    token = copilot_token(account=ORG_ACCOUNT, issue={"iat": "1735396536", "ip": "156.59.13.4", "asn": "AS21859"})
    account = copilot_account(token)
    assert account is not None
    assert account.split(";") == sorted(f"{k}={v}" for k, v in {"tid": TID, **ORG_ACCOUNT}.items())
    for issued in ("1702022150", "1735396536", "156.59.13.4", "AS21859", MAC):
        assert issued not in account


def test_another_tid_is_another_account() -> None:
    other = "0f4c21d5e9a8b7c6d5e4f3a2b1c0d9e8"
    assert request_scope(bearer(copilot_token())) != request_scope(bearer(copilot_token(tid=other)))


@pytest.mark.parametrize(
    "change",
    [
        {"sku": "copilot_for_business_seat"},
        {"st": "ghe"},
        {"chat": "0"},
        {"8kp": "2"},
        {"proxy-ep": "proxy.business.githubcopilot.com"},  # a field the account did not have
        {"ol": "ea9395b9a9248c05ee6847cbd24355ed"},
        {"rt": None},  # a field the account had
    ],
    ids=lambda change: ",".join(change),
)
def test_any_other_field_is_another_account(change: dict[str, str | None]) -> None:
    account = {name: value for name, value in {**ACCOUNT, **change}.items() if value is not None}
    assert request_scope(bearer(copilot_token())) != request_scope(bearer(copilot_token(account=account)))


def test_the_order_of_the_fields_does_not_matter() -> None:
    shuffled = dict(reversed(list(ACCOUNT.items())))
    assert request_scope(bearer(copilot_token())) == request_scope(bearer(copilot_token(account=shuffled)))


@pytest.mark.parametrize("form", ["bearer {}", "BEARER {}", "Bearer   {}", "Bearer\t{}", "  Bearer {}  "])
def test_the_bearer_scheme_in_any_case_and_spacing_is_the_same_account(form: str) -> None:
    written = request(("Authorization", form.format(copilot_token(**refreshed(1702023650, "other")))))
    assert request_scope(written) == request_scope(bearer(copilot_token()))


COPILOT_LOOKALIKES = {
    "no MAC": lambda: copilot_token().rpartition(":")[0],
    "MAC not hex": lambda: copilot_token(mac="z" * 64),
    "MAC too short": lambda: copilot_token(mac="b78c67b8"),
    "no tid": lambda: copilot_token().replace("tid=", "uid=", 1),
    "tid not hex": lambda: copilot_token(tid="someone-else-entirely"),
    "no exp": lambda: copilot_token().replace(";exp=", ";xp=", 1),
    "exp not a time": lambda: copilot_token().replace(";exp=", ";exp=soon", 1),
    "a field twice": lambda: copilot_token(issue={"sku": "free_educational"}),
    "an empty field": lambda: copilot_token().replace(";st=", ";;st=", 1),
    "a field without =": lambda: copilot_token().replace(";st=dotcom", ";dotcom", 1),
}


@pytest.mark.parametrize("shape", list(COPILOT_LOOKALIKES))
def test_a_token_not_laid_out_as_copilots_keeps_the_scope_of_its_raw_value(shape: str) -> None:
    token = COPILOT_LOOKALIKES[shape]()
    identity = caller_identity(bearer(token))
    assert not identity.derived
    assert request_scope(bearer(token)) == raw_scope(f"authorization:Bearer {token}")
    assert identity.rotating == (
        "a GitHub Copilot token whose fields could not be read" if token.startswith("tid=") else None
    )


def test_a_copilot_token_outside_a_bearer_authorization_is_a_raw_value() -> None:
    for headers in [("authorization", f"token {copilot_token()}"), ("x-api-key", f"Bearer {copilot_token()}")]:
        assert request_scope(request(headers)) == raw_scope(f"{headers[0]}:{headers[1]}")


@pytest.mark.parametrize(
    "headers, query",
    [
        ((("authorization", "Bearer sk-test-0123456789abcdef0123"),), ""),
        ((("x-api-key", "sk-ant-test-0123456789abcdef"),), ""),
        ((("x-goog-api-key", "AIzaTest0123456789abcdef0123456789ab"),), ""),
        ((("api-key", "0123456789abcdef"), ("cookie", "session=a")), ""),
        ((), "?key=AIzaTest0123456789abcdef0123456789ab&alt=sse"),
        ((("cookie", "session=a"),), ""),
    ],
)
def test_a_plain_key_is_its_own_account_as_before(headers: tuple[tuple[str, str], ...], query: str) -> None:
    identity = caller_identity(request(*headers, query=query))
    assert not identity.derived and identity.rotating is None
    values = [f"{name}:{value}" for name, value in headers if name != "cookie" or len(headers) == 1]
    values += [f"?{query[1:].partition('&')[0]}"] if query else []
    assert request_scope(request(*headers, query=query)) == raw_scope(*values)


def test_other_credential_headers_still_count_beside_the_account() -> None:
    also = frozenset({"x-team-id"})
    red = request_scope(request(("authorization", f"Bearer {copilot_token()}"), ("x-team-id", "red")), also)
    later = copilot_token(**refreshed(1702023650, "later"))
    assert red == request_scope(request(("authorization", f"Bearer {later}"), ("x-team-id", "red")), also)
    assert red != request_scope(request(("authorization", f"Bearer {later}"), ("x-team-id", "blue")), also)
    # and cookies still count only when nothing else identifies the caller
    with_cookie = request(("authorization", f"Bearer {later}"), ("cookie", "session=b"), ("x-team-id", "red"))
    assert red == request_scope(with_cookie, also)


def test_an_account_hash_can_never_be_a_raw_credential_hash() -> None:
    """The same text hashed as an account and as a raw credential: two domains, two hashes."""
    token = copilot_token()
    entry = f"authorization=copilot:{copilot_account(token)}"
    assert caller_identity(bearer(token)).values == (entry,)
    assert request_scope(bearer(token)).credential == account_fingerprint([entry])
    assert account_fingerprint([entry]) != credential_fingerprint([entry])
    for values in ([entry], [f"authorization:{entry}"], [f"authorization:Bearer {token}"], ["x"], ["", ""]):
        assert account_fingerprint(values) != credential_fingerprint(values)


@pytest.mark.parametrize(
    "where, kind",
    [
        ("authorization", "a Google OAuth access token (ya29.…)"),
        ("access_token", "a Google OAuth access token (ya29.…)"),
        ("jwt", "a JWT"),
    ],
)
def test_a_rotating_credential_with_nothing_stable_keeps_its_raw_scope_and_says_what_it_is(
    where: str, kind: str
) -> None:
    def sent(n: int) -> http.Request:
        if where == "access_token":
            return request(query=f"?access_token={planted('ya29.', f'a0AfB_token{n}abcdefghijklmnop')}")
        if where == "jwt":
            return bearer(planted("eyJ", f"hbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJl{n}"))
        return bearer(planted("ya29.", f"a0AfB_token{n}abcdefghijklmnop"))

    first, second = caller_identity(sent(1)), caller_identity(sent(2))
    assert first.rotating == kind and not first.derived
    assert request_scope(sent(1)) == raw_scope(*first.values) != request_scope(sent(2))  # as before: it ends
    assert second.rotating == kind


VERTEX = "/v1/projects/my-project/locations/us-central1/publishers/google/models/gemini-3-pro-preview:generateContent"


def test_vertex_ai_with_an_oauth_token_keeps_the_scope_of_the_token() -> None:
    """The project in the path does not tell apart two people using it: the token stays the scope."""

    def vertex(token: str) -> http.Request:
        return tutils.treq(
            host="us-central1-aiplatform.googleapis.com",
            port=443,
            path=VERTEX.encode(),
            headers=http.Headers([(b"authorization", f"Bearer {token}".encode())]),
        )

    one, two = planted("ya29.", "a0AfB_personAabcdefghijklmnop"), planted("ya29.", "a0AfB_personBabcdefghijklmnop")
    assert request_scope(vertex(one)) != request_scope(vertex(two))
    assert request_scope(vertex(one)).credential == credential_fingerprint([f"authorization:Bearer {one}"])
    assert caller_identity(vertex(one)).rotating == "a Google OAuth access token (ya29.…)"


def sigv4_authorization(key_id: str, day: str, signature: str) -> str:
    return (
        f"AWS4-HMAC-SHA256 Credential={key_id}/{day}/us-east-1/bedrock/aws4_request, "
        f"SignedHeaders=content-type;host;x-amz-date, Signature={signature}"
    )


def test_sigv4_requests_of_one_access_key_are_one_account() -> None:
    """SigV4 signs every request anew (another signature, another day's scope): the access key id is what stays."""
    monday = request(("Authorization", sigv4_authorization("AKIAIOSFODNN7EXAMPLE", "20260105", "a" * 64)))
    tuesday = request(("Authorization", sigv4_authorization("AKIAIOSFODNN7EXAMPLE", "20260106", "b" * 64)))
    other = request(("Authorization", sigv4_authorization("AKIAI44QH8DHBEXAMPLE", "20260105", "a" * 64)))
    assert request_scope(monday) == request_scope(tuesday) != request_scope(other)
    assert caller_identity(monday).derived and caller_identity(monday).values == (
        "authorization=sigv4:AKIAIOSFODNN7EXAMPLE",
    )


def test_what_is_remembered_of_credentials_stays_bounded_however_large_or_many_they_are() -> None:
    """Identities are remembered for the next request with the same credentials, but a credential larger than any
    real one is not (a client could make up 256 of 8 MiB each), nor the answer for a header name longer than 64
    characters; each is still read as it always was."""
    scope._remembered_identity.cache_clear()
    redact._remembered_answer.cache_clear()
    big = "k" * (9 * 1024)
    before = scope._remembered_identity.cache_info().currsize
    assert request_scope(request(("x-api-key", big))) == request_scope(request(("x-api-key", big)))
    assert request_scope(request(("x-api-key", big))) != request_scope(request(("x-api-key", big + "2")))
    assert scope._remembered_identity.cache_info().currsize == before
    small = request_scope(request(("x-api-key", "a-key-of-usual-size")))
    assert scope._remembered_identity.cache_info().currsize == before + 1
    assert small == request_scope(request(("x-api-key", "a-key-of-usual-size")))
    names = redact._remembered_answer.cache_info().currsize
    assert is_credential_header("x-" + "very-long-" * 10 + "api-key")
    assert redact._remembered_answer.cache_info().currsize == names


def test_where_credentials_sit_among_header_names_is_remembered_only_for_lists_of_usual_size() -> None:
    """A client sends the same header names request after request; where its credentials sit among them is
    remembered, but not for a list of names longer than any real client sends, which is read as it always was."""
    scope._remembered_places.cache_clear()
    padding = [(f"x-padding-{n}", "v") for n in range(300)]  # over 2 KiB of names
    long_list = request(*padding, ("x-api-key", "k1"))
    assert request_scope(long_list) == request_scope(request(("x-api-key", "k1")))
    assert request_scope(long_list) != request_scope(request(*padding, ("x-api-key", "k2")))
    assert scope._remembered_places.cache_info().currsize == 1  # the short list only
    usual = request(("accept", "*/*"), ("x-api-key", "k1"), ("content-length", "10"))
    assert request_scope(usual) == request_scope(request(("x-api-key", "k1"), ("accept", "*/*")))
    assert request_scope(request(("accept", "*/*"), ("x-api-key", "k2"), ("content-length", "99"))) != (
        request_scope(usual)
    )
    assert scope._remembered_places.cache_info().currsize == 3


def test_credentials_and_header_names_are_remembered_for_what_they_hold_not_their_characters() -> None:
    """Seven hundred credential headers of four characters each (`key: 1`) are 2.8 KB of text but about 140 KB as
    Python holds them, with the Identity made of them: 256 such requests held 35 MB. Neither they nor where they sit
    among the names are remembered; each is read as it always was."""
    scope._remembered_identity.cache_clear()
    scope._remembered_places.cache_clear()
    tiny = [("key", f"{n}") for n in range(700)]
    assert request_scope(request(*tiny)) == request_scope(request(*tiny))
    assert request_scope(request(*tiny)) != request_scope(request(*tiny[:-1], ("key", "other")))
    assert scope._remembered_identity.cache_info().currsize == 0
    assert scope._remembered_places.cache_info().currsize == 0
    usual = request(*[(f"x-stainless-header-{n}", "v") for n in range(20)], ("authorization", "Bearer sk-usual"))
    assert request_scope(usual) == request_scope(request(("authorization", "Bearer sk-usual")))
    assert scope._remembered_identity.cache_info().currsize == 1
    assert scope._remembered_places.cache_info().currsize == 2


@pytest.mark.parametrize(
    "path",
    [
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=k1",
        "/v1/chat/completions?key=a&key=b&KEY=c",
        "/v1/x?key=%20spaced%2Bplus+&empty=&flag",
        "/v1/x?#fragment",
        "/v1/x#frag?key=not-a-query",
        "/v1/x?key=\xe9t\xe9",
        "//double/slash?key=k",
    ],
)
def test_what_is_taken_of_a_request_reads_its_query_as_mitmproxy_does(path: str) -> None:
    request = tutils.treq(host="gateway.example", port=8443, path=path.encode("utf-8", "surrogateescape"))
    assert Caller.of(request).query() == tuple(request.query.items(multi=True))
    assert Caller.of(request).url() == request.url
