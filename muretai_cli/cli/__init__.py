"""The command line: parses arguments, calls the library, renders results.

The only layer that prints or exits. Command modules import the library inside each
command, so a command pays only for what it uses (``did resolve`` never loads httpx).

Start-up is part of the product: ``main()`` imports and registers only the command group
named on the command line (all of them for ``--help``, ``--version`` or an unknown name), so
``muretai did resolve`` costs about what a bare Typer app costs. ``app`` (the whole tree)
is built on first access, for tests and for embedding.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import typer

from muretai_cli import __version__

__all__ = ["app", "build_app", "main"]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"muretai {__version__}")
        raise typer.Exit()


def _root_app() -> typer.Typer:
    from muretai_cli.cli._tree import CONTEXT, RootGroup

    root = typer.Typer(
        name="muretai",
        help="DID messaging between AI agents: identities, signed cards, handoffs, signed DMs.",
        no_args_is_help=True,
        cls=RootGroup,
        context_settings=CONTEXT,
        pretty_exceptions_enable=False,
    )

    @root.callback()
    def _root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                     help="Print the version and exit."),
    ) -> None:
        """muretai: DID messaging between AI agents."""

    return root


def _add_id(app: typer.Typer) -> None:
    from muretai_cli.cli import _id, _id_rotate

    _id_rotate.register(_id.app)
    app.add_typer(_id.app, name="id")


def _add_did(app: typer.Typer) -> None:
    from muretai_cli.cli import _did

    app.add_typer(_did.app, name="did")


def _add_sign(app: typer.Typer) -> None:
    from muretai_cli.cli import _sign

    app.add_typer(_sign.app, name="sign")


def _add_verify(app: typer.Typer) -> None:
    from muretai_cli.cli import _verify

    app.add_typer(_verify.app, name="verify")


def _add_conformance(app: typer.Typer) -> None:
    from muretai_cli.cli import _conformance

    app.command("conformance")(_conformance.conformance)


def _add_card(app: typer.Typer) -> None:
    from muretai_cli.cli import _card

    app.add_typer(_card.app, name="card", help="Fetch and verify Agent Cards; manage pins.")


def _add_handoff(app: typer.Typer) -> None:
    from muretai_cli.cli import _handoff

    app.add_typer(_handoff.app, name="handoff", help="Check a WebMCP tool result's handoff "
                                                 "(to follow one: op handoff follow).")


def _add_org(app: typer.Typer) -> None:
    from muretai_cli.cli import _org

    app.add_typer(_org.app, name="org", help="Org memberships and the local trust list.")


def _add_contact(app: typer.Typer) -> None:
    from muretai_cli.cli import _op

    # The old spelling of `op contact` (`contact issue --as NAME ...`), kept as an alias.
    app.add_typer(_op.contact_app, name="contact", hidden=True)


def _add_op(app: typer.Typer) -> None:
    from muretai_cli.cli import _op

    app.add_typer(_op.app, name="op")


def _add_conventions(app: typer.Typer) -> None:
    from muretai_cli.cli import _lint

    app.add_typer(_lint.app, name="conventions", help="Lint WebMCP tool results.")


def _add_serve(app: typer.Typer) -> None:
    from muretai_cli.cli import _door

    _door.register(app)


def _add_schema(app: typer.Typer) -> None:
    from muretai_cli.cli import _schema

    app.add_typer(_schema.app, name="schema")


def _add_site(app: typer.Typer) -> None:
    from muretai_cli.cli import _site

    app.add_typer(_site.app, name="site")


def _add_relay(app: typer.Typer) -> None:
    from muretai_cli.cli import _relay

    app.add_typer(_relay.app, name="relay")


def _add_domain(app: typer.Typer) -> None:
    from muretai_cli.cli import _domain

    app.add_typer(_domain.app, name="domain")


def _add_db(app: typer.Typer) -> None:
    from muretai_cli.cli import _db

    app.add_typer(_db.app, name="db")


def _add_invite(app: typer.Typer) -> None:
    from muretai_cli.cli import _invite

    _invite.register(app)


def _add_join(app: typer.Typer) -> None:
    from muretai_cli.cli import _invite

    _invite.register_join(app)


def _add_probe(app: typer.Typer) -> None:
    from muretai_cli.cli import _probe

    _probe.register(app)


def _add_doctor(app: typer.Typer) -> None:
    from muretai_cli.cli import _doctor

    app.command("doctor")(_doctor.doctor)


def _add_mcp(app: typer.Typer) -> None:
    from muretai_cli.cli import _mcp

    app.command("mcp")(_mcp.mcp)


def _add_demo(app: typer.Typer) -> None:
    from muretai_cli.cli import _demo

    app.command("demo")(_demo.demo)


# Top-level command name -> what registers it, in the order --help lists them.
_REGISTER: dict[str, Callable[[typer.Typer], None]] = {
    "id": _add_id,
    "did": _add_did,
    "sign": _add_sign,
    "verify": _add_verify,
    "conformance": _add_conformance,
    "card": _add_card,
    "handoff": _add_handoff,
    "org": _add_org,
    "contact": _add_contact,
    "op": _add_op,
    "conventions": _add_conventions,
    "serve": _add_serve,
    "relay": _add_relay,
    "domain": _add_domain,
    "db": _add_db,
    "site": _add_site,
    "probe": _add_probe,
    "schema": _add_schema,
    "invite": _add_invite,
    "join": _add_join,
    "doctor": _add_doctor,
    "mcp": _add_mcp,
    "demo": _add_demo,
}


def build_app(only: str | None = None) -> typer.Typer:
    """The command tree: everything, or just the top-level command ``only``."""
    app = _root_app()
    for name, register in _REGISTER.items():
        if only is None or name == only:
            register(app)
    return app


def _invoked(argv: list[str]) -> str | None:
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    return first if first in _REGISTER else None


_FULL: typer.Typer | None = None


def __getattr__(name: str) -> Any:
    global _FULL  # noqa: PLW0603 - the whole tree, built once on first use
    if name == "app":
        if _FULL is None:
            _FULL = build_app()
        return _FULL
    raise AttributeError(f"module 'muretai_cli.cli' has no attribute {name!r}")


def _split_wait(argv: list[str]) -> list[str]:
    """``--wait=N`` as ``--wait N``: ``--wait`` is a flag whose seconds may follow it
    (``op inbox``, ``turn-check``; ``--wait-reply`` of ``op dm`` alike), so both spellings
    and a bare flag work."""
    out: list[str] = []
    for index, arg in enumerate(argv):
        if arg == "--":  # what follows is an argument (a message's text), as it is
            return out + argv[index:]
        split = arg.startswith(("--wait=", "--wait-reply="))
        out.extend(arg.split("=", 1) if split else [arg])
    return out


def _quick_exit() -> None:
    """At this process's exit, after every other ``atexit`` hook, the interpreter's teardown
    no longer walks every object for cycles (``gc.freeze``): that walk was most of a command's
    exit (about 100 ms of 110 here, measured in a process: 100 -> 10 ms), and a script that
    runs ``$(muretai ...)`` waits for the exit, not for the answer. What a command opens it
    closes itself; memory goes back with the process."""
    import atexit
    import gc

    atexit.register(gc.freeze)


def main(argv: Sequence[str] | None = None, *, app: Callable[..., Any] | None = None
         ) -> None:
    """The ``muretai`` command on ``argv`` (default: this process's arguments); ends with
    ``SystemExit`` and the exit code. ``app``: the tree to run instead of the one built for
    ``argv`` (a test running many commands in one process passes the whole tree, its click
    command built once: ``tests/cli_helpers.in_process``)."""
    if argv is None:  # this process is the command
        _quick_exit()
        args = sys.argv[1:] = _split_wait(sys.argv[1:])
    else:
        args = _split_wait(list(argv))
    tree = app if app is not None else build_app(_invoked(args))
    if "--json" not in args:
        tree(args=args, prog_name="muretai")
        return
    # With --json, even a usage error is one JSON document on stdout (and exit 2).
    from typer.exceptions import TyperException

    try:
        code = tree(args=args, prog_name="muretai", standalone_mode=False)
    except typer.Abort:
        sys.exit(1)
    except TyperException as exc:  # click's UsageError/BadParameter, as typer vendors them
        from muretai_cli.cli._json import emit_json

        formatter = getattr(exc, "format_message", None)
        detail = str(formatter()) if callable(formatter) else str(exc)
        emit_json({"ok": False, "error": "usage", "message": detail, "detail": detail})
        sys.stderr.write(f"error: {detail}\n")
        sys.exit(int(getattr(exc, "exit_code", 2)))
    sys.exit(code if isinstance(code, int) else 0)
