"""``op dm``: send one signed DM to a DID, by whichever way the peer can be reached.

The route is decided in one place (``route``), in order: a card address you name
(``--connect``/``--card-url``: the door's card), a relay you name (``--relay``: the card the
peer published there), then the contact book (``inbox.contacts``): a door this identity
wrote to and heard from, a door or a relay and ``enc_pub`` learned from a verified card,
invite or claim; last, the relay the peer named in an earlier verified message (only a
place to look: its card must verify under the DID and name that relay). A door is knocked
on; a relay with ``enc_pub`` gets the same signed ``message/send`` request, sealed to
``enc_pub`` (empty associated data) and deposited. What the send verified is written back
to the book (a card's door or relay, a door's verified reply), so the next DM needs no
URL.

The outcome is one of four states: ``delivered`` (a door accepted it and its reply was
checked), ``queued`` (a relay holds it for the peer), ``held`` (a door holds a first
contact for its owner's approval: not a failure), ``refused``. What was sent is recorded in
the identity's store either way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from muretai_cli.errors import InputError, PeerRefused, Refused
from muretai_cli.inbox.ladder import Code
from muretai_cli.verdict import Reason, warning

if TYPE_CHECKING:
    from muretai_cli.artifacts.message import Delegated
    from muretai_cli.home import ConnectionStore, PinStore, TrustList
    from muretai_cli.inbox.contacts import ContactBook
    from muretai_cli.inbox.store import IdentityStore, Source
    from muretai_cli.net import ClientFor, SafeClient
    from muretai_cli.seam import SigningKey
    from muretai_cli.visit.dm import DmReport, Target
    from muretai_cli.visit.relay import RelayCard

State = Literal["delivered", "queued", "held", "refused"]
Channel = Literal["door", "relay"]
AWAITING_APPROVAL = Code.AWAITING_APPROVAL


@dataclass(frozen=True, slots=True)
class SendReport:
    state: State
    to: str
    channel: Channel
    message_id: str
    context_id: str | None
    address: str
    reply_to: str | None = None
    request_id: str | None = None
    dm: DmReport | None = None
    deposit: Mapping[str, Any] | None = None
    route: str = ""
    already_held: bool = False
    reasons: list[Reason] = field(default_factory=list)
    refusal: Mapping[str, Any] | None = None  # the door's awaiting-approval answer, untrusted
    to_name: str | None = None  # the owner's name for the peer (the contact book's)

    @property
    def exit_code(self) -> int:
        if self.dm is not None and self.state == "delivered":
            return self.dm.exit_code
        return 0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ok": self.exit_code == 0, "state": self.state, "to": self.to,
            "channel": self.channel, "messageId": self.message_id, "contextId": self.context_id,
            "address": self.address, "route": self.route, "replyTo": self.reply_to,
            "requestId": self.request_id, "toName": self.to_name,
        }
        if self.already_held:
            out["alreadyHeld"] = True
        if self.deposit is not None:
            out["deposit"] = dict(self.deposit)
        if self.refusal is not None:
            out.update({k: v for k, v in self.refusal.items() if k not in out})
        if self.dm is not None:
            dm = self.dm.to_json()
            dm.pop("ok", None)
            out.update({k: v for k, v in dm.items() if k not in out})
        out.setdefault("receipt", None)  # the door's receipt, and the answer: none yet
        out.setdefault("reply", None)
        out["warnings"] = [r.to_json() for r in self.reasons]
        return out


@dataclass
class Sender:
    """Everything one ``op dm`` needs: who sends, its store, and how it reaches the net."""

    key: SigningKey
    store: IdentityStore
    connections: ConnectionStore
    client_for: ClientFor
    now: int
    my_relay: str | None = None
    timeout: float = 30.0
    max_bytes: int = 1024 * 1024
    pins: PinStore | None = None
    trust: TrustList | None = None
    # Headers signing each request to a door (Web Bot Auth, ``--wba``); relays are not signed.
    signer: Callable[[str], Mapping[str, str]] | None = None
    # What signs the messages: the op key for the root after ``id rotate`` (None: ``key``).
    message_key: SigningKey | Delegated | None = None
    # The identity's name, for the command a warning gives (``card publish --as NAME``).
    name: str | None = None

    @property
    def book(self) -> ContactBook:
        """The identity's contact book: where the route is looked up and learned."""
        from muretai_cli.inbox.contacts import ContactBook

        return ContactBook(self.key.did, self.store, self.connections)

    def client(self) -> SafeClient:
        """A client for the door's card and the knock (signed when ``signer`` is set)."""
        client = self.client_for(self.timeout, self.max_bytes)
        client.signer = self.signer
        return client


