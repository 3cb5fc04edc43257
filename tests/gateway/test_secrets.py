"""Configured secrets (the backend's key, a native provider's key, client keys) never reach
an error body, a stream, a log line or a stored row, even when a provider echoes them; a
store outage answers 503 without the database's user, host, port or name."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import orjson
import pytest

from outform.gateway.scrub import Scrubber
from outform.gateway.sqlite_store import SqliteStore
from tests.gateway.conftest import MakeGateway
from tests.gateway.harness import GatedReply
from tests.providers.fake import sse
from tests.providers.openai_wire import chat_completion, chunk

BACKEND_KEY = "sk-backend-9c1e77a0f4"
CLIENT_KEY = "sk-client-2b8d41e6c3"


def _echo(secret: str) -> dict[str, object]:
    """An error body of the kind providers send, quoting the credential it received."""
    return {
        "error": {
            "message": f"Incorrect API key provided: {secret}. Check it.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }


def test_a_backend_error_echoing_its_key_is_scrubbed(
    make_gateway: MakeGateway, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "responses.sqlite"
    gw = make_gateway(
        store=SqliteStore(path),
        backend_api_key_env="BACKEND_KEY",
        api_keys=("CLIENT_KEY",),
        env={"BACKEND_KEY": BACKEND_KEY, "CLIENT_KEY": CLIENT_KEY},
        api_key=CLIENT_KEY,
    )
    caplog.set_level(logging.DEBUG)
    for path_, body in (
        ("/v1/responses", {"model": "m", "input": "x"}),
        ("/v1/responses", {"model": "m", "input": "x", "stream": True}),
        ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x"}]}),
        (
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True},
        ),
    ):
        gw.backend.json(_echo(BACKEND_KEY), status=401)
        answer = gw.http.post(
            gw.url + path_, json=body, headers={"authorization": f"Bearer {CLIENT_KEY}"}
        )
        assert answer.status_code == 401, (path_, body)
        assert BACKEND_KEY not in answer.text
        assert answer.json()["error"]["message"] == "Incorrect API key provided: ***. Check it."
    assert gw.backend.last.headers["authorization"] == f"Bearer {BACKEND_KEY}"  # still sent

    # mid-stream: the error event, the terminal event and the stored row
    gw.backend.stream(
        [chunk({"role": "assistant", "content": f"key {CLIENT_KEY}"}), _echo(BACKEND_KEY)]
    )
    with gw.client.responses.stream(model="m", input=f"my key is {CLIENT_KEY}") as stream:
        events = list(stream)
    failed = events[-1]
    assert failed.type == "response.failed"
    assert failed.response.error is not None
    assert "***" in failed.response.error.message and BACKEND_KEY not in str(events)
    stored = gw.client.responses.retrieve(failed.response.id)
    assert CLIENT_KEY not in stored.model_dump_json()
    items = gw.client.responses.input_items.list(failed.response.id)
    assert items.data[0].content[0].text == "my key is ***"  # type: ignore[union-attr,index]
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert BACKEND_KEY.encode() not in raw and CLIENT_KEY.encode() not in raw

    # any log record of the process, while the gateway runs
    logging.getLogger("some.library").error("retrying with key %s", BACKEND_KEY)
    assert BACKEND_KEY not in caplog.text and CLIENT_KEY not in caplog.text
    assert "retrying with key ***" in caplog.text


def test_an_answer_that_writes_a_secret_is_scrubbed_as_its_stream_and_its_row_are(
    make_gateway: MakeGateway,
) -> None:
    """A successful body says `***` too: what is served is what GET returns."""
    gw = make_gateway(
        backend_api_key_env="BACKEND_KEY",
        env={"BACKEND_KEY": BACKEND_KEY},
    )
    answer = f'{{"name": "key {BACKEND_KEY}", "age": 1}}'
    fmt = {
        "format": {
            "type": "json_schema",
            "name": "p",
            "schema": {"type": "object", "properties": {"name": {"type": "string"}}},
        }
    }
    for enforce in ("0", "1"):
        gw.backend.json(chat_completion(content=answer))
        served = gw.http.post(
            gw.url + "/v1/responses",
            json={"model": "m", "input": "x", "text": fmt},
            headers={"x-outform-enforce": enforce},
        )
        assert served.status_code == 200 and BACKEND_KEY not in served.text
        assert "key ***" in served.json()["output"][0]["content"][0]["text"]
        stored = gw.http.get(gw.url + "/v1/responses/" + served.json()["id"])
        assert stored.json()["output"] == served.json()["output"]
    gw.backend.json(chat_completion(content=answer))
    chat = gw.http.post(
        gw.url + "/v1/chat/completions",
        json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
    )
    assert chat.status_code == 200 and BACKEND_KEY not in chat.text and "***" in chat.text


def test_a_native_providers_error_echoing_its_key_is_scrubbed(make_gateway: MakeGateway) -> None:
    secret = "sk-proj-openai-6f2a09d1c8e3"
    gw = make_gateway(
        backend="openai",
        env_for=lambda fake: {"OPENAI_BASE_URL": fake.url + "/v1", "OPENAI_API_KEY": secret},
    )
    gw.backend.json(_echo(secret), status=401)
    with pytest.raises(openai.AuthenticationError) as caught:
        gw.client.responses.create(model="gpt-5-mini", input="x")
    assert secret not in str(caught.value.body)
    assert "***" in str(caught.value.body)
    assert gw.backend.last.headers["authorization"] == f"Bearer {secret}"


@pytest.mark.parametrize("cut", [1, 7, len(CLIENT_KEY) - 1])
def test_a_passed_through_stream_is_scrubbed_even_with_a_secret_split_between_chunks(
    make_gateway: MakeGateway, cut: int
) -> None:
    """The Chat pass-through relays the backend's own bytes; they pass the scrubber too. The
    backend writes one event in two HTTP chunks, split inside the secret, the second only
    once the first was sent."""
    gw = make_gateway(
        backend_api_key_env="BACKEND_KEY",
        api_keys=("CLIENT_KEY",),
        env={"BACKEND_KEY": BACKEND_KEY, "CLIENT_KEY": CLIENT_KEY},
        api_key=CLIENT_KEY,
    )
    echoed = sse(chunk({"role": "assistant", "content": f"you said {CLIENT_KEY}, ok"}))
    at = echoed.index(CLIENT_KEY.encode()) + cut
    events = [echoed[:at], echoed[at:], chunk({}, "stop"), "[DONE]"]
    split = GatedReply(events=events, gate_after=1)
    gw.backend.reply(split)
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}
    headers = {"authorization": f"Bearer {CLIENT_KEY}"}
    with gw.http.stream("POST", gw.url + "/v1/chat/completions", json=body, headers=headers) as r:
        assert split.reached.wait(10)  # the first half is out before the second is written
        split.gate.set()
        sent = r.read()
    assert CLIENT_KEY.encode() not in sent
    contents = [
        orjson.loads(line[6:])["choices"][0]["delta"].get("content")
        for line in sent.splitlines()
        if line.startswith(b"data: {")
    ]
    assert contents[0] == "you said ***, ok"


@pytest.mark.parametrize("cut", range(1, 24))
def test_a_secret_split_between_two_chunks_is_still_scrubbed(cut: int) -> None:
    scrubber = Scrubber([BACKEND_KEY])
    text = b'data: {"error": "bad key ' + BACKEND_KEY.encode() + b'"}\n\n'
    at = text.index(BACKEND_KEY.encode()) + cut - 4  # cuts before, inside and after the key
    pieces = [text[:at], text[at:]]

    async def collect() -> bytes:
        async def source() -> AsyncIterator[bytes]:
            for piece in pieces:
                yield piece

        return b"".join([part async for part in scrubber.stream(source())])

    out = asyncio.run(collect())
    assert out == text.replace(BACKEND_KEY.encode(), b"***")


def test_secrets_inside_json_strings_are_scrubbed_too() -> None:
    secret = 'pa"ss\\wörd-1234'
    scrubber = Scrubber([secret])
    encoded = orjson.dumps({"message": f"bad password {secret}"})
    assert secret.encode() not in encoded  # JSON escapes it ...
    assert orjson.loads(scrubber.data(encoded)) == {
        "message": "bad password ***"
    }  # ... still found
    assert scrubber.value({"a": [secret, {"b": secret}]}) == {"a": ["***", {"b": "***"}]}
    clean = {"a": ["fine"]}
    assert scrubber.value(clean) is clean
    assert not Scrubber(["short"])  # too short to scrub without garbling text


def test_a_store_outage_answers_503_without_naming_the_database(
    make_gateway: MakeGateway, request: pytest.FixtureRequest
) -> None:
    """A real PostgreSQL store whose role loses the right to log in while the gateway runs."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    from outform.gateway.postgres_store import PostgresStore

    server = request.getfixturevalue("postgres_server")
    schema, owner_dsn = server.schema()
    role = f"gw_{schema}"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT ALL ON SCHEMA {schema} TO {role}")
    dsn = make_conninfo(owner_dsn, user=role, dbname="outform_test")
    try:
        gw = make_gateway(store=PostgresStore(dsn, timeout=2))
        gw.backend.json(chat_completion(content="stored"))
        assert gw.client.responses.create(model="m", input="x").output_text == "stored"
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {role} NOLOGIN")
            conn.execute(
                f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"
            )
        gw.backend.json(chat_completion(content="lost"))
        answer = gw.http.post(gw.url + "/v1/responses", json={"model": "m", "input": "x"})
        assert answer.status_code == 503
        assert answer.json()["error"]["code"] == "store_error"
        for detail in (role, "127.0.0.1", "outform_test", server.dsn.split("port=")[1].split()[0]):
            assert detail not in answer.text
    finally:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {role} LOGIN")
        server.drop(schema)
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute(
                f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"
            )
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


pytest_plugins = ["tests.gateway.postgres"]


def test_a_backend_error_writing_its_key_in_json_escapes_is_scrubbed(
    make_gateway: MakeGateway,
) -> None:
    """Found by a new-user trial: `\\u0042\\u0065…` spells the key to any JSON reader (the
    OpenAI SDK raised "bad key Bearer sk-…") while a search for its bytes finds nothing."""
    gw = make_gateway(backend_api_key_env="BACKEND_KEY", env={"BACKEND_KEY": BACKEND_KEY})
    escaped = "".join(f"\\u{ord(c):04x}" for c in f"Bearer {BACKEND_KEY}")
    for path_, body in (
        ("/v1/responses", {"model": "m", "input": "x"}),
        ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x"}]}),
    ):
        message = b'"bad key ' + escaped.encode() + b'"'
        gw.backend.reply(
            status=500,
            body=b'{"error": {"message": ' + message + b', "type": "server_error", '
            b'"param": null, "code": null}}',
        )
        answer = gw.http.post(gw.url + path_, json=body)
        assert answer.status_code >= 500, path_
        assert BACKEND_KEY not in str(answer.json()), path_
