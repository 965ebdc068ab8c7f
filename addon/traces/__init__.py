"""OpenTelemetry GenAI traces of every LLM exchange (llm_otel): `genai` writes the conventions' attributes, messages
and span events; `exchange` reads a finished exchange into a span's plan; `links` ties turns into conversations;
`export` makes and sends the spans off the event loop. Only `export` imports OpenTelemetry, and only once traces
are asked for."""