def send_dm(sender: Sender, to_did: str, text: str, *,
            connect: str | Mapping[str, Any] | None = None, card_url: str | None = None,
            relay_url: str | None = None, context_id: str | None = None,
            reply_to: str | None = None,
            extra_metadata: Mapping[str, Any] | None = None) -> SendReport:
    """Route, send and record one signed DM; see the module's docstring. ``extra_metadata``
    rides beside the signed fields (unsigned: an introduction's ``vc``, a gift's ``held_vc``)."""
    from dataclasses import replace

    report = _send(sender, to_did, text, connect=connect, card_url=card_url,
                   relay_url=relay_url, context_id=context_id, reply_to=reply_to,
                   extra_metadata=extra_metadata)
    return replace(report, to_name=sender.book.name_of(report.to))


def _send(sender: Sender, to_did: str, text: str, *,
          connect: str | Mapping[str, Any] | None, card_url: str | None,
          relay_url: str | None, context_id: str | None, reply_to: str | None,
          extra_metadata: Mapping[str, Any] | None = None) -> SendReport:
    if not text:
        raise InputError("empty-message", "the message is empty")
    if to_did == sender.key.did:
        raise InputError("to-self", "that DID is this identity's own")
    reasons: list[Reason] = []
    if reply_to is not None:
        answered = sender.store.received(to_did, reply_to)
        if answered is None:
            reasons.append(warning("reply-to-unknown", f"no message {reply_to[:80]} from "
                                                      f"{to_did} is in your store; replyTo is "
                                                      "sent as given"))
        elif context_id is None:
            context_id = answered["contextId"]
    pending = sender.store.pending_held(to_did, text)
    if pending is not None:
        # Sent before and held at the door: sending it again would deliver it twice once
        # the owner approves. Report the pending one.
        return SendReport("held", to_did, pending["channel"], pending["messageId"],
                          pending["contextId"], "", pending["replyTo"], pending["requestId"],
                          route="pending", already_held=True, reasons=reasons)
    metadata: dict[str, Any] | None = {"relay": sender.my_relay} if sender.my_relay else None
    if extra_metadata:
        metadata = {**(metadata or {}), **extra_metadata}
    reasons += _reply_path(sender)
    way = route(sender, to_did, connect=connect, card_url=card_url, relay_url=relay_url)
    if way.target is not None:
        return _knock(sender, way.target, text, context_id, reply_to, metadata, way.name,
                      reasons)
    return _deposit(sender, way, text, context_id, reply_to, metadata, reasons)


@dataclass(frozen=True, slots=True)
class Route:
    """How one DM goes: knocked on a door (``target``), or deposited at ``relay`` sealed to
    ``enc_pub``; ``name`` says what chose it (card, relay-card, connection, contact,
    peer-relay), ``learned`` the source the book records a relay under once it is used."""

    did: str
    name: str
    target: Target | None = None
    relay: str | None = None
    enc_pub: str | None = None
    learned: Source | None = None


def route(sender: Sender, to_did: str, *, connect: str | Mapping[str, Any] | None = None,
          card_url: str | None = None, relay_url: str | None = None) -> Route:
    """The one place that decides how ``to_did`` is reached; see the module's docstring.
    ``InputError`` ``not-connected`` when nothing says how."""
    if connect is not None or card_url is not None:
        return Route(to_did, "card", _door_target(sender, to_did, connect=connect,
                                                  card_url=card_url))
    if relay_url is not None:
        return _by_card(sender, _relay_card(sender, relay_url, to_did, require_relay=False),
                        "relay-card")
    if sender.connections.get(to_did) is not None:
        return Route(to_did, "connection", _door_target(sender, to_did, connect=None,
                                                        card_url=None))
    known = sender.book.get(to_did)
    if known is not None and known.door:
        return Route(to_did, "contact", _door_target(sender, to_did, connect=known.door,
                                                     card_url=None))
    if known is not None and known.relay and known.enc_pub:
        return Route(to_did, "contact", relay=known.relay, enc_pub=known.enc_pub)
    named = sender.store.peer_relay(to_did)
    if named is not None:
        return _by_card(sender, _relay_card(sender, named, to_did, require_relay=True),
                        "peer-relay")
    raise InputError("not-connected", f"no way to reach {to_did} is known yet",
                     hint="give --relay URL (the peer's relay), --card-url URL or --connect "
                          "CARD_URL")


