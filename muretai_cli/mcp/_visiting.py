"""The visiting tools: ``contact_and_dm``, ``check_handoff``, ``read_site``, ``invite_accept``.

Each is the library call its shell verb makes (``op dm --connect``, ``handoff check``,
``site check``, ``join``), with the arguments checked first (``_args``) and the result in
the Conventions' shape. What a site or a peer wrote stays data in its own fields.
"""

# No `from __future__ import annotations`: the SDK reads the tools' annotations at run time.
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from muretai_cli.errors import InputError
from muretai_cli.mcp._args import MAX_ID, client_for, did, json_object, required, string, url
from muretai_cli.mcp._results import as_result, guarded, ok, sent_result

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.mcp.server import Tools
    from muretai_cli.visit.send import Sender

__all__ = ["Visiting", "register"]

SITE_TIMEOUT = 15.0  # seconds a site's card and signposts may take, all told
SEND_TIMEOUT = 30.0  # as `op dm`'s default


def _typed(kind: str, description: str) -> Any:
    return Field(default=None, description=description, json_schema_extra={"type": kind})


def _connect(value: Any) -> str | dict[str, Any] | None:
    """``connect``: a card URL (fetched and judged) or a grant (a JSON object)."""
    if value is None:
        return None
    if isinstance(value, str) and value.lower().startswith(("https://", "http://")):
        return url(value, "connect")
    return json_object(value, "connect")


class Visiting:
    """The visiting tools of one server's identity."""

    def __init__(self, tools: "Tools", *, allow_private: bool = False) -> None:
        self.tools = tools
        self.allow_private = allow_private

    def _sender(self, store: "IdentityStore") -> "Sender":
        from muretai_cli.home import ConnectionStore, PinStore, Profiles, TrustList
        from muretai_cli.visit.send import Sender

        ident = self.tools.ident
        key = ident.signing_key()
        return Sender(key, store, ConnectionStore(key.did), client_for, int(time.time()),
                      my_relay=Profiles().relay_of(key.did), timeout=SEND_TIMEOUT,
                      pins=PinStore(), trust=TrustList(), message_key=ident.message_key(),
                      name=ident.name)

    def contact_and_dm(self, to: Any, message: Any, connect: Any, card_url: Any,
                       context: Any) -> dict[str, Any]:
        """``op dm PEER TEXT --connect …``: verify and redeem the grant (``send_dm`` refuses
        a grant another DID issued before anything is sent) or fetch the card, then send."""
        from muretai_cli.seam._limits import MAX_TEXT
        from muretai_cli.visit.send import send_dm

        peer = did(to, "to")
        text = required(message, "message", limit=MAX_TEXT)
        grant_or_url = _connect(connect)
        door = url(card_url, "url", required_=False)
        context_id = string(context, "context", limit=MAX_ID, required=False)
        store = self.tools.store()
        try:
            sender = self._sender(store)
            try:
                report = send_dm(sender, peer, text, connect=grant_or_url, card_url=door,
                                 context_id=context_id)
            except InputError as exc:
                if exc.code not in ("not-connected", "no-address"):
                    raise
                raise InputError(exc.code, exc.detail,
                                 hint="give connect (the peer's card URL, or its grant with "
                                      "url: the door's card or base URL)") from None
        finally:
            store.close()
        return sent_result(report, "contact_and_dm")

    def check_handoff(self, result: Any, origin: Any) -> dict[str, Any]:
        """``handoff check RESULT --origin ORIGIN`` (online, a signed card required, no
        person present): each entry's verdict, and whether a dm entry may be followed."""
        from muretai_cli.home import PinStore, TrustList
        from muretai_cli.urls import base_from_any
        from muretai_cli.visit.handoff import OnlineCards, check_handoff

        doc = json_object(result, "result")
        site = url(origin, "origin")
        base = base_from_any(site or "")
        now = int(time.time())
        with client_for(SITE_TIMEOUT, 1024 * 1024) as client:
            cards = OnlineCards(base, client, now=now, pins=PinStore(), trust=TrustList(),
                                require_signed=True)
            report = check_handoff(doc, cards, person=False, now=now)
        body = report.to_json()
        body.pop("ok", None)
        # "handoff" at the top of a result is an envelope to a reader (and to the lint)
        body["handoffFound"] = body.pop("handoff")
        refused = report.refusal()
        return ok(followable=bool(report.followable),
                  why=None if refused is None else {"code": refused[0], "message": refused[1]},
                  **{k: v for k, v in body.items() if k != "followable"})

    def read_site(self, site: Any) -> dict[str, Any]:
        """``site check URL``'s facts: the card, signposts and what the site tells agents,
        one finding per check, with no score and no remedies."""
        from muretai_cli.home import PinStore
        from muretai_cli.site import check_public, check_site, site_base

        text = url(site, "url")
        base = site_base(text or "")
        check_public(base, allow_private=self.allow_private)
        with client_for(SITE_TIMEOUT, 1024 * 1024) as client:
            report = check_site(base, client=client, now=int(time.time()), pins=PinStore())
        findings = [{k: v for k, v in f.to_json().items() if k != "remedy"}
                    for f in report.findings]
        card = next((f.get("facts") for f in findings if f["check"] == "card"), None)
        return ok(url=report.url, checkedAt=report.checked_at, card=card, findings=findings)

    def invite_accept(self, link: Any, message: Any) -> dict[str, Any]:
        """``join LINK``: verify the invite, keep the inviter, send the signed claim."""
        from muretai_cli.artifacts.invite import MAX_INVITE_TEXT, read_invite
        from muretai_cli.home import Profiles
        from muretai_cli.seam._limits import MAX_TEXT
        from muretai_cli.visit.join import Joiner, join_invite

        pasted = required(link, "link", limit=MAX_INVITE_TEXT)
        first = string(message, "message", limit=MAX_TEXT, required=False)
        invite = read_invite(pasted.strip())
        ident = self.tools.ident
        store = self.tools.store()
        try:
            joiner = Joiner(ident.signing_key(), ident.name, store, client_for,
                            int(time.time()), my_relay=Profiles().relay_of(ident.did),
                            timeout=SEND_TIMEOUT)
            joined = join_invite(joiner, invite, message=first or None)
        finally:
            store.close()
        doc = dict(joined.doc)
        doc["notes"] = list(joined.notes)
        doc["claimState"] = "accepted" if joined.by_door else "queued"
        return as_result(doc, "invite_accept")


