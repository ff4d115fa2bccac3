"""The spill file: pages kept on disk within a byte budget, gone once closed."""

from __future__ import annotations

from asyncwifi._stream._pages import Spill


def test_bodies_come_back_exactly_and_the_file_starts_over_when_read() -> None:
    spill = Spill(100)
    assert not spill.open  # no file until a page spills
    first, second = spill.put(b'{"a":1}'), spill.put(memoryview(b'{"b":22}'))
    assert spill.size == 15
    assert spill.pages == 2
    assert spill.take(*second) == b'{"b":22}'
    assert spill.take(*first) == b'{"a":1}'
    assert spill.size == 0  # every page read: the file is empty again
    spill.close()
    spill.close()  # idempotent
    assert not spill.open


def test_the_budget_bounds_the_file() -> None:
    spill = Spill(10)
    assert spill.room_for(10)
    spill.put(b"x" * 8)
    assert not spill.room_for(3)
    assert spill.room_for(2)
    assert not Spill(0).room_for(1)  # a budget of 0 never spills
    spill.close()
