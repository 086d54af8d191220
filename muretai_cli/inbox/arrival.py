"""One receiving pipeline, whatever carried the message (a door POST, a relay drain):

    params -> ``read_message`` (A2A shape, text size, the six fields, recipient, signer,
    freshness) -> an ``Arrival`` -> the caller's replay lookup -> ``Arrival.verify``
    (the signature) -> rate -> consent -> the store (which takes the ``Arrival``).

Each stage refuses with an ``RpcError`` (a JSON-RPC code of ``ladder.Code`` and a rule name).
The caller names the recipient (``me``): it is never taken from the message. Each way in
passes its own freshness ``Window`` (the door's ±300 s, a relay's days, a claim's
±300 s at its deposit). The table of stages
and codes is in ``docs/door.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from muretai_cli.errors import MuretaiError
from muretai_cli.inbox import ladder
from muretai_cli.inbox.ladder import Code, RpcError
from muretai_cli.seam import MESSAGE_WINDOW

if TYPE_CHECKING:
    from muretai_cli.artifacts.introduction import Introduction
    from muretai_cli.artifacts.keystate import KeyState

__all__ = ["CLAIM_WINDOW", "DOOR_WINDOW", "Arrival", "Channel", "Window", "read_envelope",
           "read_message"]

Channel = Literal["door", "relay"]
_CHANNELS: tuple[Channel, ...] = ("door", "relay")
_DAY = 24 * 3600


@dataclass(frozen=True, slots=True)
class Window:
    """How far a message's signed timestamp may be from the receiver's clock: ``past``
    seconds behind (refused as ``too_old``), ``ahead`` seconds ahead (``from-the-future``)."""

    past: int
    ahead: int
    too_old: str = "stale"

    def judge(self, timestamp: int, now: int) -> None:
        skew = timestamp - now
        if -skew > self.past:
            raise RpcError(Code.REPLAY_OR_STALE, self.too_old,
                           detail=f"the message is more than {_span(self.past)} old")
        if skew > self.ahead:
            raise RpcError(Code.REPLAY_OR_STALE, "from-the-future",
                           detail=f"the message is dated more than {_span(self.ahead)} ahead")


def _span(seconds: int) -> str:
    return f"{seconds // _DAY} days" if seconds >= _DAY and not seconds % _DAY else f"{seconds} s"


DOOR_WINDOW = Window(MESSAGE_WINDOW, MESSAGE_WINDOW)  # a knock comes now, or not at all
# An onboard/claim is a signed message judged at the moment it arrived (a door POST) or was
# deposited (a relay's ``received``: inbox.relayed judges that moment by its own window).
CLAIM_WINDOW = Window(MESSAGE_WINDOW, MESSAGE_WINDOW)


def _text(name: str, value: object, *, optional: bool = False) -> None:
    if not (isinstance(value, str) or (optional and value is None)):
        raise TypeError(f"an Arrival's {name} is a string{' or None' if optional else ''}")


@dataclass(frozen=True, slots=True)
class Arrival:
    """A received message: its six signed fields and ``sig``, as ``read_message`` read them
    (signature not yet verified: ``verify``), and what the receiver learned beside them.

    ``relay`` (``metadata.relay``, canonical) and ``reply_hint`` (``metadata.replyTo``) are
    unsigned hints; ``reply_to`` is the replyTo the signed fields proved (``proved_reply_to``),
    ``wba`` the door's Web Bot Auth verdict on the request (JSON), ``reply`` the signed reply
    the door gave (JSON), ``deposit_id`` the relay deposit that carried it."""

    context_id: str | None
    sender: str
    message_id: str
    text: str
    timestamp: int
    to: str
    sig: str
    channel: Channel = "door"
    relay: str | None = None
    reply_hint: str | None = None
    reply_to: str | None = None
    wba: str | None = None
    reply: str | None = None
    deposit_id: str | None = None
    # The timestamp as the wire carried it, when that was not the integer ``timestamp`` (a
    # float, a string): the signature is over these bytes (seam §3); nothing stores them.
    signed_timestamp: float | str | None = None
    # The KeyState attached as ``metadata.keystate`` (unverified; ``verify`` judges it).
    keystate: Any = None
    # A first contact's introduction (``metadata.vc``) and a gifted one (``metadata.held_vc``)
    # with the reach it names (door url, relay, enc_pub): JSON objects within
    # ``MAX_VC_CHARS``, unverified (``consent`` judges them).
    vc: Any = None
    held_vc: Any = None
    held_reach: tuple[str | None, str | None, str | None] = (None, None, None)
    # The introduction the gate admitted this first contact on (``consent.judge``): the
    # commit records it (introduced by its issuer, the sender approved) in the same
    # transaction as the message, so the two land together or not at all.
    introduced: Introduction | None = None

    def __post_init__(self) -> None:
        for name in ("sender", "message_id", "text", "to", "sig"):
            _text(name, getattr(self, name))
        for name in ("context_id", "relay", "reply_hint", "reply_to", "wba", "reply",
                     "deposit_id"):
            _text(name, getattr(self, name), optional=True)
        if not isinstance(self.timestamp, int) or isinstance(self.timestamp, bool):
            raise TypeError("an Arrival's timestamp is an integer")
        if self.channel not in _CHANNELS:
            raise TypeError(f"an Arrival's channel is one of {_CHANNELS}")
        for name in ("vc", "held_vc"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), Mapping):
                raise TypeError(f"an Arrival's {name} is a JSON object or None")
        if len(self.held_reach) != 3:
            raise TypeError("an Arrival's held_reach is (url, relay, enc_pub)")
        for part in self.held_reach:
            _text("held_reach", part, optional=True)
        if self.introduced is not None:
            from muretai_cli.artifacts.introduction import Introduction

            if not isinstance(self.introduced, Introduction) \
                    or self.introduced.subject != self.sender:
                raise TypeError("an Arrival's introduced is an Introduction of its sender")

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Arrival:
        """An Arrival from its JSON form (the wire's names: ``from``, ``messageId``, …,
        ``channel``, ``replyTo``, ``depositId``), as a fixture writes one."""
        return cls(doc.get("contextId"), doc["from"], doc["messageId"], doc["text"],
                   doc["timestamp"], doc.get("to", ""), doc["sig"],
                   doc.get("channel", "door"), doc.get("relay") or None, None,
                   doc.get("replyTo"), doc.get("wba"), doc.get("reply"), doc.get("depositId"))

    def fields(self) -> dict[str, Any]:
        """The six signed fields, by their wire names."""
        return {"contextId": self.context_id, "from": self.sender,
                "messageId": self.message_id, "text": self.text,
                "timestamp": self.timestamp, "to": self.to}

    def to_json(self) -> dict[str, Any]:
        """The verified message as ``--on-message`` is given it: six fields, sig, replyTo."""
        return {**self.fields(), "sig": self.sig, "replyTo": self.reply_to}

    def verify(self, *, pinned: str | None = None, now: int | None = None
               ) -> KeyState | None:
        """The signature, or ``RpcError`` naming the seam's reason; returns the KeyState a
        pin store should now keep (None: nothing new).

        The one place the verifying key is chosen: the root key the sender's did:key names,
        or the op key an attached KeyState delegates, once the record verifies under that
        root at ``now`` and against ``pinned`` (the caller's kept record for the sender, as
        stored) -- else ``Code.KEYSTATE_REFUSED`` with the record's own reason (seam §6.1,
        ``docs/seam.md`` §7.1). The bytes checked are the six fields as received; a number
        hazard that does not verify is ``Code.CANNOT_VERIFY``, never a bad signature."""
        import time

        from muretai_cli.artifacts.keystate import message_signer
        from muretai_cli.seam import check_signed_fields

        try:
            choice = message_signer(self.sender, self.keystate, _pinned(self.keystate, pinned),
                                    now=int(time.time()) if now is None else now)
        except MuretaiError as exc:
            raise ladder.refused(Code.KEYSTATE_REFUSED, exc) from None
        signed = self.fields()
        if self.signed_timestamp is not None:
            signed["timestamp"] = self.signed_timestamp
        try:
            check_signed_fields(signed, self.sig, signer=choice.signer_did)
        except MuretaiError as exc:
            code = Code.CANNOT_VERIFY if exc.code == "cannot-verify" else Code.SIGNATURE
            raise ladder.refused(code, exc) from None
        return choice.adopt


def _pinned(inline: object, text: str | None) -> object:
    """The caller's pin as the record to judge: the attached record itself when the pin
    holds it byte for byte (one record, verified once), else the stored JSON."""
    import json

    from muretai_cli.seam import canonical_bytes

    if text is None or inline is None:
        return None
    try:
        if canonical_bytes(inline).decode("utf-8") == text:
            return inline
    except MuretaiError:
        pass
    try:
        return json.loads(text)
    except ValueError:  # a damaged pin is no pin to trust: verify_pin refuses it, closed
        return text


def _seconds(stamp: object) -> int:
    """The epoch second a received timestamp names (a float rounded down), or
    ``Code.REPLAY_OR_STALE`` ``timestamp-not-a-number`` (a string names no moment)."""
    from muretai_cli.seam import timestamp_seconds

    try:
        return timestamp_seconds(stamp)
    except MuretaiError as exc:
        raise ladder.refused(Code.REPLAY_OR_STALE, exc) from None


def read_message(params: dict[str, Any], *, me: str, now: int, window: Window,
                 terms: dict[str, Any] | None = None, signer: str | None = None) -> Arrival:
    """``params`` of a ``message/send`` to an ``Arrival``, in order: the A2A shape, the text
    size (before any cryptography), then ``read_envelope``'s stages (a keyless walk-in is
    told ``terms``). Nothing is read from a store; the signature is ``verify``'s."""
    env = ladder.a2a_message(params)
    ladder.text_size(env["text"])
    arrival = read_envelope(env, me=me, now=now, window=window,
                            terms=terms if terms is not None else {}, signer=signer)
    vc = _credential(env["vc"], strict=True)
    held = _credential(env["heldVc"], strict=False)
    reach = tuple(v if held is not None and isinstance(v, str) and 0 < len(v) <= _MAX_REACH
                  else None for v in env["heldReach"])
    return replace(arrival, relay=env["relay"], reply_hint=env["replyTo"],
                   keystate=env["keystate"], vc=vc, held_vc=held,
                   held_reach=(reach[0], reach[1], reach[2]))


