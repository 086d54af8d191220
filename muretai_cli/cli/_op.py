"""``muretai op [--as NAME] ...``: everything done as one of your identities.

``--as NAME`` may come anywhere on the line (``op contact dm DID hi --as me``), and
``$MURETAI_AS`` names a default. Help needs neither. Who the commands act as is
``_acting``'s (each subcommand asks it), so no command module imports this one.
"""

from __future__ import annotations

import typer

from muretai_cli.cli import _door, _opcontacts, _opconv, _opdoor, _opintro, _opvisit, _vouch
from muretai_cli.cli._acting import acting_as
from muretai_cli.cli._tree import AsGroup

app = typer.Typer(cls=AsGroup, no_args_is_help=True,
                  help="Act as one of your identities (--as NAME, or $MURETAI_AS): contacts "
                       "and grants, DMs, inbox, held requests, senders, following handoffs.")

app.callback()(acting_as)


# One `contact` group: grants you issue (issue, grants, revoke) and doors you write to (dm,
# list). It lives under `op`; the top-level `muretai contact ...` is its hidden alias.
contact_app = _opvisit.contact_app
contact_app.callback()(acting_as)
_door.register_contact(contact_app)
app.add_typer(contact_app, name="contact")
app.command("dm", context_settings=_opvisit.DM_SETTINGS)(_opvisit.dm)
app.add_typer(_opvisit.handoff_app, name="handoff")
_opdoor.register(app)
_opconv.register(app)
_opcontacts.register(app, contact_app)
# `op intro ask`, `op introduce SUBJECT --to TARGET | list`, `op intros` (the gate's), and the
# proposal and revocation verbs of vouch's in the same `op introduce` group
_opintro.register(app)
_vouch.register_vouch(_opintro.introduce_app)
