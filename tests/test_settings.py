"""Unit tests for addon/shared/settings.py: option declarations and their parsing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_reasoning_proxy.shared.settings import (
    OPTION_NAMES,
    OPTIONS,
    PROJECT,
    Settings,
    default_state_dir,
    parse_bool,
    parse_cache,
    parse_count,
    parse_duration,
    parse_keep_bodies,
    parse_log,
    parse_placeholder,
    parse_settings,
)
from pydantic import ValidationError

DEFAULTS = {spec.name: spec.default for spec in OPTIONS}


@pytest.fixture
def state_home(tmp_path, monkeypatch):
    xdg = tmp_path / "xdg-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(xdg))
    return xdg


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def assert_rejected(parse, name, value):
    """The parser refuses the value with a message that names the option and quotes the value."""
    with pytest.raises(ValueError) as info:
        parse(name, value)
    message = str(info.value)
    assert message.startswith(f"{name}:")
    assert repr(value) in message


# --------------------------------------------------------------------------------------
# default_state_dir


def test_default_state_dir_uses_xdg_state_home(state_home):
    assert default_state_dir() == state_home / "llm-reasoning-proxy"
    assert PROJECT == "llm-reasoning-proxy"


@pytest.mark.parametrize("xdg", [None, ""])
def test_default_state_dir_falls_back_to_home(home, monkeypatch, xdg):
    if xdg is None:
        monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_STATE_HOME", xdg)
    assert default_state_dir() == home / ".local" / "state" / "llm-reasoning-proxy"


# --------------------------------------------------------------------------------------
# parse_bool


@pytest.mark.parametrize("value", ["true", "TRUE", "True", " yes ", "on", "1", "Yes", "ON"])
def test_parse_bool_true(value):
    assert parse_bool("llm_repair", value) is True


@pytest.mark.parametrize("value", ["false", "FALSE", " no", "off ", "0", "Off"])
def test_parse_bool_false(value):
    assert parse_bool("llm_repair", value) is False


def test_parse_bool_bare_flag_is_true():
    assert parse_bool("llm_repair", None) is True


@pytest.mark.parametrize("value", ["", " ", "maybe", "2", "tru", "y", "n", "enable", "true false"])
@pytest.mark.parametrize("name", ["llm_repair", "llm_log_opaque"])
def test_parse_bool_rejects(name, value):
    assert_rejected(parse_bool, name, value)


# --------------------------------------------------------------------------------------
# parse_duration


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("3600", 3600.0),
        ("30m", 1800.0),
        ("12h", 43200.0),
        ("7d", 604800.0),
        ("1.5h", 5400.0),
        ("90s", 90.0),
        ("0.5", 0.5),
        (" 12h ", 43200.0),
        ("12 h", 43200.0),
        ("1", 1.0),
    ],
)
def test_parse_duration(value, seconds):
    result = parse_duration("llm_cache_max_age", value)
    assert isinstance(result, float)
    assert result == seconds


@pytest.mark.parametrize(
    "value", ["", " ", None, "-3", "0", "0.0", "0h", "abc", "7w", "h", "12hh", "1e3", ".5h", "1,5h", "7 d x", "-1d"]
)
def test_parse_duration_rejects(value):
    assert_rejected(parse_duration, "llm_cache_max_age", value)


# --------------------------------------------------------------------------------------
# parse_count


@pytest.mark.parametrize(("value", "count"), [("1", 1), ("100000", 100000), (" 42 ", 42), ("7", 7)])
def test_parse_count(value, count):
    assert parse_count("llm_cache_max_entries", value) == count


@pytest.mark.parametrize("value", ["0", "-1", "x", None, "", " ", "1.5", "10k", "-0"])
def test_parse_count_rejects(value):
    assert_rejected(parse_count, "llm_cache_max_entries", value)


# --------------------------------------------------------------------------------------
# parse_cache


@pytest.mark.parametrize("value", ["memory", " memory ", "memory\n"])
def test_parse_cache_memory(value):
    assert parse_cache(value) == "memory"


def test_parse_cache_absolute_path(tmp_path):
    assert parse_cache(str(tmp_path / "c.db")) == str(tmp_path / "c.db")


def test_parse_cache_relative_path_becomes_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = parse_cache("sub/cache.db")
    assert Path(result).is_absolute()
    assert result == str(Path.cwd() / "sub" / "cache.db")


def test_parse_cache_expands_home(home):
    assert parse_cache("~/x.db") == str(home / "x.db")


def test_parse_cache_path_need_not_exist(tmp_path):
    target = tmp_path / "not" / "yet" / "cache.db"
    assert parse_cache(str(target)) == str(target)
    assert not target.parent.exists()  # parsing does not create anything


def test_parse_cache_rejects_directory(tmp_path):
    folder = tmp_path / "state"
    folder.mkdir()
    with pytest.raises(ValueError) as info:
        parse_cache(str(folder))
    message = str(info.value)
    assert message.startswith("llm_cache:")
    assert f"{folder} is a directory" in message
    assert str(folder / "cache.db") in message


def test_parse_cache_rejects_home_directory(home):
    with pytest.raises(ValueError, match="is a directory"):
        parse_cache("~")


@pytest.mark.parametrize("value", ["file:///tmp/x.db", "sqlite://x.db", "http://localhost:6379/0"])
def test_parse_cache_rejects_urls(value):
    with pytest.raises(ValueError) as info:
        parse_cache(value)
    message = str(info.value)
    assert message.startswith("llm_cache:")
    assert repr(value) in message


@pytest.mark.parametrize("value", ["redis://localhost:6379/0", "redis://:pw@cache.internal:6380/3", "rediss://h:1/0"])
def test_parse_cache_accepts_redis_urls(value):
    assert parse_cache(value) == value


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("redis://", "names no host"),
        ("redis://:secret@h:port/0", "not a usable Redis URL"),
        ("redis://:secret@h:6379/zero", "database must be a number"),
    ],
)
def test_parse_cache_rejects_bad_redis_urls_without_their_password(value, problem):
    with pytest.raises(ValueError, match=problem) as info:
        parse_cache(value)
    assert str(info.value).startswith("llm_cache:") and "secret" not in str(info.value)


def test_redis_password_stays_out_of_the_summary_and_the_started_event():
    settings = parse_settings({**DEFAULTS, "llm_cache": "redis://:hunter2@cache.internal:6379/0"})
    assert settings.cache == "redis://:hunter2@cache.internal:6379/0"  # still what the store connects with
    assert "hunter2" not in settings.summary() and "hunter2" not in json.dumps(settings.loggable())
    assert "redis://:***@cache.internal:6379/0" in settings.summary()


@pytest.mark.parametrize("value", [None, "", "   "])
def test_parse_cache_rejects_empty(value):
    with pytest.raises(ValueError, match=r"^llm_cache: "):
        parse_cache(value)


# --------------------------------------------------------------------------------------
# parse_log


def test_parse_log_default_is_beside_cache_file(tmp_path):
    cache = str(tmp_path / "state" / "cache.db")
    assert parse_log(None, cache) == tmp_path / "state" / "events.jsonl"


def test_parse_log_default_for_memory_cache_reads_env_at_call_time(state_home):
    assert parse_log(None, "memory") == state_home / "llm-reasoning-proxy" / "events.jsonl"


@pytest.mark.parametrize("value", ["", "  ", "\t"])
def test_parse_log_empty_turns_log_off(tmp_path, value):
    assert parse_log(value, str(tmp_path / "cache.db")) is None
    assert parse_log(value, "memory") is None


def test_parse_log_explicit_path(tmp_path):
    assert parse_log(str(tmp_path / "log.jsonl"), "memory") == tmp_path / "log.jsonl"


def test_parse_log_relative_path_becomes_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_log("logs/e.jsonl", "memory") == Path.cwd() / "logs" / "e.jsonl"


def test_parse_log_expands_home(home):
    assert parse_log(" ~/e.jsonl ", "memory") == home / "e.jsonl"


def test_parse_log_rejects_directory(tmp_path):
    with pytest.raises(ValueError) as info:
        parse_log(str(tmp_path), "memory")
    message = str(info.value)
    assert message.startswith("llm_log:")
    assert str(tmp_path) in message


# --------------------------------------------------------------------------------------
# parse_keep_bodies


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "auto"),
        ("", "auto"),
        ("auto", "auto"),
        (" AUTO ", "auto"),
        ("true", "true"),
        ("yes", "true"),
        ("ON", "true"),
        ("1", "true"),
        ("false", "false"),
        ("no", "false"),
        ("0", "false"),
        ("Off", "false"),
    ],
)
def test_parse_keep_bodies(value, expected):
    assert parse_keep_bodies(value) == expected


@pytest.mark.parametrize("value", ["sometimes", "2", "automatic"])
def test_parse_keep_bodies_rejects(value):
    with pytest.raises(ValueError, match=r"^llm_keep_bodies: "):
        parse_keep_bodies(value)


# --------------------------------------------------------------------------------------
# OPTIONS and parse_settings


def test_options_are_declared_once_each():
    names = [spec.name for spec in OPTIONS]
    assert names == [
        "llm_cache",
        "llm_log",
        "llm_log_max_size",
        "llm_log_backups",
        "llm_repair",
        "llm_cache_max_age",
        "llm_cache_max_entries",
        "llm_log_opaque",
        "llm_signature_placeholder",
        "llm_remove_foreign",
        "llm_recover",
        "llm_credential_headers",
        "llm_anonymous_fallback",
        "llm_keep_bodies",
        "llm_metrics",
        "llm_otel",
        "llm_otel_content",
    ]
    assert OPTION_NAMES == frozenset(names)
    assert all(spec.help.strip() for spec in OPTIONS)
    assert all(spec.default is None or isinstance(spec.default, str) for spec in OPTIONS)


def test_parse_settings_with_option_defaults():
    settings = parse_settings(DEFAULTS)
    assert settings.cache.endswith("llm-reasoning-proxy/cache.db")
    assert Path(settings.cache).is_absolute()
    assert settings.log == Path(settings.cache).parent / "events.jsonl"
    assert settings.repair is True
    assert settings.cache_max_age == 7 * 86400.0
    assert settings.cache_max_entries == 100000
    assert settings.log_opaque is False
    assert settings.keep_bodies == "auto"


def test_parse_settings_default_cache_under_xdg_state_home(state_home):
    # OPTIONS defaults were computed at import; the path is given explicitly here.
    values = {**DEFAULTS, "llm_cache": str(default_state_dir() / "cache.db")}
    settings = parse_settings(values)
    assert settings.cache == str(state_home / "llm-reasoning-proxy" / "cache.db")
    assert settings.cache.endswith("llm-reasoning-proxy/cache.db")
    assert settings.log == state_home / "llm-reasoning-proxy" / "events.jsonl"


def test_parse_settings_explicit_values(tmp_path):
    settings = parse_settings(
        {
            "llm_cache": "memory",
            "llm_log": str(tmp_path / "e.jsonl"),
            "llm_repair": "false",
            "llm_cache_max_age": "12h",
            "llm_cache_max_entries": "50",
            "llm_log_opaque": "yes",
            "llm_keep_bodies": "true",
        }
    )
    assert settings == Settings(
        cache="memory",
        log=tmp_path / "e.jsonl",
        repair=False,
        cache_max_age=43200.0,
        cache_max_entries=50,
        log_opaque=True,
        keep_bodies="true",
    )
    assert settings.summary() == (
        f"cache=memory (max age 43200s, max 50 entries), log={tmp_path / 'e.jsonl'}, repair=off (observe only)"
    )


def test_parse_settings_log_off_summary():
    settings = parse_settings({**DEFAULTS, "llm_cache": "memory", "llm_log": ""})
    assert settings.log is None
    assert settings.summary() == "cache=memory (max age 604800s, max 100000 entries), log=off, repair=on"


def test_parse_settings_memory_cache_log_default(state_home):
    settings = parse_settings({**DEFAULTS, "llm_cache": "memory", "llm_log": None})
    assert settings.log == state_home / "llm-reasoning-proxy" / "events.jsonl"


def test_settings_are_frozen():
    settings = parse_settings({**DEFAULTS, "llm_cache": "memory"})
    with pytest.raises(ValidationError):
        settings.repair = False  # type: ignore[misc]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("llm_cache", "redis://x:notaport"),
        ("llm_cache", ""),
        ("llm_repair", "maybe"),
        ("llm_repair", ""),
        ("llm_cache_max_age", "7w"),
        ("llm_cache_max_age", "0"),
        ("llm_cache_max_entries", "0"),
        ("llm_cache_max_entries", None),
        ("llm_log_opaque", "perhaps"),
        ("llm_keep_bodies", "sometimes"),
        ("llm_metrics", "9464"),
        ("llm_metrics", "localhost:port"),
        ("llm_metrics", "127.0.0.1:70000"),
        ("llm_metrics", "http://127.0.0.1:9464/metrics"),
    ],
)
def test_parse_settings_error_names_the_option(option, value):
    with pytest.raises(ValueError) as info:
        parse_settings({**DEFAULTS, "llm_cache": "memory", option: value})
    assert str(info.value).startswith(f"{option}:")


def test_parse_settings_error_names_llm_log(tmp_path):
    with pytest.raises(ValueError, match=r"^llm_log: "):
        parse_settings({**DEFAULTS, "llm_log": str(tmp_path)})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "auto"),
        ("auto", "auto"),
        ("on", "auto"),
        ("off", "off"),
        ("", "off"),
        ("false", "off"),
        ("skip_thought_signature_validator", "skip_thought_signature_validator"),
    ],
)
def test_parse_placeholder(value, expected):
    assert parse_placeholder(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"), [("20MB", 20 * 1024**2), ("512kb", 512 * 1024), ("1G", 1024**3), ("65536", 65536)]
)
def test_log_max_size(value, expected):
    assert parse_settings({**DEFAULTS, "llm_cache": "memory", "llm_log_max_size": value}).log_max_bytes == expected


@pytest.mark.parametrize(
    ("option", "value"),
    [("llm_log_max_size", "10"), ("llm_log_max_size", "lots"), ("llm_log_max_size", "-5MB"), ("llm_log_backups", "-1")],
)
def test_log_rotation_options_refuse_bad_values(option, value):
    with pytest.raises(ValueError, match=f"^{option}: "):
        parse_settings({**DEFAULTS, "llm_cache": "memory", option: value})


def test_credential_headers_are_header_names_in_lower_case():
    settings = parse_settings({**DEFAULTS, "llm_credential_headers": " X-Team-Key, x-gateway-user ,"})
    assert settings.credential_headers == frozenset({"x-team-key", "x-gateway-user"})
    assert parse_settings(DEFAULTS).credential_headers == frozenset()
    with pytest.raises(ValueError, match="llm_credential_headers: 'x team' is not a header name"):
        parse_settings({**DEFAULTS, "llm_credential_headers": "x team"})


def test_foreign_values_are_removed_unless_turned_off():
    assert parse_settings(DEFAULTS).remove_foreign is True
    assert parse_settings({**DEFAULTS, "llm_remove_foreign": "false"}).remove_foreign is False
    with pytest.raises(ValueError, match="llm_remove_foreign"):
        parse_settings({**DEFAULTS, "llm_remove_foreign": "maybe"})


def test_the_anonymous_fallback_is_off_unless_asked_for():
    assert parse_settings(DEFAULTS).anonymous_fallback is False
    assert parse_settings({**DEFAULTS, "llm_anonymous_fallback": "true"}).anonymous_fallback is True
    with pytest.raises(ValueError, match="llm_anonymous_fallback"):
        parse_settings({**DEFAULTS, "llm_anonymous_fallback": "maybe"})


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", None), (None, None), ("127.0.0.1:9464", ("127.0.0.1", 9464)), ("[::1]:9464", ("::1", 9464))],
)
def test_parse_settings_reads_llm_metrics(value, expected):
    assert parse_settings({**DEFAULTS, "llm_cache": "memory", "llm_metrics": value}).metrics == expected