async def _off_loop(call: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """A tool that waits on the network runs on a thread: the server keeps answering."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(lambda: guarded(call), abandon_on_cancel=True)


def register(server: "MCPServer", tools: "Tools", *, allow_private: bool = False) -> None:
    """Add the visiting tools to ``server``."""
    visiting = Visiting(tools, allow_private=allow_private)

    @server.tool(description="One-step contact: verify and redeem the peer's grant (or fetch "
                             "its card), then send one signed DM.")
    async def contact_and_dm(
        to: Annotated[Any, _typed("string", "The peer's DID (did:key:z6Mk…).")],
        message: Annotated[Any, _typed("string", "The message text.")],
        connect: Annotated[Any, _typed("string", "The peer's card URL, or its contact grant "
                                                 "(a JSON object).")],
        url: Annotated[Any, _typed("string", "With a grant: the door's card or base URL.")],
        context: Annotated[Any, _typed("string", "Continue this conversation (contextId).")],
    ) -> dict[str, Any]:
        return await _off_loop(lambda: visiting.contact_and_dm(to, message, connect, url, context))

    @server.tool(description="Check a WebMCP tool result's handoff against the site it came "
                             "from: may a dm entry be followed?")
    async def check_handoff(
        result: Annotated[Any, _typed("object", "The tool result (a JSON object).")],
        origin: Annotated[Any, _typed("string", "The site the result came from (base URL).")],
    ) -> dict[str, Any]:
        return await _off_loop(lambda: visiting.check_handoff(result, origin))

    @server.tool(description="What a site tells agents: its card, signposts and handoff "
                             "facts (site check's findings, no score).")
    async def read_site(
        url: Annotated[Any, _typed("string", "The site's base URL or card URL.")],
    ) -> dict[str, Any]:
        return await _off_loop(lambda: visiting.read_site(url))

    @server.tool(description="Accept an invite: its muretai:invite:… text or its link.")
    async def invite_accept(
        link: Annotated[Any, _typed("string", "muretai:invite:…, https://HOST/invitation#d=… "
                                              "or agent://invite?d=…")],
        message: Annotated[Any, _typed("string", "A first message to send after the claim.")],
    ) -> dict[str, Any]:
        return await _off_loop(lambda: visiting.invite_accept(link, message))
