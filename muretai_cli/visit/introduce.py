"""Introductions on the visiting side (docs/trust.md, "The flow"): asking an introducer
(``ask``), vouching for a subject (``vouch``: mint, record, propose, gift) and using what one
holds (``first_contact``: the credential and the reach a first DM to its target carries).

Each sends through ``visit.send.send_dm``, the usual DM route: nothing here opens a socket
of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from muretai_cli.errors import Refused

if TYPE_CHECKING:
    from muretai_cli.artifacts.introduction import Introduction
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.visit.send import Sender, SendReport

__all__ = ["Asked", "FirstContact", "Reach", "Vouched", "ask", "first_contact",
           "propose_to_target", "reach_of", "vouch"]

GIFT_TEXT = "introduction: you may now write to {target} (the credential is attached)"


@dataclass(frozen=True, slots=True)
class Asked:
    request: SendReport
    note: SendReport | None = None

    def to_json(self) -> dict[str, Any]:
        return {"ok": True, "request": self.request.to_json(),
                "note": self.note.to_json() if self.note is not None else None}


def ask(sender: Sender, introducer: str, target: str, note: str | None = None, *,
        relay_url: str | None = None) -> Asked:
    """Send ``introducer`` the signed request "introduce me to ``target``" (an ordinary
    message whose text is ``introduce-me-to:`` + target, signed by the root key: what a
    ``requested`` credential embeds), then ``note`` in the same conversation."""
    from muretai_cli.artifacts.introduction import request_text
    from muretai_cli.artifacts.message import new_context_id
    from muretai_cli.seam import public_from_did
    from muretai_cli.visit.send import send_dm

    public_from_did(target)
    if target == introducer:
        raise Refused("bad-target", "the introducer and the target are one DID")
    by_root = replace(sender, message_key=None)  # the request verifies under the root DID
    first = send_dm(by_root, introducer, request_text(target), context_id=new_context_id(),
                    relay_url=relay_url)
    second = None
    if note:
        second = send_dm(sender, introducer, note, context_id=first.context_id,
                         relay_url=relay_url)
    return Asked(first, second)


@dataclass(frozen=True, slots=True)
class Reach:
    """How a target can be reached, as this identity's store and connections know it."""

    url: str | None = None
    relay: str | None = None
    enc_pub: str | None = None

    def metadata(self) -> dict[str, str]:
        out = {"held_vc_url": self.url, "held_vc_relay": self.relay,
               "held_vc_enc_pub": self.enc_pub}
        return {k: v for k, v in out.items() if v}


def reach_of(sender: Sender, did: str) -> Reach:
    """``did``'s door (a remembered connection, or an invite contact's url), relay (an
    invite contact's, or the one it named in a verified message) and enc_pub."""
    from muretai_cli.inbox.invites import InviteStore

    contact = InviteStore(sender.store.db).contact(did)
    connection = sender.connections.get(did)
    url = connection.base if connection is not None else (contact.url if contact else None)
    relay = (contact.relay if contact else None) or sender.store.peer_relay(did)
    return Reach(url or None, relay or None, (contact.enc_pub if contact else None) or None)


@dataclass(frozen=True, slots=True)
class Vouched:
    intro: Introduction
    gift: SendReport | None
    proposal: Mapping[str, Any] | None
    reach: Reach = field(default_factory=Reach)

    def to_json(self) -> dict[str, Any]:
        return {"ok": True, "credential": self.intro.to_json(), **self.intro.facts(),
                "gift": self.gift.to_json() if self.gift is not None else None,
                "proposal": dict(self.proposal) if self.proposal is not None else None,
                "targetReach": {"url": self.reach.url, "relay": self.reach.relay,
                                "encPub": self.reach.enc_pub}}


