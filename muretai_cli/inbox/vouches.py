"""What the trust gate asks about an introduction beyond its own signature: whether its
issuer revoked it, and where the owner's review of its proposal stands.

``consent`` asks a ``VouchBook``; the door, the relay drain and turn-check give it
``NO_VOUCH_BOOK`` (nothing revoked, nothing proposed) until a book that reads the issuers'
published lists and the owner's proposal rows is given in its place.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any, Literal, Protocol

__all__ = ["NO_VOUCH_BOOK", "NoVouchBook", "ProposalState", "VouchBook", "mark_requests"]

ProposalState = Literal["pending", "approved", "declined"]


class VouchBook(Protocol):
    """The gate's two questions about a verified introduction."""

    def revoked(self, issuer: str, credential_id: str, endpoint: str | None) -> bool:
        """Whether ``issuer`` revoked ``credential_id`` (``endpoint``: the credential's
        ``issuerEndpoint``, where its list may be published; None when it names none)."""
        ...

    def proposal(self, credential_id: str) -> Literal["pending", "approved", "declined"] | None:
        """The owner's review of the issuer's proposal of this credential, or None when
        none was proposed here."""
        ...

    def review(self, credential_id: str) -> tuple[ProposalState | None, str | None]:
        """``proposal``'s answer, and the ``signed_digest`` of the proposal's credential as
        it verified when it arrived (None when none was proposed here): one read."""
        ...


class NoVouchBook:
    """Nothing revoked, no proposals."""

    def revoked(self, issuer: str, credential_id: str, endpoint: str | None) -> bool:
        return False

    def proposal(self, credential_id: str) -> Literal["pending", "approved", "declined"] | None:
        return None

    def review(self, credential_id: str) -> tuple[ProposalState | None, str | None]:
        return None, None


NO_VOUCH_BOOK: VouchBook = NoVouchBook()


def mark_requests(entries: Sequence[MutableMapping[str, Any]]) -> None:
    """Mark each received message that is an introduction request (text
    ``introduce-me-to:`` + a DID) with ``introductionRequest`` {from, for, note}: who asks,
    for whom, and the text of the asker's next message in that conversation (its note), so
    every view shows it as a request, not as plain text. ``entries``: inbox entries (``from``
    or ``peer``, ``contextId``, ``text``, ``direction`` when both ways), in order."""
    from muretai_cli.artifacts._wording import REQUEST_PREFIX

    for i, entry in enumerate(entries):
        text = entry.get("text")
        sender = entry.get("from") or entry.get("peer")
        if entry.get("direction", "in") != "in" or not isinstance(text, str) \
                or not text.startswith(REQUEST_PREFIX):
            continue
        target = text[len(REQUEST_PREFIX):].strip()
        if not target.startswith("did:") or len(target) > 256:
            continue
        note = next((e.get("text") for e in entries[i + 1:]
                     if (e.get("from") or e.get("peer")) == sender
                     and e.get("contextId") == entry.get("contextId")
                     and e.get("direction", "in") == "in"), None)
        entry["introductionRequest"] = {"from": sender, "for": target, "note": note}
