"""The JSON Lines output on its own: one record per line whatever the record's whitespace,
a reproducible gzip member per page, whole writes, cut-backs, and a sink that refuses to
write when it is not open."""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from asyncwifi.engine import StateMismatchError
from asyncwifi.engine._jsonl_output import JsonlOutput, encode_lines
from asyncwifi.errors import ClientStateError


def _records(n: int = 300) -> list[bytes]:
    rnd = random.Random(1)
    kinds = ["visit", "login", "signup"]
    return [
        json.dumps({"id": f"e{i}", "type": rnd.choice(kinds), "n": rnd.randrange(10**6)}).encode()
        for i in range(n)
    ]


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def test_a_line_break_inside_a_record_becomes_a_space() -> None:
    # a pretty-printing server: LF alone, CR alone, and both
    assert encode_lines([b'{"a":\n1}', b'{"b":2}']) == b'{"a": 1}\n{"b":2}\n'
    assert encode_lines([b'{"a":\r1}', b'{"b":2}']) == b'{"a": 1}\n{"b":2}\n'
    assert encode_lines([b'{"a":\r\n1}']) == b'{"a":  1}\n'
    lines = encode_lines([b'{"a":\r1}', b'{"b":\n2}']).decode().splitlines()
    assert [json.loads(line) for line in lines] == [{"a": 1}, {"b": 2}]


def test_the_default_output_is_plain_json_lines(tmp_path: Path) -> None:
    out = JsonlOutput(tmp_path / "out.jsonl")
    assert out.encode([b'{"a":1}', b'{"b":2}']) == b'{"a":1}\n{"b":2}\n'


def test_a_gzip_page_is_one_reproducible_member_at_level_6_by_default(tmp_path: Path) -> None:
    records = _records()
    plain = encode_lines(records)
    member = JsonlOutput(tmp_path / "out.jsonl.gz", gzip=True).encode(records)
    assert gzip.decompress(member) == plain
    # no timestamp in the header: the same records always give the same bytes
    with gzip.GzipFile(fileobj=io.BytesIO(member)) as fh:
        assert fh.read() == plain
        assert fh.mtime == 0
    assert member == gzip.compress(plain, compresslevel=6, mtime=0)
    fast = JsonlOutput(tmp_path / "fast.jsonl.gz", gzip=True, compresslevel=1).encode(records)
    assert fast == gzip.compress(plain, compresslevel=1, mtime=0)
    assert len(fast) > len(member)
    assert JsonlOutput(tmp_path / "e.gz", gzip=True).encode([]) == b""  # no empty member


def test_a_new_output_file_is_readable_by_all_and_not_executable(
    tmp_path: Path, umask_022: None
) -> None:
    out = JsonlOutput(tmp_path / "out.jsonl")
    out.open(0)
    out.close()
    assert (tmp_path / "out.jsonl").stat().st_mode & 0o777 == 0o644


def test_a_sink_writes_only_while_open(tmp_path: Path) -> None:
    out = JsonlOutput(tmp_path / "out.jsonl")
    assert out.offset == 0
    with pytest.raises(ClientStateError, match=r"^the sink is not open$"):
        out.append(b"x\n")
    out.open(0)
    assert out.append(b'{"a":1}\n') == 8
    out.close()
    out.close()  # twice is harmless
    with pytest.raises(ClientStateError, match=r"^the sink is not open$"):
        out.append_many([b"y\n"])
    assert (tmp_path / "out.jsonl").read_bytes() == b'{"a":1}\n'
    out.rollback(0)  # nothing to cut back on a closed sink
    assert (tmp_path / "out.jsonl").read_bytes() == b'{"a":1}\n'


def test_append_writes_the_page_whole_and_syncs_it_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    out = JsonlOutput(tmp_path / "out.jsonl")
    out.open(0)
    try:
        synced.clear()
        assert out.append(b'{"a":1}\n') == 8
        assert out.append_many([b'{"b":2}\n', b'{"c":3}\n']) == 24
        assert len(synced) == 2  # one fsync per group of pages
    finally:
        out.close()
    quick = JsonlOutput(tmp_path / "quick.jsonl", fsync=False)
    quick.open(0)
    try:
        synced.clear()
        quick.append(b"{}\n")
        assert synced == []
    finally:
        quick.close()


def test_short_writes_are_continued_until_the_chunk_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:5])))
    out = JsonlOutput(tmp_path / "out.jsonl")
    out.open(0)
    try:
        chunk = encode_lines(_records(20))
        assert out.append_many([chunk, b'{"last":1}\n']) == len(chunk) + 11
    finally:
        out.close()
    assert (tmp_path / "out.jsonl").read_bytes() == chunk + b'{"last":1}\n'


def test_a_rolled_back_page_is_cut_and_the_next_one_follows_the_committed_bytes(
    tmp_path: Path,
) -> None:
    out = JsonlOutput(tmp_path / "out.jsonl")
    out.open(0)
    try:
        committed = out.append(b'{"a":1}\n')
        out.append(b'{"failed":1}\n')
        out.rollback(committed)
        assert out.offset == committed
        assert out.append(b'{"b":2}\n') == committed + 8
    finally:
        out.close()
    assert (tmp_path / "out.jsonl").read_bytes() == b'{"a":1}\n{"b":2}\n'


def test_an_output_shorter_than_committed_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_bytes(b'{"a":1}\n')
    out = JsonlOutput(path)
    message = (
        f"{path} is 8 bytes but the state says 20 were written: "
        "the output was truncated or replaced; restore it or start a new job"
    )
    with pytest.raises(StateMismatchError, match=f"^{re.escape(message)}$"):
        out.open(20)
    assert path.read_bytes() == b'{"a":1}\n'
    with pytest.raises(ClientStateError):
        out.append(b"x\n")  # the refused open left nothing open
    out.open(8)  # the committed length: kept as it is
    try:
        assert out.append(b'{"b":2}\n') == 16
    finally:
        out.close()
