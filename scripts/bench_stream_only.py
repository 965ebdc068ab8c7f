"""The benchmark's baseline: mitmdump that only streams event streams (SSE, and Amazon Bedrock's AWS event-stream
frames), as any LLM proxy must.

Plain mitmdump buffers an SSE response until it ends; comparing the addon with
that would flatter it. This is the fairest mitmproxy without the addon.
"""


def responseheaders(flow):
    if flow.response.headers.get("content-type", "").startswith(
        ("text/event-stream", "application/vnd.amazon.eventstream")
    ):
        flow.response.stream = True
