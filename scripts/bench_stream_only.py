"""The benchmark's baseline: mitmdump that only streams event streams, as any LLM proxy must.

Plain mitmdump buffers an SSE response until it ends; comparing the addon with
that would flatter it. This is the fairest mitmproxy without the addon.
"""


def responseheaders(flow):
    if flow.response.headers.get("content-type", "").startswith("text/event-stream"):
        flow.response.stream = True