def propose_to_target(sender: Sender, intro: Introduction, reach: Reach
                      ) -> Mapping[str, Any] | None:
    """``introduce/propose``: the credential proposed to its target, held there for the
    target's review (docs/trust.md), sent to the door the contact book knows (else sealed
    to ``reach``'s relay). A proposal that cannot be sent is reported, never fatal: the
    gift still goes, and the target's own gate still judges the credential."""
    from muretai_cli.artifacts.vouch import Reach as Answerable
    from muretai_cli.errors import MuretaiError
    from muretai_cli.visit.vouch import Peer, propose

    known = sender.book.get(intro.introduced_to)
    door = None
    if known is not None:
        door = known.connection.endpoint if known.connection is not None else known.door
    target = Peer(intro.introduced_to, url=door,
                  relay=(known.relay if known is not None else None) or reach.relay,
                  enc_pub=(known.enc_pub if known is not None else None) or reach.enc_pub)
    try:
        return propose(sender.key, intro.to_json(), target=target, store=sender.store,
                       client_for=sender.client_for, now=sender.now,
                       reach=Answerable(relay=sender.my_relay, enc_pub=sender.key.enc_pub),
                       timeout=sender.timeout)
    except MuretaiError as exc:
        return {"ok": False, "error": exc.code, "message": str(exc)}


def vouch(sender: Sender, subject: str, target: str, *, expertise: Sequence[str] = (),
          trust: int, valid_for: int, proactive: bool = False, gift: bool = True) -> Vouched:
    """Mint an introduction of ``subject`` to ``target``: ``requested`` when a live request
    from ``subject`` for ``target`` is in the inbox, else refused (``no-live-request``)
    unless ``proactive``. Recorded as issued, proposed to the target
    (``propose_to_target``), and gifted to the subject with the target's reach."""
    from muretai_cli.artifacts.introduction import mint_introduction, verify_introduction
    from muretai_cli.seam import INTRO_REQUEST_WINDOW, public_from_did

    public_from_did(subject)
    public_from_did(target)
    me, now = sender.key.did, sender.now
    if me in (subject, target) or subject == target:
        raise Refused("bad-introduction", "the subject, the target and you are three DIDs")
    request = None if proactive else sender.store.live_request(
        subject, target, me=me, since=now - INTRO_REQUEST_WINDOW)
    if request is None and not proactive:
        raise Refused("no-live-request", f"no live request from {subject} to be introduced to "
                                         f"{target} is in your inbox",
                      hint=f"ask them to send one (`muretai op --as THEM intro ask {me} --to "
                           f"{target}`), or vouch unasked with --proactive")
    doc = mint_introduction(sender.key, subject=subject, to=target, now=now,
                            expertise=list(expertise), trust=trust, valid_for=valid_for,
                            request=request)
    intro = verify_introduction(doc, subject=subject, recipient=target, now=now)
    sender.store.record_issued(intro, now)
    reach = reach_of(sender, target)
    proposal = propose_to_target(sender, intro, reach)
    sent = None
    if gift:
        from muretai_cli.visit.send import send_dm

        sent = send_dm(sender, subject, GIFT_TEXT.format(target=target),
                       extra_metadata={"held_vc": intro.to_json(), **reach.metadata()})
    return Vouched(intro, sent, proposal, reach)


@dataclass(frozen=True, slots=True)
class FirstContact:
    """What a DM to a target adds from a held introduction: ``metadata.vc`` and, when the
    target is otherwise unknown, the route the gift named."""

    metadata: Mapping[str, Any]
    card_url: str | None = None
    relay_url: str | None = None
    credential_id: str | None = None


def first_contact(store: IdentityStore, sender: Sender, to_did: str, now: int, *,
                  routed: bool) -> FirstContact | None:
    """The held introduction for ``to_did`` a first DM carries (None: none held, or ``to_did``
    already wrote to this identity: the conversation is open). ``routed``: the caller named
    a route (``--connect``, ``--card-url``, ``--relay``), so the gift's is not used."""
    held = store.held_intros(target=to_did, now=now)
    if not held or store.heard_from(to_did):
        return None
    best = held[0]
    known = routed or sender.connections.get(to_did) is not None \
        or store.peer_relay(to_did) is not None
    card_url = None if known else best["url"]
    relay_url = None if known or card_url else best["relay"]
    return FirstContact({"vc": best["credential"]}, card_url, relay_url, best["id"])
