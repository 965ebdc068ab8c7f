"""The addon's options: their declarations, and parsing them into typed settings.

Every option is declared as an optional string and parsed here, because
mitmproxy silently unloads a script when it cannot convert a `--set` value to
an option's declared type; parsing ourselves turns that into a clear error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from .redact import display_url

PROJECT = "llm-reasoning-proxy"
# llm_cache values that name a Redis server (addon/cache/redis_store.py) rather than a SQLite file.
REDIS_SCHEMES = ("redis://", "rediss://")


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / PROJECT


@dataclass(frozen=True, slots=True)
class OptionSpec:
    name: str
    default: str | None
    help: str


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "llm_cache",
        str(default_state_dir() / "cache.db"),
        """
        Where reasoning state is kept between a response and the next request:
        a SQLite file path (created owner-only; several proxy processes on
        one machine may share one file), "redis://[:PASSWORD@]HOST:PORT/DB"
        (or rediss:// for TLS) for one cache shared by proxies on many
        machines, or "memory" for a cache that lives only as long as this
        process.
        """,
    ),
    OptionSpec(
        "llm_log",
        None,
        """
        Path of the JSONL event log (captured reasoning, repairs, failures;
        secrets redacted). Unset means "events.jsonl" beside the cache file
        (or in the state directory for a memory cache); an empty value turns
        the log off.
        """,
    ),
    OptionSpec(
        "llm_log_max_size",
        "20MB",
        """
        Size at which the event log is rotated: bytes, or a number with a
        unit (KB, MB, GB), e.g. "50MB". The log becomes <name>.1 (and .1
        becomes .2, up to llm_log_backups files; the oldest is dropped).
        """,
    ),
    OptionSpec(
        "llm_log_backups",
        "2",
        """
        How many rotated event logs are kept beside the current one (0 keeps
        none), so the log never takes more than (backups + 1) x
        llm_log_max_size.
        """,
    ),
    OptionSpec(
        "llm_repair",
        "true",
        """
        "true" repairs requests whose client dropped reasoning state or
        malformed the body; "false" only observes and logs what it would
        repair.
        """,
    ),
    OptionSpec(
        "llm_cache_max_age",
        "7d",
        """
        How long a cache entry stays usable: seconds, or a number with a unit
        (s, m, h, d), e.g. "12h".
        """,
    ),
    OptionSpec(
        "llm_cache_max_entries",
        "100000",
        "Most captured turns the cache keeps (each found by all of its tool call ids); the oldest go first.",
    ),
    OptionSpec(
        "llm_log_opaque",
        "false",
        """
        "true" writes opaque reasoning values (signatures, encrypted reasoning)
        to the event log in full; by default only their length and a short
        hash are logged.
        """,
    ),
    OptionSpec(
        "llm_signature_placeholder",
        "auto",
        """
        What to send when a Gemini 3 request carries a current-turn function
        call without its thought signature and none is cached: "auto" sends
        Google's documented placeholder (skip_thought_signature_validator;
        literal on Vertex AI, base64 on the Gemini API), "off" sends nothing
        (the provider then answers 400), any other value is sent as it is.
        Every use is logged as a degraded repair.
        """,
    ),
    OptionSpec(
        "llm_remove_foreign",
        "true",
        """
        Whether to remove from a request the signed reasoning values (thinking
        block signatures, encrypted reasoning items, thought signatures,
        reasoning_opaque) that the proxy saw issued for another model, host or
        account, as after a model switch mid-conversation: the provider would
        refuse them ("Invalid `signature` in `thinking` block", "Corrupted
        thought signature.", invalid_encrypted_content). A value the proxy
        never saw is never removed. "false" leaves them; each removal is
        logged either way.
        """,
    ),
    OptionSpec(
        "llm_recover",
        "true",
        """
        Whether to let a conversation go on when the reasoning state a
        provider requires cannot be put back (the proxy never saw it, or the
        provider refused it): the request is sent in the closest form the
        provider accepts (thinking off for that request, the refused values
        removed), before sending where the proxy's own check knows the
        request would be refused, or once more after a reasoning-state 4xx.
        That turn loses its reasoning; each time is logged as "recovered".
        "false" sends requests as the client made them, as without it.
        """,
    ),
    OptionSpec(
        "llm_credential_headers",
        "",
        """
        More request headers that carry a credential, comma-separated
        (e.g. "x-team-id,x-gateway-user"). Reasoning is only put back into
        requests with the same credential; besides these, the proxy counts
        Authorization, api-key, x-api-key, x-goog-api-key, the gateways' own
        (x-litellm-api-key, cf-aig-authorization, x-portkey-api-key,
        helicone-auth, ...), any header whose name says auth, key, token,
        secret, password, credential or signature, secret query parameters
        (key=, ...), and cookies when nothing else identifies the caller.
        """,
    ),
    OptionSpec(
        "llm_anonymous_fallback",
        "false",
        """
        "true" lets requests that carry no credential at all be repaired by
        function name and arguments when their tool call id is unknown. Off
        by default: every caller without a credential shares one scope, so
        one caller's identical call (list_directory(".")) could receive
        another's reasoning. Matching by tool call id is always on.
        """,
    ),
    OptionSpec(
        "llm_keep_bodies",
        "auto",
        """
        Whether streamed LLM responses get a copy of their body re-attached
        after streaming, so that -w flow files, HAR files and mitmweb show it.
        "auto" keeps bodies when a flow file or HAR is being written or a UI
        keeps flows; "true" always; "false" never (least memory). With
        mitmproxy 12's store_streamed_bodies on, mitmproxy keeps them itself.
        """,
    ),
    OptionSpec(
        "llm_metrics",
        "",
        """
        HOST:PORT on which to serve Prometheus metrics at /metrics (exchanges,
        repairs, recoveries, diagnosed 4xx, cache hits and size, the addon's
        own time), e.g. "127.0.0.1:9464". Empty (the default) serves none.
        """,
    ),
    OptionSpec(
        "llm_otel",
        "",
        """
        An OpenTelemetry collector's OTLP/HTTP URL to send a GenAI span of
        each LLM exchange to, e.g. "http://127.0.0.1:4318" (a collector) or
        "http://127.0.0.1:6006" (Phoenix); /v1/traces is added unless the URL
        ends with it. OTEL_EXPORTER_OTLP_HEADERS gives the collector's
        credentials. Empty (the default) sends none.
        """,
    ),
    OptionSpec(
        "llm_otel_content",
        "false",
        """
        "true" puts each exchange's messages (instructions, input, output,
        reasoning text, tool calls and results) on its span, masked like the
        event log; signatures and encrypted reasoning never, only their
        length and hash. Off by default, as OpenTelemetry's conventions advise.
        """,
    ),
)
OPTION_NAMES = frozenset(spec.name for spec in OPTIONS)
# The one place each default is written is OPTIONS: the parsers and the Settings model take theirs from here.
OPTION_DEFAULTS: Mapping[str, str | None] = MappingProxyType({spec.name: spec.default for spec in OPTIONS})


def _default(name: str) -> str:
    """The default of an option that has one (all but llm_log, whose default depends on llm_cache)."""
    default = OPTION_DEFAULTS[name]
    assert default is not None, name
    return default


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_bool(name: str, value: str | None) -> bool:
    if value is None:  # a bare `--set llm_repair` means true, as for mitmproxy's own flags
        return True
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"{name}: expected true or false, got {value!r}")


def parse_duration(name: str, value: str | None) -> float:
    match = _DURATION.match(value or "")
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"{name}: expected a positive duration such as 3600, 30m, 12h or 7d, got {value!r}")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


_SIZE = re.compile(r"^\s*(\d+)\s*(b|kb|mb|gb|k|m|g)?\s*$", re.IGNORECASE)
_UNIT_BYTES = {"b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3}


def parse_size(name: str, value: str | None) -> int:
    match = _SIZE.match(_default(name) if value is None else value)
    size = int(match.group(1)) * _UNIT_BYTES[(match.group(2) or "b").lower()] if match else 0
    if size < 4096:
        raise ValueError(f"{name}: expected a size of at least 4KB, such as 20MB, 512KB or 1GB, got {value!r}")
    return size


def parse_backups(value: str | None) -> int:
    text = _default("llm_log_backups") if value is None else value.strip()
    if not text.isdigit():
        raise ValueError(f"llm_log_backups: expected a whole number (0 or more), got {value!r}")
    return int(text)


def parse_count(name: str, value: str | None) -> int:
    try:
        count = int((value or "").strip())
    except ValueError:
        count = 0
    if count < 1:
        raise ValueError(f"{name}: expected a whole number of at least 1, got {value!r}")
    return count


def parse_cache(value: str | None) -> str:
    expected = 'expected a SQLite file path, a redis:// URL or "memory"'
    if value is None or not value.strip():
        raise ValueError(f"llm_cache: {expected}")
    value = value.strip()
    if value == "memory":
        return value
    if value.startswith(REDIS_SCHEMES):
        return parse_redis_url(value)
    if "://" in value:
        raise ValueError(f"llm_cache: unsupported cache {display_url(value)!r}; {expected}")
    path = Path(value).expanduser().absolute()
    if path.is_dir():
        raise ValueError(f"llm_cache: {path} is a directory; give a file path such as {path / 'cache.db'}")
    return str(path)


def parse_redis_url(value: str) -> str:
    shown = display_url(value)
    try:
        url = urlsplit(value)
        url.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as e:
        raise ValueError(f"llm_cache: {shown} is not a usable Redis URL: {e}") from e
    if not url.hostname:
        raise ValueError(f"llm_cache: {shown} names no host; expected redis://HOST:PORT/DB")
    database = url.path.strip("/")
    if database and not database.isdigit():
        raise ValueError(f"llm_cache: {shown}: the database must be a number, as in redis://HOST:PORT/0")
    return value


def parse_log(value: str | None, cache: str) -> Path | None:
    if value is None:
        on_disk = cache != "memory" and not cache.startswith(REDIS_SCHEMES)
        folder = Path(cache).parent if on_disk else default_state_dir()
        return folder / "events.jsonl"
    if not value.strip():
        return None
    path = Path(value.strip()).expanduser().absolute()
    if path.is_dir():
        raise ValueError(f"llm_log: {path} is a directory; give a file path")
    return path


def parse_keep_bodies(value: str | None) -> Literal["auto", "true", "false"]:
    lowered = (value or _default("llm_keep_bodies")).strip().lower()
    if lowered == "auto":
        return "auto"
    return "true" if parse_bool("llm_keep_bodies", lowered) else "false"


def parse_placeholder(value: str | None) -> str:
    value = (_default("llm_signature_placeholder") if value is None else value).strip()
    lowered = value.lower()
    if lowered in ("auto", "on", "true"):
        return "auto"
    if lowered in ("off", "false", "no", ""):
        return "off"
    return value


def parse_listen_address(name: str, value: str | None) -> tuple[str, int] | None:
    """HOST:PORT ([::1]:PORT for IPv6) to listen on, or None for an empty value."""
    text = (value or "").strip()
    if not text:
        return None
    host, _, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c in host for c in "/[] "):
        raise ValueError(f"{name}: expected HOST:PORT such as 127.0.0.1:9464, got {value!r}")
    return host, int(port)


OTLP_TRACES_PATH = "/v1/traces"


def parse_otlp_endpoint(name: str, value: str | None) -> str | None:
    """An OTLP/HTTP collector's URL, with /v1/traces added unless it ends with it; None for an empty value."""
    text = (value or "").strip()
    if not text:
        return None
    parts = urlsplit(text)
    if parts.scheme in ("grpc", "grpcs"):
        raise ValueError(
            f"{name}: OTLP over gRPC is not supported; give the collector's OTLP/HTTP URL (port 4318 by convention, "
            f"Phoenix's is its web port, 6006), got {display_url(text)!r}"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"{name}: expected an http:// or https:// URL such as http://127.0.0.1:4318, got {display_url(text)!r}"
        )
    try:
        parts.port  # noqa: B018 - raises for a port out of range
    except ValueError as e:
        raise ValueError(f"{name}: {e} in {display_url(text)!r}") from e
    path = parts.path.rstrip("/")
    if not path.endswith(OTLP_TRACES_PATH):
        path += OTLP_TRACES_PATH
    return parts._replace(path=path).geturl()


