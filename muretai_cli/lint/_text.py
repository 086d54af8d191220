"""Text scans for what must not travel in relayed fields: secrets and agent instructions.

Each pattern is precompiled once and names what it looks for, so a finding can say which
piece of text tripped it. The scans run only on ``message``, ``agentHint`` and ``question``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# One pass per string: the alternation fails fast on ordinary prose. Site text is hostile, so
# every pattern runs in linear time: a match may start only where a run of token characters
# starts (``_RUN_START``), never at each ``sk-`` or ``eyJ`` inside one run -- with ``\b``,
# ``"sk-" * 30000`` restarted at every repetition and rescanned the rest (quadratic).
_RUN_START = r"(?<![A-Za-z0-9_-])"
_SECRET = re.compile(
    r"(?P<pem>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----)"
    r"|(?P<jwt>" + _RUN_START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"
    r"|(?P<bearer>\b(?i:bearer)[ \t]+[A-Za-z0-9._~+/-]{16,}=*)"
    r"|(?P<api>" + _RUN_START + r"(?:sk|rk)[-_][A-Za-z0-9_-]*?[A-Za-z0-9]{16,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}"
    r"|\bxox[abpr]-[A-Za-z0-9-]{10,}|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_-]{35})"
    r"|(?P<hex>(?<![0-9A-Za-z])(?:0x)?[0-9a-fA-F]{64}(?![0-9A-Za-z]))"
)
# A 64-hex value is a seed when the words just before it say so.
_SEED_LABEL = re.compile(r"(?i)(?:seed|secret|private|priv\b|signing[ _-]?key)[^0-9a-zA-Z]{0,12}"
                         r"(?:[a-z]+[^0-9a-zA-Z]{1,3}){0,2}\Z")
_SECRET_RULE = {"pem": "secret-private-key", "jwt": "secret-jwt", "bearer": "secret-bearer",
                "api": "secret-api-key"}

_AGENT = r"(?:ai|(?:ai\s+)?assistant|ai\s+agent|llm|language\s+model|chatbot|copilot)"
_INSTRUCTION = re.compile(
    r"(?i)"
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)*"
    r"(?:previous|prior|above|earlier|preceding|system|original)\s+"
    r"(?:instructions?|messages?|prompts?|rules|guidelines|context)\b"
    r"|\b(?:as\s+an?|dear|attention,?|note\s+to\s+(?:the\s+)?|hey,?)\s+" + _AGENT + r"\b"
    r"|^\s*(?:ai|assistant|agent|llm|model|claude|gpt|chatgpt|system)\s*[:,]"
    r"|\byou\s+are\s+(?:an?\s+|the\s+)?(?:ai|assistant|agent|language\s+model|llm)\b"
    r"|\b(?:call|invoke|execute|trigger)\s+(?:the\s+|this\s+|that\s+)?"
    r"[`'\"]?[\w.-]*[`'\"]?\s*(?:tool|function)\b"
    r"|\b(?:call|invoke)\s+`?[a-z][a-z0-9]*_[a-z0-9_]+`?"
    r"|\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention\s+(?:this\s+)?to|show|reveal\s+"
    r"(?:this\s+)?to|let)\s+(?:the\s+|your\s+)?(?:user|human|person)\b"
    r"|\bwithout\s+(?:telling|informing|asking)\s+(?:the\s+|your\s+)?(?:user|human|person)\b"
    r"|\b(?:system\s+prompt|developer\s+message|new\s+instructions)\b"
    r"|<\s*/?\s*(?:system|instructions?)\s*>|\[/?(?:system|INST)\]"
)
_SNIPPET = 60
# Cheap gates in front of the two scans: every instruction pattern needs one of these words
# (or an underscore, for a tool name); every secret pattern needs a long unbroken run.
_WORDS = re.compile(r"[a-z]+")
_TRIGGER_WORDS = frozenset({
    "ignore", "disregard", "forget", "override", "ai", "assistant", "agent", "llm", "model",
    "chatbot", "copilot", "claude", "gpt", "chatgpt", "system", "tool", "function", "user",
    "human", "person", "developer", "instructions", "instruction", "inst"})
_LONG_RUN = re.compile(r"[A-Za-z0-9_.+/=~-]{16}|-----BEGIN")


def _snippet(text: str, start: int, end: int) -> str:
    piece = text[start:end]
    return piece if len(piece) <= _SNIPPET else piece[:_SNIPPET] + "…"


def _redacted(piece: str) -> str:
    """Enough of a secret to find it again, never the whole of it."""
    return piece[:10] + "…" if len(piece) > 12 else piece[:4] + "…"


def scan_secrets(text: str) -> list[tuple[str, str]]:
    """``(rule, what)`` for each secret-like piece of ``text`` (redacted in ``what``)."""
    if _LONG_RUN.search(text) is None:
        return []
    return list(_secret_pieces(text))


def _secret_pieces(text: str) -> Iterator[tuple[str, str]]:
    for match in _SECRET.finditer(text):
        kind = match.lastgroup or "hex"
        piece = match.group()
        if kind == "hex":
            label = _SEED_LABEL.search(text, max(0, match.start() - 40), match.start())
            if label:
                yield ("secret-seed",
                       f"64 hex digits after {label.group().strip()!r}: {_redacted(piece)}")
            else:
                yield "hex-64", f"64 hex digits ({_redacted(piece)}); if a seed, remove it"
        else:
            yield _SECRET_RULE[kind], _redacted(piece)


def find_instruction(text: str) -> str | None:
    """The first phrase in ``text`` that addresses an agent or instructs one, if any."""
    if "_" not in text and _TRIGGER_WORDS.isdisjoint(_WORDS.findall(text.lower())):
        return None
    match = _INSTRUCTION.search(text)
    return None if match is None else _snippet(text, match.start(), match.end())


_SPACES = re.compile(r"\s+")


def normalised(text: str) -> str:
    """Case and runs of whitespace ignored: how a reader would compare two sentences."""
    return _SPACES.sub(" ", text).strip().casefold()


def contains_text(outer: str, inner: str) -> bool:
    """Whether ``inner`` appears in ``outer``, case and runs of whitespace ignored."""
    if inner in outer:
        return True
    words = inner.split(None, 1)
    if not words or words[0].casefold() not in outer.casefold():
        return False  # a cheap no: the hint's first word is not even there
    return normalised(inner) in normalised(outer)
