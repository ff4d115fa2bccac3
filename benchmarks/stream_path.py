"""The path of ``events.list()``: Python calls and modules from the call to the first page.

The simulator (:class:`asyncwifi.testing.Simulator`) runs in this process, on its own thread
and event loop; ``sys.setprofile`` is per thread, so only the client's side is counted: the
call ``api.events.list(...)``, the stream's background task, the request pipeline, the
transport, aiohttp and asyncio, until ``anext(stream.pages())`` returns the first page.

A *call* is a Python frame entered for the first time; a coroutine or generator resumed
again is counted apart (*resumptions*); C functions are not counted. A *module* is a source
file. The client logs in before the measurement (a ``segments.list()``), so the login is not
on the path (``--cold`` measures the first request of a fresh client instead).

Only public API is used, so it runs on any commit. Run: ``python benchmarks/stream_path.py``
(``--modules`` lists the asyncwifi modules in the order the path first enters them).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncwifi
from asyncwifi import Client, Limits
from asyncwifi.testing import Simulator

PACKAGE = str(Path(asyncwifi.__file__).resolve().parent)
#: code flags of a frame that can be resumed: generator, coroutine, async generator
RESUMABLE = 0x20 | 0x80 | 0x200


class PathCounter:
    """A profile function that counts frame entries of the thread it is installed on."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.functions: Counter[tuple[str, str]] = Counter()
        self.resumptions = 0
        self.order: list[str] = []
        self._frames: set[int] = set()
        self._alive: list[FrameType] = []  # keeps ids of resumable frames from being reused

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code.co_flags & RESUMABLE:
            if id(frame) in self._frames:
                self.resumptions += 1
                return
            self._frames.add(id(frame))
            self._alive.append(frame)
        filename = code.co_filename
        if filename not in self.calls:
            self.order.append(filename)
        self.calls[filename] += 1
        self.functions[filename, code.co_qualname] += 1

    def ours(self, filename: str) -> bool:
        return filename.startswith(PACKAGE)


def _module(filename: str) -> str:
    if filename.startswith(PACKAGE):
        rel = Path(filename).relative_to(Path(PACKAGE).parent).with_suffix("")
        return ".".join(rel.parts)
    return filename


def _serve(ready: threading.Event, box: dict[str, Any], stop: threading.Event) -> None:
    async def main() -> None:
        async with Simulator(events=5_000, rate_limit_mode="off") as sim:
            box["sim"] = sim
            ready.set()
            while not stop.is_set():
                await asyncio.sleep(0.01)

    asyncio.run(main())


async def measure(sim: Simulator, *, size: int, cold: bool) -> PathCounter:
    api = Client(
        sim.client_key,
        sim.client_secret,
        base_url=sim.base_url,
        organization=sim.organization,
        allow_http=True,
        limits=Limits(minute=None, day=None),
    )
    async with api:
        if not cold:
            await api.segments.list()  # logged in: the login is not on the path
        path = PathCounter()
        sys.setprofile(path)
        try:
            stream = api.events.list(size=size)
            page = await anext(aiter(stream.pages()))
        finally:
            sys.setprofile(None)
        assert len(page.items) == size
        await stream.aclose()
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100, help="page size (default 100)")
    parser.add_argument("--cold", action="store_true", help="a fresh client: login included")
    parser.add_argument("--modules", action="store_true", help="list the asyncwifi modules")
    parser.add_argument("--functions", action="store_true", help="list every function called")
    args = parser.parse_args()
    ready, stop, box = threading.Event(), threading.Event(), {}
    server = threading.Thread(target=_serve, args=(ready, box, stop), daemon=True)
    server.start()
    if not ready.wait(60):
        raise SystemExit("the simulator did not start")
    try:
        path = asyncio.run(measure(box["sim"], size=args.size, cold=args.cold))
    finally:
        stop.set()
        server.join(10)
    ours = [f for f in path.order if path.ours(f)]
    our_calls = sum(path.calls[f] for f in ours)
    our_functions = sum(1 for f, _ in path.functions if path.ours(f))
    print(f"events.list(size={args.size}) to the first page ({'cold' if args.cold else 'warm'})")
    print(f"asyncwifi: {our_calls} calls, {our_functions} distinct functions, {len(ours)} modules")
    print(
        f"total:     {path.calls.total()} calls, {len(path.functions)} distinct functions, "
        f"{len(path.order)} modules ({path.resumptions} coroutine/generator resumptions)"
    )
    if args.modules:
        for filename in ours:
            print(f"  {path.calls[filename]:5d}  {_module(filename)}")
    if args.functions:
        for (filename, name), calls in path.functions.items():
            print(f"  {calls:5d}  {_module(filename)}  {name}")


if __name__ == "__main__":
    main()