def read_envelope(env: Mapping[str, Any], *, me: str, now: int, window: Window,
                  terms: dict[str, Any] | None = None, signer: str | None = None) -> Arrival:
    """A signed envelope (the six fields and ``sig`` side by side, as ``read_message`` reads
    them out of an A2A message, or as an ``onboard/claim`` carries its message) to an
    ``Arrival``, in order: the six fields present and typed, the recipient (``me``, the
    caller's own DID), the signer (``signer``: the DID that carried it, when the transport
    vouches for one) and freshness (``window``). Unsigned hints are not read here."""
    fields = ladder.six(dict(env), terms if terms is not None else {})
    if fields["to"] != me:
        raise RpcError(Code.NOT_FOR_ME, "wrong-recipient",
                       detail="the message is addressed to someone else")
    if signer is not None and fields["from"] != signer:
        raise RpcError(Code.SIGNATURE, "signer-not-depositor",
                       detail="the message's from is not the DID that deposited it")
    stamp = _seconds(fields["timestamp"])
    window.judge(stamp, now)
    raw = fields["timestamp"]
    return Arrival(fields["contextId"], fields["from"], fields["messageId"], fields["text"],
                   stamp, fields["to"], env["sig"],
                   signed_timestamp=None if type(raw) is int else raw)


_MAX_REACH = 2048  # characters of a gifted reach (a URL, an enc_pub)


def _credential(value: object, *, strict: bool) -> Mapping[str, Any] | None:
    """A carried credential, bounded: a JSON object of at most ``MAX_VC_CHARS`` characters.
    ``strict`` (``metadata.vc``, what the gate judges): anything else is refused as an
    invalid introduction; otherwise (a gift) it is dropped."""
    import json

    from muretai_cli.seam import MAX_VC_CHARS

    if value is None:
        return None
    reason = None
    if not isinstance(value, dict):
        reason = "vc-not-an-object"
    elif len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))) > MAX_VC_CHARS:
        reason = "vc-too-large"
    if reason is None:
        return value  # type: ignore[return-value]
    if strict:
        raise RpcError(Code.INTRODUCTION_INVALID, reason,
                       detail="the introduction the message carries is not a credential of "
                              f"at most {MAX_VC_CHARS} characters")
    return None