def _reply_path(sender: Sender) -> list[Reason]:
    """A warning when the relay this message names (``metadata.relay``) holds no card a peer
    can reply through: none for this DID, or one naming another relay or no ``enc_pub``
    (the peer's reply looks it up and refuses such a card). Nothing when the relay cannot be
    asked: the message is still worth sending."""
    from muretai_cli.errors import MuretaiError
    from muretai_cli.visit.relay import RelayClient, relay_base

    if not sender.my_relay:
        return []
    fix = f"publish it: `muretai card publish --as {sender.name or 'NAME'}`"
    relay = RelayClient(sender.my_relay, sender.client_for, timeout=sender.timeout)
    try:
        card = relay.card(sender.key.did, now=sender.now)
    except Refused as exc:
        if exc.code not in ("no-card", "card-refused"):
            return []
        return [warning("card-not-published", f"{relay.url} holds no usable card for "
                                              f"{sender.key.did} ({exc.code}), so the peer "
                                              f"cannot reply through it; {fix}")]
    except MuretaiError:
        return []
    named = card.relay
    if named is None or relay_base(named).text != relay.url or card.enc_pub is None \
            or card.enc_pub != sender.key.enc_pub:
        return [warning("card-not-published", f"the card {relay.url} holds for "
                                              f"{sender.key.did} does not name this relay "
                                              "and this key's enc_pub, so the peer cannot "
                                              f"reply through it; {fix}")]
    return []


def _door_target(sender: Sender, to_did: str, *, connect: str | Mapping[str, Any] | None,
                 card_url: str | None) -> Target:
    from muretai_cli.visit.dm import resolve_target

    with sender.client() as client:
        return resolve_target(to_did, connect=connect, card_url=card_url, client=client,
                              now=sender.now, connections=sender.connections,
                              pins=sender.pins, trust=sender.trust)


def _relay_card(sender: Sender, relay_url: str, to_did: str, *, require_relay: bool
                ) -> RelayCard:
    """The peer's card from a relay, verified under ``to_did``; with ``require_relay``
    (a relay the peer only named in a message) it must also name that relay."""
    from muretai_cli.visit.relay import RelayClient, card_freshness, relay_base

    relay = RelayClient(relay_url, sender.client_for, timeout=sender.timeout)
    card = relay.card(to_did, now=sender.now)
    card_freshness(card, sender.now)
    if require_relay:
        named = card.relay
        if named is None or relay_base(named).text != relay.url or card.enc_pub is None:
            raise Refused("relay-not-on-card", f"{to_did} named the relay {relay.url}, but "
                                               "the card there does not name that relay and "
                                               "an enc_pub; nothing was sent")
    return card


def _by_card(sender: Sender, card: RelayCard, name: str) -> Route:
    if card.url:
        return Route(card.did, name, _door_target(sender, card.did, connect=card.url,
                                                  card_url=None))
    if card.relay is None or card.enc_pub is None:
        raise Refused("unreachable-card", f"the card of {card.did} names neither a door url "
                                          "nor a relay and enc_pub")
    return Route(card.did, name, relay=card.relay, enc_pub=card.enc_pub, learned="card")


