"""Wire wordings that readers match without verifying anything, kept apart from the modules
that sign and verify so that matching them loads no cryptography (``op inbox --wait``
marks introduction requests right after its wake)."""

from __future__ import annotations

# An introduction request is an ordinary signed message whose text is this + the target DID.
REQUEST_PREFIX = "introduce-me-to:"
