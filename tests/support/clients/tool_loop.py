"""A two-turn tool loop against DeepSeek's chat completions, at its real address, as a script a user would run: it
knows nothing of any proxy, and drops `reasoning_content` from turn 2 as many clients do (DeepSeek refuses such a
turn with 400 unless something puts it back).

    python tool_loop.py openai|requests|httpx|curl [--unseen]

With --unseen it sends only turn 2, of a conversation the proxy never saw (its turn 1 made elsewhere): nothing to
put back, so the proxy can only let it go on without that reasoning ("recovered"). The HTTP library named does the
requests; the proxy and trust come from the environment alone. Prints the final
answer; exits with $CLIENT_EXIT (0 if unset) once it has one, 1 on any failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

BASE_URL = "https://api.deepseek.com"
MODEL = "deepseek-v4-flash"
QUESTION = {"role": "user", "content": "What is in the deleteme directory?"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "list_directory",
            "description": "List the files in a directory.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]


def headers() -> dict[str, str]:
    return {"authorization": f"Bearer {os.environ['FAKE_API_KEY']}", "content-type": "application/json"}


def post_openai(body: dict) -> dict:
    import openai

    client = openai.OpenAI(base_url=BASE_URL, api_key=os.environ["FAKE_API_KEY"], max_retries=0, timeout=60)
    return client.chat.completions.create(**body).model_dump()


def post_requests(body: dict) -> dict:
    try:
        import requests
    except ImportError:  # not in the test install: pip's own copy of requests is the same library
        from pip._vendor import requests
    answer = requests.post(f"{BASE_URL}/chat/completions", json=body, headers=headers(), timeout=60)
    answer.raise_for_status()
    return answer.json()


def post_httpx(body: dict) -> dict:
    import httpx

    answer = httpx.post(f"{BASE_URL}/chat/completions", json=body, headers=headers(), timeout=60)
    answer.raise_for_status()
    return answer.json()


def post_curl(body: dict) -> dict:
    command = ["curl", "-sS", "--fail-with-body", "--max-time", "60", "--data-binary", "@-"]
    for name, value in headers().items():
        command += ["-H", f"{name}: {value}"]
    done = subprocess.run(
        [*command, f"{BASE_URL}/chat/completions"], input=json.dumps(body), capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"curl exited with {done.returncode}: {done.stderr}{done.stdout}")
    return json.loads(done.stdout)


UNSEEN_TURN = {
    "role": "assistant",
    "content": "",
    "tool_calls": [
        {"id": "call_made_elsewhere", "type": "function", "function": {"name": "list_directory", "arguments": "{}"}}
    ],
}


def tool_loop(post, *, unseen: bool = False) -> str:
    turn = (
        UNSEEN_TURN
        if unseen
        else post({"model": MODEL, "messages": [QUESTION], "tools": TOOLS})["choices"][0]["message"]
    )
    calls = [
        {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]},
        }
        for c in turn["tool_calls"]
    ]
    assistant = {"role": "assistant", "content": "", "tool_calls": calls}  # reasoning_content dropped
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "a.txt\nb.txt"} for c in calls]
    answer = post({"model": MODEL, "messages": [QUESTION, assistant, *results], "tools": TOOLS})
    return answer["choices"][0]["message"]["content"]


def main(library: str, *flags: str) -> int:
    post = {"openai": post_openai, "requests": post_requests, "httpx": post_httpx, "curl": post_curl}[library]
    try:
        print(tool_loop(post, unseen="--unseen" in flags), flush=True)
    except Exception as e:
        print(f"{library}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return int(os.environ.get("CLIENT_EXIT", "0"))


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
