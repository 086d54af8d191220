def conformance() -> None:
    """placeholder"""