def _knock(sender: Sender, target: Target, text: str, context_id: str | None,
           reply_to: str | None, metadata: Mapping[str, Any] | None, route: str,
           reasons: list[Reason]) -> SendReport:
    from muretai_cli.visit.dm import deliver

    try:
        with sender.client() as client:
            report = deliver(sender.key, target, text, client=client, now=sender.now,
                             connections=sender.connections, context_id=context_id,
                             reply_to=reply_to, metadata=metadata,
                             message_key=sender.message_key)
    except PeerRefused as exc:
        sent = exc.data.get("sent")
        if not isinstance(sent, str):
            raise
        raw_context = exc.data.get("contextId")
        context = raw_context if isinstance(raw_context, str) else None
        message = {"messageId": sent, "contextId": context, "text": text,
                   "timestamp": sender.now}
        rpc = exc.data.get("rpcError")
        gate = rpc.get("data") if isinstance(rpc, dict) else None
        if isinstance(rpc, dict) and rpc.get("code") == AWAITING_APPROVAL:
            request_id = gate.get("requestId") if isinstance(gate, dict) else None
            request_id = request_id if isinstance(request_id, str) else None
            sender.store.record_sent(peer=target.door_did, message=message, channel="door",
                                     state="held", now=sender.now, address=target.endpoint,
                                     reply_to=reply_to, request_id=request_id)
            _learn_door(sender, target, verified=False)
            return SendReport("held", target.door_did, "door", sent, context,
                              target.endpoint, reply_to, request_id, route=route,
                              reasons=reasons, refusal=exc.data)
        sender.store.record_sent(peer=target.door_did, message=message, channel="door",
                                 state="refused", now=sender.now, address=target.endpoint,
                                 reply_to=reply_to)
        exc.data["state"] = "refused"
        raise
    sender.store.record_sent(peer=target.door_did, message=dict(report.message),
                             channel="door", state="delivered", now=sender.now,
                             address=target.endpoint, reply_to=reply_to)
    _learn_door(sender, target, verified=report.reply.verdict.ok)
    return SendReport("delivered", target.door_did, "door", report.sent_id,
                      report.message.get("contextId"), target.endpoint, reply_to, dm=report,
                      route=route, reasons=reasons)


def _learn_door(sender: Sender, target: Target, *, verified: bool) -> None:
    """The book learns the door a verified card named (the door answered: it is there),
    and that a verified reply came back from it (an exchange)."""
    if target.card is not None and target.card.ok:
        sender.book.learn(target.door_did, source="card", now=sender.now,
                          door=target.base.text)
    if verified:
        sender.book.learn(target.door_did, source="exchange", now=sender.now)


def _deposit(sender: Sender, way: Route, text: str, context_id: str | None,
             reply_to: str | None, metadata: Mapping[str, Any] | None,
             reasons: list[Reason]) -> SendReport:
    from muretai_cli.artifacts.message import build_message_send, new_context_id, signed_message
    from muretai_cli.seam import canonical_bytes, seal_box
    from muretai_cli.visit.relay import RelayClient

    if way.relay is None or way.enc_pub is None:  # the route was chosen for having both
        raise Refused("unreachable-identity", f"the card of {way.did} names no relay and "
                                              "enc_pub to deposit with")
    relay = RelayClient(way.relay, sender.client_for, timeout=sender.timeout)
    message = signed_message(sender.message_key or sender.key, to=way.did, text=text,
                             now=sender.now,
                             context_id=context_id or new_context_id(), reply_to=reply_to,
                             metadata=metadata)
    request = build_message_send(message)
    try:
        blob = seal_box(sender.key, way.enc_pub, canonical_bytes(request), ad=b"")
    except Refused as exc:
        raise Refused(exc.code, f"the card of {way.did} carries an unusable enc_pub: "
                                f"{exc.detail}") from None
    deposit = relay.deposit(sender.key, to=way.did, blob=blob)
    if way.learned is not None:  # a verified card named this relay and enc_pub
        sender.book.learn(way.did, source=way.learned, now=sender.now, relay=way.relay,
                          enc_pub=way.enc_pub)
    six = {"messageId": message["messageId"], "contextId": message.get("contextId"),
           "text": text, "timestamp": sender.now}
    sender.store.record_sent(peer=way.did, message=six, channel="relay", state="queued",
                             now=sender.now, address=relay.url, reply_to=reply_to)
    return SendReport("queued", way.did, "relay", message["messageId"], six["contextId"],
                      relay.url, reply_to, deposit=deposit, route=way.name, reasons=reasons)
