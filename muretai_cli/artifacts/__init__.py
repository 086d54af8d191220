"""Artifacts built on the seam: A2A messages, contact grants, org memberships, handoffs."""

# The room's public surface: its modules (each imported on first use, never here).
__all__ = ["binding", "diddoc", "grant", "handoff", "invite", "keystate", "message", "org",
           "ownerstate", "vouch"]