_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def parse_header_names(name: str, value: str | None) -> frozenset[str]:
    names = [part.strip() for part in (value or "").split(",") if part.strip()]
    bad = [part for part in names if not _HEADER_NAME.match(part)]
    if bad:
        raise ValueError(f"{name}: {', '.join(map(repr, bad))} is not a header name; expected names such as x-team-key")
    return frozenset(part.lower() for part in names)


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    cache: str  # "memory", an absolute file path, or a redis:// URL
    log: Path | None
    log_max_bytes: int = parse_size("llm_log_max_size", _default("llm_log_max_size"))
    log_backups: int = parse_backups(_default("llm_log_backups"))
    repair: bool
    cache_max_age: float
    cache_max_entries: int
    log_opaque: bool
    keep_bodies: Literal["auto", "true", "false"]
    signature_placeholder: str = parse_placeholder(_default("llm_signature_placeholder"))
    # Lower case, beyond those the proxy knows.
    credential_headers: frozenset[str] = parse_header_names(
        "llm_credential_headers", _default("llm_credential_headers")
    )
    anonymous_fallback: bool = parse_bool("llm_anonymous_fallback", _default("llm_anonymous_fallback"))
    remove_foreign: bool = parse_bool("llm_remove_foreign", _default("llm_remove_foreign"))
    recover: bool = parse_bool("llm_recover", _default("llm_recover"))
    metrics: tuple[str, int] | None = None  # where /metrics is served; None: nowhere
    otel: str | None = None  # the collector's OTLP/HTTP traces URL; None: no traces
    otel_content: bool = parse_bool("llm_otel_content", _default("llm_otel_content"))

    @property
    def cache_display(self) -> str:
        """The cache setting as it may be logged: a Redis URL loses its password."""
        return display_url(self.cache) if self.cache.startswith(REDIS_SCHEMES) else self.cache

    def loggable(self) -> dict:
        shown = {"cache": self.cache_display}
        if self.otel is not None:
            shown["otel"] = display_url(self.otel)
        return self.model_dump(mode="json") | shown

    def summary(self) -> str:
        return (
            f"cache={self.cache_display} (max age {self.cache_max_age:g}s, max {self.cache_max_entries} entries), "
            f"log={self.log or 'off'}, repair={'on' if self.repair else 'off (observe only)'}"
        )


