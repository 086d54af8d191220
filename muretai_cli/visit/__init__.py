"""The visiting side: fetch and judge a card, check a handoff, send a signed DM.

    card.py     URL -> canonical base -> card + envelope -> CardCheck (+ pin)
    handoff.py  a tool result's handoff entries, each with a verdict and named reasons
    dm.py       grant verdict -> redeem -> one signed POST -> reply verdict -> connection

Nothing here prints; the network is reached only through ``muretai_cli.net`` (loaded
lazily, so offline checks never import httpx). ``visit`` never imports ``door``.
"""

# The room's public surface: its modules (each imported on first use, never here).
__all__ = ["card", "dm", "handoff", "introduce", "join", "offline", "probe", "relay",
           "remedies", "replies", "send", "signposts", "turn", "vouch", "wba"]
