"""Push: while a client is connected, the server listens for its identity and says so.

For the life of the stdio session (the server's lifespan) this server:

- takes the identity's relay listener lease (``home.hold_listener``) if no other process
  holds it, and, when the identity has a relay, drains it into the store on a thread of its
  own (``visit.turn.TurnCheck``: commit, then ack; nothing is claimed or marked shown, so a
  turn-check or ``op inbox`` still gets every message). A second server for the same
  identity finds the lease taken: it only reads, and ``whoami`` says ``listener:
  "elsewhere"``;
- watches the store (``Database.changes``: any process's commit, so door POSTs as well as
  what the drain stores) and, when a received message is committed after what it saw last,
  tells every client that asked for ``muretai://inbox``, both ways a client can ask: it
  publishes ``ResourceUpdated`` on the server's subscription bus (the SDK's
  ``subscriptions/listen`` stream, protocol 2026-07-28) and, in the same step, sends
  ``notifications/resources/updated`` to the session that subscribed the classic way
  (``resources/subscribe``, the protocol before it; ``Subscribers``). The client reads the
  resource again, or calls ``read_inbox`` after its cursor.

A client that goes away mid-wait ends the session; the threads stop, the lease is freed
with the process, and what the drain committed stays in the store (what it had not
acknowledged the relay gives again). Nothing is left claimed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams

from muretai_cli.errors import MuretaiError

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.mcpserver import MCPServer
    from mcp.server.session import ServerSession

    from muretai_cli.home import Identity, ListenerLease
    from muretai_cli.inbox.store import IdentityStore

INBOX_URI = "muretai://inbox"
LISTEN_WAIT = 25  # seconds a listen is held at the relay
RETRY_SECONDS = 5.0  # after a relay that failed, before listening again
WATCH_TICK = 1.0  # how often the watcher looks whether the session ended


def _note(text: str) -> None:
    """The server's own diagnostics go to stderr (stdout is the MCP stream)."""
    print(f"muretai mcp: {text}", file=sys.stderr, flush=True)


def _known(uri: str) -> str:
    """``uri`` when it is a resource that can be subscribed, else the SDK's refusal: the
    JSON-RPC error it gives for reading an unknown resource (invalid params, the uri)."""
    if uri != INBOX_URI:
        raise MCPError(code=INVALID_PARAMS, message=f"no resource {uri[:200]} to subscribe "
                                                    f"to: only {INBOX_URI}",
                       data={"uri": uri[:200]})
    return uri


class Subscribers:
    """Classic subscriptions: ``resources/subscribe {uri}`` (protocol 2025-11-25 and before)
    until ``resources/unsubscribe {uri}``; each update is ``notifications/resources/updated``
    on the subscriber's session. Over stdio a server has one client connection, so this holds,
    per subscribed URI, the session to tell (every request's session of that connection sends
    on its one stream). Handlers and ``tell`` run on the server's event loop."""

    def __init__(self) -> None:
        self._sessions: dict[str, ServerSession] = {}

    async def subscribe(self, ctx: ServerRequestContext[Any],
                        params: SubscribeRequestParams) -> EmptyResult:
        self._sessions[_known(params.uri)] = ctx.session
        return EmptyResult()

    async def unsubscribe(self, _ctx: ServerRequestContext[Any],
                          params: UnsubscribeRequestParams) -> EmptyResult:
        self._sessions.pop(_known(params.uri), None)
        return EmptyResult()

    async def tell(self, uri: str) -> None:
        """``uri`` changed: tell its subscriber (a client gone drops it, the SDK's way)."""
        session = self._sessions.get(uri)
        if session is not None:
            await session.send_resource_updated(uri)

    def register(self, server: MCPServer[Any]) -> None:
        """Serve both methods. ``MCPServer`` has no public door to them: the SDK's way for a
        spec method it does not serve is its low-level ``Server.add_request_handler``
        (``mcp/server/extension.py``, ``MethodBinding``), whose registration also makes the
        handshake's ``capabilities.resources.subscribe`` true (``Server.get_capabilities``)."""
        lowlevel = server._lowlevel_server
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams,
                                     self.subscribe)
        lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams,
                                     self.unsubscribe)