def parse_settings(values: Mapping[str, str | None]) -> Settings:
    """Settings from raw option strings (an option left out has its default); raises ValueError naming the bad
    option."""
    values = {name: values.get(name, default) for name, default in OPTION_DEFAULTS.items()}
    cache = parse_cache(values["llm_cache"])
    return Settings(
        cache=cache,
        log=parse_log(values["llm_log"], cache),
        log_max_bytes=parse_size("llm_log_max_size", values["llm_log_max_size"]),
        log_backups=parse_backups(values["llm_log_backups"]),
        repair=parse_bool("llm_repair", values["llm_repair"]),
        cache_max_age=parse_duration("llm_cache_max_age", values["llm_cache_max_age"]),
        cache_max_entries=parse_count("llm_cache_max_entries", values["llm_cache_max_entries"]),
        log_opaque=parse_bool("llm_log_opaque", values["llm_log_opaque"]),
        keep_bodies=parse_keep_bodies(values["llm_keep_bodies"]),
        signature_placeholder=parse_placeholder(values["llm_signature_placeholder"]),
        credential_headers=parse_header_names("llm_credential_headers", values["llm_credential_headers"]),
        anonymous_fallback=parse_bool("llm_anonymous_fallback", values["llm_anonymous_fallback"]),
        remove_foreign=parse_bool("llm_remove_foreign", values["llm_remove_foreign"]),
        recover=parse_bool("llm_recover", values["llm_recover"]),
        metrics=parse_listen_address("llm_metrics", values["llm_metrics"]),
        otel=parse_otlp_endpoint("llm_otel", values["llm_otel"]),
        otel_content=parse_bool("llm_otel_content", values["llm_otel_content"]),
    )
