"""What the CLI plugs in: the JSON Lines sink, handler modules, secrets from the environment."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from asyncwifi.errors import ConfigurationError
from asyncwifi.models._webhook import WebhookPayload
from asyncwifi.webhooks import JsonlSink, Receiver, Spool, WebhookContext
from asyncwifi.webhooks._app import create_app
from asyncwifi.webhooks._sinks import load_handler, secrets_from_env
from tests.webhooks.helpers import HEADER, SECRET, ClientFactory, auth, body_of, eventually

PRETTY = b"""{
  "event": {"type": "signup", "nonce": "p-1", "note": "line\\nbreak inside a string"},
  "futureField": {"kept": true}
}
"""


def test_the_sink_writes_one_line_per_event_keeping_every_field(tmp_path: Path) -> None:
    sink = JsonlSink(tmp_path / "out" / "events.jsonl")
    receiver = Receiver(SECRET)
    for body in (PRETTY, body_of(nonce="p-2")):
        payload = receiver.decode(body)
        assert isinstance(payload, WebhookPayload)
        sink(payload, WebhookContext(body=body))
    sink.close()
    lines = (tmp_path / "out" / "events.jsonl").read_bytes().splitlines()
    assert len(lines) == 2
    assert json.loads(lines[0]) == json.loads(PRETTY)
    assert json.loads(lines[0])["event"]["note"] == "line\nbreak inside a string"
    assert json.loads(lines[1]) == json.loads(body_of(nonce="p-2"))


def test_the_sink_appends_and_reopens(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    receiver = Receiver(SECRET)
    for _ in range(2):
        sink = JsonlSink(path, fsync=True)
        body = body_of()
        sink(receiver.decode(body), WebhookContext(body=body))  # type: ignore[arg-type]
        sink.close()
        sink.close()
    assert len(path.read_bytes().splitlines()) == 2
    assert "events.jsonl" in repr(sink)


async def test_a_durable_receiver_with_the_sink_writes_every_accepted_event(
    tmp_path: Path, make_client: ClientFactory
) -> None:
    sink = JsonlSink(tmp_path / "events.jsonl")
    receiver = Receiver(SECRET, header_name=HEADER)
    receiver.fallback(sink)
    client = await make_client(create_app(receiver, spool=Spool(tmp_path / "spool.sqlite3")))
    nonces = [f"sink-{i}" for i in range(20)]
    for nonce in nonces:
        response = await client.post("/webhooks", data=body_of(nonce=nonce), headers=auth())
        assert response.status == 202

    def written() -> list[str]:
        path = tmp_path / "events.jsonl"
        if not path.exists():
            return []
        return [json.loads(line)["event"]["nonce"] for line in path.read_bytes().splitlines()]

    await eventually(lambda: len(written()) == 20)
    assert written() == nonces
    sink.close()


def test_load_handler_imports_a_function_or_an_attribute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_hooks.py").write_text(
        textwrap.dedent(
            """
            SEEN = []
            NOT_CALLABLE = 3

            def handle(payload, context):
                SEEN.append(payload)

            class Hooks:
                @staticmethod
                def on_event(payload, context):
                    SEEN.append(("static", payload))
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    handler = load_handler("my_hooks:handle")
    handler("p", WebhookContext(body=b"{}"))  # type: ignore[arg-type]
    load_handler("my_hooks:Hooks.on_event")("q", WebhookContext(body=b"{}"))  # type: ignore[arg-type]
    import my_hooks  # type: ignore[import-not-found]

    assert my_hooks.SEEN == ["p", ("static", "q")]
    for spec, message in [
        ("my_hooks", "package.module:function"),
        ("my_hooks:", "package.module:function"),
        ("no_such_module_here:f", "cannot import"),
        ("my_hooks:missing", "no attribute"),
        ("my_hooks:NOT_CALLABLE", "not callable"),
    ]:
        with pytest.raises(ConfigurationError, match=message):
            load_handler(spec)


def test_secrets_come_from_the_environment_comma_separated() -> None:
    env = {"ASYNCWIFI_WEBHOOK_SECRET": " new-secret , old-secret,, "}
    assert secrets_from_env(environ=env) == ["new-secret", "old-secret"]
    assert secrets_from_env("MY_VAR", environ={"MY_VAR": "x"}) == ["x"]


@pytest.mark.parametrize("value", [None, "", " , ,"])
def test_missing_secrets_are_an_error_that_names_the_variable(value: str | None) -> None:
    env = {} if value is None else {"ASYNCWIFI_WEBHOOK_SECRET": value}
    with pytest.raises(ConfigurationError, match="ASYNCWIFI_WEBHOOK_SECRET"):
        secrets_from_env(environ=env)
