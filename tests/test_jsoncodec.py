"""JSON in and out: what a repaired request keeps of the client's text, and what is refused."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st
from llm_reasoning_proxy.shared import jsoncodec
from llm_reasoning_proxy.shared.jsoncodec import ExactNumber, NotWritable

AWKWARD = [
    b"123456789012345678901234567890",  # wider than 64 bits: orjson reads it as a float
    b"-9223372036854775809",
    b"18446744073709551616",
    b"1e400",  # infinity
    b"-1e400",
    b"1.50",
    b"1E5",
    b"1e-07",
    b"-0",
    b"0.1000000000000000055511151231257827",
    b"2.5e+300",  # written 2.5e300 by the encoder
]


@pytest.mark.parametrize("token", AWKWARD)
def test_a_number_that_would_change_is_written_back_as_it_came(token: bytes) -> None:
    body = b'{"model":"m","x":[' + token + b',1,0.5,"a: 1.50"],"y":{"z":' + token + b"}}"
    doc = jsoncodec.loads_exact(body)
    # Kept as its text, or read as an integer of any width; the rest as it was.
    assert isinstance(doc["x"][0], (ExactNumber, int))
    assert jsoncodec.dumps_request(doc["x"][1:]) == b'[1,0.5,"a: 1.50"]'

    doc["added"] = None  # as a repair changes something elsewhere in the body
    assert jsoncodec.dumps_request(doc) == body[:-1] + b',"added":null}'
    assert copy.deepcopy(doc) == doc  # the offline check works on a copy


def test_numbers_orjson_writes_back_exactly_take_the_fast_path() -> None:
    body = b'{"temperature":0.7,"n":1,"big":18446744073709551615,"neg":-9223372036854775808,"f":1.0,"s":"1.50"}'
    doc = jsoncodec.loads_exact(body)
    assert not any(isinstance(value, ExactNumber) for value in doc.values())
    assert jsoncodec.dumps_request(doc) == body


def test_nan_and_infinity_spelled_out_are_kept() -> None:
    body = b'{"a":NaN,"b":-Infinity}'
    assert jsoncodec.dumps_request(jsoncodec.loads_exact(body)) == body


def test_a_body_that_cannot_be_written_back_exactly_is_refused() -> None:
    doc = jsoncodec.loads_exact(b'{"a":1e400,"b":"\\ud800"}')  # a lone surrogate sends orjson to the stdlib
    with pytest.raises(NotWritable):
        jsoncodec.dumps_request(doc)


def test_json_nested_too_deep_is_not_json_to_the_proxy() -> None:
    body = b"[" * 20000 + b"]" * 20000  # too deep for every supported Python (3.13 follows 5,000)
    for parse in (jsoncodec.loads, jsoncodec.loads_exact):
        with pytest.raises(ValueError, match="nested too deeply"):
            parse(body)


_digits = st.text("0123456789", min_size=1, max_size=40)
number_token = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.builds(lambda sign, whole, frac: f"{sign}{int(whole)}.{frac}", st.sampled_from(["", "-"]), _digits, _digits),
    st.builds(
        lambda whole, frac, e, sign, exp: f"{int(whole)}{'.' + frac if frac else ''}{e}{sign}{int(exp)}",
        _digits,
        st.one_of(st.just(""), _digits),
        st.sampled_from("eE"),
        st.sampled_from(["", "+", "-"]),
        st.text("0123456789", min_size=1, max_size=4),
    ),
    st.sampled_from(["-0", "0", "-0.0", "NaN", "Infinity", "-Infinity"]),
)


@given(st.lists(number_token, min_size=1, max_size=8))
def test_every_number_comes_back_as_it_was_written(tokens: list[str]) -> None:
    body = ('{"messages":[' + ",".join(tokens) + '],"tail":"x"}').encode()
    doc = jsoncodec.loads_exact(body)
    doc["tail"] = "y"  # a change elsewhere forces the body to be written again
    assert jsoncodec.dumps_request(doc) == body.replace(b'"tail":"x"', b'"tail":"y"')


@pytest.mark.parametrize(
    "body",
    [b'{"a":' + b" " * 70 + b"-0}", b"[1," + b"\n" * 65 + b"-0]", b"-0", b'{"n":' + b"9" * 5000 + b',"m":"x"}'],
)
def test_numbers_the_review_found_changing_come_back_as_written(body: bytes) -> None:
    assert jsoncodec.dumps_request(jsoncodec.loads_exact(body)).replace(b" ", b"").replace(b"\n", b"") == (
        body.replace(b" ", b"").replace(b"\n", b"")
    )


def test_a_body_with_a_lone_surrogate_and_a_float_is_not_written_back_with_other_spellings() -> None:
    doc = jsoncodec.loads_exact(b'["\\ud800",1e16,1e-7]')
    with pytest.raises(NotWritable):  # the standard library would write 1e+16 and 1e-07: the repair is declined
        jsoncodec.dumps_request(doc)


def test_arguments_read_exactly_have_the_digest_of_those_an_answer_gave() -> None:
    """A request is read keeping each number as written (1.50, 1e5); the captured call's arguments were read as
    floats. Both must give one digest, or a call is not found by its name and arguments."""
    from llm_reasoning_proxy.shared.records import arguments_digest

    written = b'{"ratio": 1.50, "size": 1e5, "n": 3}'
    assert arguments_digest(jsoncodec.loads_exact(written)) == arguments_digest(jsoncodec.loads(written))


def test_pretty_indents_by_two_keeps_key_order_and_ends_in_a_line_break() -> None:
    assert jsoncodec.pretty({"b": 1, "a": ["é"]}) == '{\n  "b": 1,\n  "a": [\n    "é"\n  ]\n}\n'.encode()


@pytest.mark.parametrize("value", ["\ud800", 2**70], ids=["lone surrogate", "wide integer"])
def test_pretty_writes_what_orjson_refuses_with_the_standard_library(value: object) -> None:
    written = jsoncodec.pretty({"b": value, "a": 1})
    assert written.endswith(b"}\n") and written.count(b"\n  ") == 2
    assert jsoncodec.loads(written) == {"b": value, "a": 1}


@pytest.mark.parametrize(
    "value",
    [
        b"gpt-5",
        b"claude sonnet",
        "mod\u00e8le".encode(),
        "\u00a0".encode(),  # printable to JSON, not to Python
        "a\u2028b".encode(),
        b"a\x7fb",
        b"a\x01b",  # a control character: JSON refuses it unescaped
        b"a\tb",
        b"\xed\xa0\x80",  # a lone surrogate, as UTF-8 cannot hold it
        b"\xff\xfe",  # not UTF-8
        b"",
        rb"caf\u00e9",
        rb"a\"b",
    ],
)
def test_the_model_read_without_a_parse_is_the_one_a_parse_reads(value: bytes) -> None:
    body = b'{"model": "' + value + b'", "messages": []}'
    try:
        parsed = jsoncodec.loads(body)["model"]
    except ValueError:
        parsed = None
    assert jsoncodec.sniff_model(body) == parsed
