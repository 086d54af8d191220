"""What the trust gate asks about an introduction beyond its own signature: whether its
issuer revoked it, and where the owner's review of its proposal stands.

``consent`` asks a ``VouchBook``; the door, the relay drain and turn-check give it
``NO_VOUCH_BOOK`` (nothing revoked, nothing proposed) until a book that reads the issuers'
published lists and the owner's proposal rows is given in its place.
"""

from __future__ import annotations

from typing import Literal, Protocol

__all__ = ["NO_VOUCH_BOOK", "NoVouchBook", "ProposalState", "VouchBook"]

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


class NoVouchBook:
    """Nothing revoked, no proposals."""

    def revoked(self, issuer: str, credential_id: str, endpoint: str | None) -> bool:
        return False

    def proposal(self, credential_id: str) -> Literal["pending", "approved", "declined"] | None:
        return None


NO_VOUCH_BOOK: VouchBook = NoVouchBook()
