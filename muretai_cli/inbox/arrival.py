"""One receiving pipeline, whatever carried the message (a door POST, a relay drain):

    params -> ``read_message`` (A2A shape, text size, the six fields, recipient, signer,
    freshness) -> an ``Arrival`` -> the caller's replay lookup -> ``Arrival.verify``
    (the signature) -> rate -> consent -> the store (which takes the ``Arrival``).

Each stage refuses with an ``RpcError`` (a JSON-RPC code of ``ladder.Code`` and a rule name).
The caller names the recipient (``me``): it is never taken from the message. Each way in
passes its own freshness ``Window`` (the door's ±300 s, a relay's days). The table of stages
and codes is in ``docs/door.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from muretai_cli.errors import MuretaiError
from muretai_cli.inbox import ladder
from muretai_cli.inbox.ladder import Code, RpcError
from muretai_cli.seam import MESSAGE_WINDOW

__all__ = ["DOOR_WINDOW", "Arrival", "Channel", "Window", "read_message"]

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

    def verify(self) -> None:
        """The signature, through the seam's one boundary (``seam.verify_envelope``), or
        ``RpcError`` (``Code.SIGNATURE``) naming the seam's reason.

        The one place the verifying key is chosen: today the root key the sender's did:key
        names; an operational key an attached KeyState delegates would be chosen here.
        ``to`` is the recipient ``read_message`` checked against the caller's ``me``."""
        from muretai_cli.seam import verify_envelope

        try:
            verify_envelope({**self.fields(), "sig": self.sig}, to_did=self.to)
        except MuretaiError as exc:
            raise ladder.refused(Code.SIGNATURE, exc) from None


def read_message(params: dict[str, Any], *, me: str, now: int, window: Window,
                 terms: dict[str, Any] | None = None, signer: str | None = None) -> Arrival:
    """``params`` of a ``message/send`` to an ``Arrival``, in order: the A2A shape, the text
    size (before any cryptography), the six fields (a keyless walk-in is told ``terms``),
    the recipient (``me``, the caller's own DID), the signer (``signer``: the DID that
    carried it, when the transport vouches for one) and freshness (``window``). Nothing
    is read from a store; the signature is ``verify``'s."""
    env = ladder.a2a_message(params)
    ladder.text_size(env["text"])
    fields = ladder.six(env, terms if terms is not None else {})
    if fields["to"] != me:
        raise RpcError(Code.NOT_FOR_ME, "wrong-recipient",
                       detail="the message is addressed to someone else")
    if signer is not None and fields["from"] != signer:
        raise RpcError(Code.SIGNATURE, "signer-not-depositor",
                       detail="the message's from is not the DID that deposited it")
    window.judge(fields["timestamp"], now)
    return Arrival(fields["contextId"], fields["from"], fields["messageId"], fields["text"],
                   fields["timestamp"], fields["to"], env["sig"], relay=env["relay"],
                   reply_hint=env["replyTo"])