class Listening:
    """One server's listener: its lease, its drain thread and its store watcher."""

    def __init__(self, ident: Identity, db: str | None) -> None:
        self.ident = ident
        self.db = db
        self.bus = InMemorySubscriptionBus()
        self.subscribers = Subscribers()
        self._lease: ListenerLease | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def _store(self) -> IdentityStore:
        from muretai_cli.inbox.store import open_identity_store

        return open_identity_store(self.ident.did, self.db,
                                   fix=f"muretai db init --as {self.ident.name}")

    def register(self, server: MCPServer[Any]) -> None:
        """The ``muretai://inbox`` resource (the newest ``seq`` and who listens), and its
        classic subscriptions."""
        self.subscribers.register(server)

        @server.resource(INBOX_URI, name="inbox", mime_type="application/json",
                         description="This identity's inbox: its latest seq. Updated when a "
                                     "message arrives; read_inbox after your cursor reads it.")
        def inbox() -> str:
            from muretai_cli.home import listener_state

            store = self._store()
            try:
                latest = store.latest_seq()
            finally:
                store.close()
            return json.dumps({"ok": True, "latest": latest,
                               "listener": listener_state(self.ident.did)})

    @contextlib.asynccontextmanager
    async def lifespan(self, _server: object) -> AsyncIterator[dict[str, Any]]:
        """The stdio session's life: listen and watch while it lasts."""
        from muretai_cli.home import Profiles, hold_listener
        from muretai_cli.visit.turn import this_process

        self._loop = asyncio.get_running_loop()
        self._stop.clear()
        self._lease = hold_listener(self.ident.did, holder=this_process())
        relay = Profiles().relay_of(self.ident.did)
        if self._lease is None:
            _note(f"another process holds {self.ident.name}'s relay listener: this server "
                  "only reads the store")
        elif relay is not None:
            self._start(self._drain, relay)
        self._start(self._watch)
        try:
            yield {}
        finally:
            self._stop.set()
            for thread in self._threads:  # a drain mid-listen is left: it is a daemon
                thread.join(timeout=0.5)
            self._threads = []
            if self._lease is not None:
                self._lease.release()
                self._lease = None

    def _start(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True,
                                  name=f"muretai-mcp-{target.__name__.strip('_')}")
        self._threads.append(thread)
        thread.start()

    def _drain(self, relay_url: str) -> None:
        from muretai_cli.inbox.consent import policy_of
        from muretai_cli.net import SafeClient
        from muretai_cli.visit.relay import RelayClient
        from muretai_cli.visit.turn import TurnCheck

        relay = RelayClient(relay_url, lambda s, b: SafeClient(timeout=s, max_bytes=b))
        try:
            store = self._store()
        except MuretaiError as exc:
            _note(f"cannot drain the relay: {exc.code}: {exc.detail}")
            return
        try:
            check = TurnCheck(self.ident.signing_key(), store, relay, policy_of(store))
            while not self._stop.is_set():
                try:
                    check.drain(LISTEN_WAIT)
                except MuretaiError as exc:
                    if exc.code == "superseded":  # a listener on another machine (epochs)
                        _note("another listener took the relay mailbox; this server stops "
                              "listening (it still reads the store)")
                        return
                    _note(f"relay: {exc.code}: {exc.detail}"[:300])
                    self._stop.wait(RETRY_SECONDS)
        finally:
            store.close()

    def _watch(self) -> None:
        from muretai_cli.inbox.reader import READ_LIMIT_MAX, read_after

        try:
            store = self._store()
        except MuretaiError as exc:
            _note(f"cannot watch the store: {exc.code}: {exc.detail}")
            return
        try:
            cursor = store.latest_seq()
            with store.db.changes() as changes:
                while not self._stop.is_set():
                    page = read_after(store, cursor, limit=READ_LIMIT_MAX)
                    if page.entries:
                        self._publish()
                    cursor = page.cursor
                    if not page.more:
                        changes.wait(WATCH_TICK)
        except MuretaiError as exc:
            _note(f"stopped watching the store: {exc.code}: {exc.detail}")
        finally:
            store.close()

    def _publish(self) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop ended with the session
            asyncio.run_coroutine_threadsafe(self._tell(INBOX_URI), loop)

    async def _tell(self, uri: str) -> None:
        """One update, both ways a client can have asked for it."""
        await self.bus.publish(ResourceUpdated(uri=uri))
        await self.subscribers.tell(uri)
