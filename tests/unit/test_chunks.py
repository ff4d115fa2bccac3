"""Pages decoded a chunk at a time: the same records as decoding the page whole, or none."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from asyncwifi import errors
from asyncwifi.models import ItemError
from asyncwifi.models._chunks import chunk_page
from asyncwifi.models._decode import decode_page
from asyncwifi.models._events import EventPage

#: small chunks, so that small bodies are cut many times
STEP = 512


def _event(i: int, **extra: Any) -> dict[str, Any]:
    second = i // 3  # three events a second: a tail whose records share a time
    return {
        "type": "visit",
        "id": f"ev{i:06d}",
        "date": f"2026-01-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z",
        "visit": {"startAt": "2026-01-01T00:00:00Z", "duration": i},
        **extra,
    }


def _body(events: list[Any], **members: Any) -> bytes:
    page = {"status": "OK", "generated": "2026-01-01T00:00:00Z", "count": len(events)}
    page.update(members)
    page["events"] = events
    page.setdefault("scrollId", "sid-1")
    return msgspec.json.encode(page)


def _read(body: bytes, step: int = STEP) -> tuple[Any, list[Any], list[ItemError]]:
    """Chunk ``body`` and read every batch: (envelope, records, errors)."""
    data = bytearray(body) + bytearray(64)  # a reused buffer is longer than its body
    chunked = chunk_page(data, len(body), EventPage, chunk_bytes=step)
    assert chunked is not None
    found: list[ItemError] = []
    records = [r for batch in chunked.batches(found.append) for r in batch]
    return chunked.envelope, records, found


def test_chunks_give_the_records_and_members_of_the_whole_page() -> None:
    events = [_event(i) for i in range(401)]  # cut every 512 bytes, one record would be left
    body = _body(events)
    whole = decode_page(body, EventPage)
    data = bytearray(body)
    chunked = chunk_page(data, len(body), EventPage, chunk_bytes=STEP)
    assert chunked is not None
    # the tail keeps half a chunk of bytes at least: enough records for the time cursor
    tail_bytes = len(body) - (chunked._chunks[-1][1] + 1)
    assert tail_bytes >= STEP // 2
    envelope, records, found = _read(body)
    assert records == whole.items
    assert found == []
    assert envelope.scroll_id == "sid-1"
    assert envelope.count == 401
    assert envelope.generated == whole.envelope.generated


@pytest.mark.parametrize("layout", ["indented", "python-json"])
def test_whitespace_between_records_is_chunked_too(layout: str) -> None:
    events = [_event(i) for i in range(300)]
    compact = _body(events)
    if layout == "indented":
        body = msgspec.json.format(compact, indent=2)
    else:  # what Python's json.dumps writes by default: ", " and ": "
        body = json.dumps(json.loads(compact)).encode()
    assert b"},{" not in body
    envelope, records, found = _read(body)
    assert records == decode_page(compact, EventPage).items
    assert found == []
    assert envelope.scroll_id == "sid-1"


def test_members_after_the_list_are_read_from_the_tail() -> None:
    body = msgspec.json.encode(
        {"events": [_event(i) for i in range(300)], "scrollId": "after", "count": 300}
    )
    envelope, records, _ = _read(body)
    assert [r.id for r in records] == [f"ev{i:06d}" for i in range(300)]
    assert (envelope.scroll_id, envelope.count) == ("after", 300)


def test_a_cut_inside_a_string_is_never_taken_for_a_boundary() -> None:
    # every record carries "},{" inside a string: many cut candidates are not boundaries
    trap = '"},{"type":"x"},{'
    events = [_event(i, type=trap if i % 2 else "visit") for i in range(300)]
    body = _body(events)
    assert body.count(b"},{") > 500  # 299 boundaries, 300 inside strings
    whole = decode_page(body, EventPage).items
    chunked = 0
    for step in range(30, 3000, 97):
        data = bytearray(body)
        page = chunk_page(data, len(body), EventPage, chunk_bytes=step)
        if page is None:
            continue  # the last cut was inside a string: the tail did not decode
        chunked += 1
        found: list[ItemError] = []
        assert [r for batch in page.batches(found.append) for r in batch] == whole, step
        assert found == []
    assert chunked >= 10


def test_a_malformed_record_costs_only_itself_with_its_page_index() -> None:
    events: list[Any] = [_event(i) for i in range(300)]
    events[150] = {**_event(150), "visit": {"duration": "long"}}  # wrong type, valid JSON
    body = _body(events)
    _, records, found = _read(body)
    assert [r.id for r in records] == [f"ev{i:06d}" for i in range(300) if i != 150]
    assert len(found) == 1
    assert found[0].index == 150
    assert found[0].path == "$.events[150].visit.duration"
    assert b'"long"' in found[0].raw


def test_the_stream_refuses_a_rest_that_disagrees_with_the_tail() -> None:
    events: list[Any] = [_event(i) for i in range(300)]
    events[10] = {**_event(10), "id": 10}  # forces the careful path from chunk one
    body = _body(events)
    data = bytearray(body)
    chunked = chunk_page(data, len(body), EventPage, chunk_bytes=STEP)
    assert chunked is not None
    chunked.tail[-1] = msgspec.structs.replace(chunked.tail[-1], id="forged")
    with pytest.raises(errors.DecodeError, match="consistently"):
        [r for batch in chunked.batches(lambda e: None) for r in batch]


@pytest.mark.parametrize(
    "body",
    [
        _body([_event(i) for i in range(3)]),  # small: not worth chunking
        msgspec.json.encode({"status": "x" * 2_000, "count": 0}),  # no list at all
        _body([_event(0, survey={"questions": {"q": "x" * 5_000}})]),  # one record: no cut
        _body([_event(i) for i in range(300)], meta={"events": [1]}),  # the key, nested first
        _body([_event(i) for i in range(299)] + [{**_event(299), "id": 5}]),  # bad tail
        _body([_event(i) for i in range(300)])[:-9],  # truncated
    ],
    ids=["small", "no-list", "one-record", "nested-key", "bad-tail", "truncated"],
)
def test_a_page_that_cannot_be_chunked_safely_is_left_whole(body: bytes) -> None:
    data = bytearray(body)
    assert chunk_page(data, len(body), EventPage, chunk_bytes=STEP) is None
    assert data == body  # only read
