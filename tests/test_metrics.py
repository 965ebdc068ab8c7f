"""The Prometheus metrics (llm_metrics): bounded labels, and each counter from the events that feed it."""

from __future__ import annotations

from llm_reasoning_proxy.shared.events import Captured, Diagnosed, EventLog, Failure, Recovered, Repaired, Skipped
from llm_reasoning_proxy.shared.metrics import MODELS_KEPT, FleetMetrics, LabelFolder, skip_category
from llm_reasoning_proxy.shared.records import RepairAction

FLOW = {"host": "api.deepseek.com", "url": "https://api.deepseek.com/chat/completions", "wire_format": "chat"}


def value(metrics: FleetMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_label_folder_keeps_values_up_to_its_limit_then_says_other():
    fold = LabelFolder(limit=2)
    assert [fold("a"), fold("b"), fold("c"), fold("a")] == ["a", "b", "other", "a"]
    assert fold(None) == fold("") == "unknown"


def test_label_folder_never_labels_a_credential_and_cuts_long_names():
    fold = LabelFolder()
    assert fold("sk-ant-api03-" + "x" * 60) == "other"
    assert len(fold("m" * 500)) <= 101


def test_models_past_the_limit_are_other():
    metrics = FleetMetrics()
    for n in range(MODELS_KEPT + 10):
        metrics.count_exchange("deepseek", f"model-{n}", "chat")
    assert value(metrics, "llm_proxy_exchanges_total", provider="deepseek", model="other", format="chat") == 10
    assert value(metrics, "llm_proxy_exchanges_total", provider="deepseek", model="model-0", format="chat") == 1


def test_repairs_count_each_kind_new_and_again_with_cache_hits():
    metrics = FleetMetrics()
    actions = [RepairAction(kind="restored", location="messages[1]", index=1), RepairAction("merged", "m[2]", 2)]
    metrics.count_event(
        Repaired(**FLOW, applied=True, cache_hits=2, actions=actions, again=3, again_by_kind={"restored": 3}, total=5)
    )
    assert value(metrics, "llm_proxy_repairs_total", kind="restored", applied="true") == 4
    assert value(metrics, "llm_proxy_repairs_total", kind="merged", applied="true") == 1
    assert value(metrics, "llm_proxy_cache_hits_total") == 2


def test_recoveries_diagnoses_captures_skips_and_failures():
    metrics = FleetMetrics()
    for event in (
        Recovered(**FLOW, how="retry", rule="deepseek.reasoning_content_missing", removed=[]),
        Diagnosed(
            **FLOW,
            status=400,
            rule="deepseek.reasoning_content_missing",
            summary="s",
            problem="missing",
            advice="a",
            message="m",
        ),  # fmt: skip
        Captured(
            **FLOW,
            response_id="r",
            request_model="m",
            response_model="m",
            tool_calls=[],
            fields={},
            streamed=True,
            complete=True,
            stored=False,
        ),  # fmt: skip
        Skipped(url="u", reason="reasoning cache unavailable, forwarded unrepaired: sk-secret-in-text"),
        Failure(stage="response capture", error="KeyError: 'x'"),
    ):
        metrics.count_event(event)
    rule = "deepseek.reasoning_content_missing"
    assert value(metrics, "llm_proxy_recoveries_total", how="retry", rule=rule) == 1
    assert value(metrics, "llm_proxy_diagnosed_total", rule=rule, status="400") == 1
    assert value(metrics, "llm_proxy_captures_total", stored="false") == 1
    assert value(metrics, "llm_proxy_skips_total", reason="cache_unavailable") == 1
    assert value(metrics, "llm_proxy_failures_total", stage="response capture") == 1


def test_skip_reasons_fall_into_a_bounded_set_of_categories():
    assert skip_category("answer resp_1: too big to cache") == "not_stored"
    assert skip_category("request signed with SigV4, which covers its body") == "signed_request"
    assert skip_category("something new and free-form") == "other"


def test_addon_time_and_cache_size():
    metrics = FleetMetrics()
    metrics.observe_addon_ms("request", 0.4)
    metrics.observe_addon_ms("response", None)  # not measured: nothing observed
    metrics.set_cache_size(12, None)
    assert value(metrics, "llm_proxy_addon_seconds_count", phase="request") == 1
    assert value(metrics, "llm_proxy_addon_seconds_count", phase="response") is None
    assert value(metrics, "llm_proxy_cache_entries") == 12


def test_event_log_hands_events_to_listeners_even_when_off_and_survives_a_failing_one():
    log, seen = EventLog(None), []

    def broken(event: object) -> None:
        raise RuntimeError("boom")

    log.listeners += [broken, seen.append]
    log.write(Skipped(url="u", reason="r"))
    assert [event.kind for event in seen] == ["skipped"]
