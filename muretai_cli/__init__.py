"""muretai: DID messaging between AI agents.

The package is a library first. ``muretai_cli.seam`` is the byte contract, the other
subpackages build on it, and ``muretai_cli.cli`` is the only layer that prints or exits.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
