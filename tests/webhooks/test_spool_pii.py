"""The PII policy in the webhook spool (issue 41): with ``Spool(pii=...)`` an event lands
scrubbed (its contact's email hashed, names dropped): the spool file and its WAL never hold
the plain fields, and the handler receives the scrubbed event; ``JsonlSink(pii=...)``
writes scrubbed lines. Before, the body was spooled and written whole."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path
from typing import Any

import pytest

from asyncwifi import ScaledClock
from asyncwifi.engine import PiiPolicy
from asyncwifi.models._webhook import WebhookPayload
from asyncwifi.webhooks import JsonlSink, Receiver, Spool, WebhookContext
from asyncwifi.webhooks._app import create_app
from tests.webhooks.helpers import HEADER, SECRET, ClientFactory, auth, body_of, eventually

KEY = "the-operator-key"
CONTACT = {
    "id": "c-77",
    "firstname": "Ottoline",
    "lastname": "Blackwood",
    "email": "ottoline.blackwood@example.com",
    "phone": "+393331234567",
    "birthday": "1980-04-02",
}
PLAIN = [CONTACT[k].encode() for k in ("firstname", "lastname", "email", "phone", "birthday")]


async def test_the_spool_holds_no_plain_pii(tmp_path: Path, make_client: ClientFactory) -> None:
    policy = PiiPolicy.parse(
        "email=hash,phone=hash,name=drop,birth_date=drop", environ={"ASYNCWIFI_PII_KEY": KEY}
    )
    seen: list[WebhookPayload] = []
    receiver = Receiver(SECRET, header_name=HEADER, clock=ScaledClock(speed=1000))

    async def handler(payload: WebhookPayload, context: WebhookContext) -> None:
        seen.append(payload)

    receiver.fallback(handler)
    spool = Spool(tmp_path / "spool.sqlite3", pii=policy)
    client = await make_client(create_app(receiver, spool=spool))
    response = await client.post("/webhooks", data=body_of(contact=CONTACT), headers=auth())
    assert response.status == 202
    await eventually(lambda: len(seen) == 1)
    contact: Any = seen[0].contact
    want = hmac.new(KEY.encode(), CONTACT["email"].encode(), hashlib.sha256).hexdigest()
    assert contact.email == want
    assert (contact.first_name, contact.last_name, contact.birthday) == (None, None, None)
    assert contact.id == "c-77"
    stored = b"".join(
        p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("spool.sqlite3")
    )
    assert [v for v in PLAIN if v in stored] == []


def test_the_jsonl_sink_writes_scrubbed_lines(tmp_path: Path) -> None:
    policy = PiiPolicy.parse("email=drop,phone=drop,name=drop,birth_date=drop")
    out = tmp_path / "events.jsonl"
    sink = JsonlSink(out, pii=policy)
    body = body_of(contact=CONTACT)
    payload: Any = None
    sink(payload, WebhookContext(body=body, headers={}, received_at=0.0))
    sink.close()
    text = out.read_bytes()
    assert b"c-77" in text
    assert [v for v in PLAIN if v in text] == []


def test_webhooks_serve_refuses_a_bad_policy_before_listening(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from asyncwifi.cli import main

    monkeypatch.setenv("ASYNCWIFI_WEBHOOK_SECRET", SECRET)
    monkeypatch.delenv("ASYNCWIFI_PII_KEY", raising=False)
    spool = tmp_path / "spool.db"
    for policy, said in (("mail=hash", "unknown field 'mail'"), ("email=hash", "needs a key")):
        code = main(["webhooks", "serve", "--port", "0", "--spool", str(spool), "--out",
                     str(tmp_path / "o.jsonl"), "--pii", policy])  # fmt: skip
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 78
        assert len(err) == 1
        assert said in err[0]
    assert not spool.exists()
