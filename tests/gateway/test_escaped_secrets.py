"""A secret written in JSON escapes is the secret to any JSON reader, and is scrubbed as one,
in the Chat pass-through's stream too.

The trial: the backend sent one SSE event whose content held its key written with
`\\u0073` for `s` and `\\u002d` for `-`; the relayed bytes did not hold the key as written, so
the byte scrubber let them through, and the OpenAI SDK decoded the key. The same answer
unstreamed, and streamed on /v1/responses, said `***`. Each relayed event whose data
escapes characters is now read as JSON, its strings scrubbed, and written out again when one
held a secret (a secret is recognised whole within one event).
"""

from __future__ import annotations

import httpx
import orjson

from tests.gateway.conftest import Harness, MakeGateway
from tests.gateway.harness import sse_events
from tests.providers.openai_wire import chunk

BACKEND_KEY = "sk-backend-7a1c90e4b2"
ESCAPED = BACKEND_KEY.replace("s", "\\u0073").replace("-", "\\u002d")


def _escaped_stream() -> list[bytes | str]:
    head = b'{"id":"x","object":"chat.completion.chunk","created":0,"model":"m","choices":'
    content = b'[{"index":0,"delta":{"role":"assistant","content":"key ' + ESCAPED.encode()
    return [
        b"data: " + head + content + b'"},"finish_reason":null}]}\n\n',
        b"data: " + _json(chunk({}, finish="stop")) + b"\n\n",
        "[DONE]",
    ]


def _json(value: object) -> bytes:
    return orjson.dumps(value)


def _gateway(make_gateway: MakeGateway) -> Harness:
    return make_gateway(backend_api_key_env="BACKEND_KEY", env={"BACKEND_KEY": BACKEND_KEY})


def test_a_key_written_in_escapes_in_a_relayed_stream_is_scrubbed(
    make_gateway: MakeGateway,
) -> None:
    gw = _gateway(make_gateway)
    gw.backend.stream(_escaped_stream())
    pieces = gw.client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in pieces if c.choices)
    assert text == "key ***"

    gw.backend.stream(_escaped_stream())
    with httpx.Client(timeout=30) as http:
        relayed = http.post(
            gw.url + "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True},
        )
    frames = [data for _, data in sse_events(relayed.content)]
    assert frames[-1] == b"[DONE]"
    assert ESCAPED.encode() not in relayed.content and BACKEND_KEY not in relayed.text


def test_events_without_a_secret_are_relayed_byte_for_byte(make_gateway: MakeGateway) -> None:
    """Escapes alone (a server that writes non-ASCII as `\\u00e9`) change nothing."""
    gw = _gateway(make_gateway)
    event = (
        b'data: {"id":"x","object":"chat.completion.chunk","created":0,"model":"m",'
        b'"choices":[{"index":0,"delta":{"content":"caf\\u00e9"},"finish_reason":null}]}\n\n'
    )
    gw.backend.stream([event, b"data: " + _json(chunk({}, finish="stop")) + b"\n\n", "[DONE]"])
    with httpx.Client(timeout=30) as http:
        relayed = http.post(
            gw.url + "/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True},
        )
    assert relayed.content.startswith(event)
