"""The offline tools: a capture (flow file, HAR, fixture folder) checked through the addon without a network,
and exported as redacted fixtures; `python -m llm_reasoning_proxy.offline.cli` (scripts/check, scripts/export)."""
