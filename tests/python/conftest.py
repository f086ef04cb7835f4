# SPDX-License-Identifier: MIT
"""pytest fixtures: a real roostd per test module (``server``), fresh ones where a test needs
its own config (``make_server``), sync/async client pairs and private temp dirs."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from typing import Any, Callable, Iterator, List

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Roostd  # noqa: E402

import roost  # noqa: E402


@pytest.fixture(scope="module")
def server() -> Iterator[Roostd]:
    d = Roostd(name="mod").start()
    yield d
    d.cleanup()


@pytest.fixture
def make_server() -> Iterator[Callable[..., Roostd]]:
    made: List[Roostd] = []

    def make(*sets: str, name: str = "t") -> Roostd:
        d = Roostd(sets, name=name).start()
        made.append(d)
        return d

    yield make
    for d in made:
        d.cleanup()


@pytest.fixture
def tmp_dir() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="roost-py-t-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


class SyncFacade:
    """An AsyncClient driven through a private event loop, so the same test body can run
    against both clients and compare their answers."""

    def __init__(self, client: roost.AsyncClient) -> None:
        self._client = client
        self._loop = asyncio.new_event_loop()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*a: Any, **kw: Any) -> Any:
            r = attr(*a, **kw)
            if hasattr(r, "__aiter__"):
                async def collect() -> List[Any]:
                    return [x async for x in r]
                return iter(self._loop.run_until_complete(collect()))
            return self._loop.run_until_complete(r)

        return call

    def close(self) -> None:
        self._loop.run_until_complete(self._client.aclose())
        self._loop.close()


@pytest.fixture(params=["sync", "async"])
def client_factory(request: Any) -> Iterator[Callable[..., Any]]:
    """Makes a roost.Client, or an AsyncClient behind a SyncFacade: tests run once with each."""
    made: List[Any] = []

    def make(url: str, **kw: Any) -> Any:
        if request.param == "sync":
            c: Any = roost.Client(url, **kw)
        else:
            c = SyncFacade(roost.AsyncClient(url, **kw))
        made.append(c)
        return c

    make.kind = request.param  # type: ignore[attr-defined]
    yield make
    for c in made:
        c.close()
