"""``op dm PEER TEXT --wait-reply [S]``: send, then wait for the reply to that message.

An inline answer that is a reply (not the door's receipt) is the reply at once; else the
wait reads the store after the cursor taken before the send (``visit.replies``), draining
this identity's relay meanwhile when it has one. Time up: exit 5 ``timeout``, the send's
state as it was, ``reply`` null.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from muretai_cli.cli._json import emit_json
from muretai_cli.cli._out import note, say
from muretai_cli.cli._text import safe

if TYPE_CHECKING:
    from collections.abc import Callable

    from muretai_cli.home import Identity
    from muretai_cli.inbox.store import IdentityStore
    from muretai_cli.visit.replies import Drain
    from muretai_cli.visit.send import SendReport

TIMEOUT_EXIT = 5  # the script asked for the reply, and none came in time (DeadlineExceeded's)


def drain_for(ident: Identity, db: str | None) -> Drain | None:
    """The relay drain of a wait (None: the identity has no relay)."""
    from muretai_cli.cli._door import open_store
    from muretai_cli.cli._visitout import client_for
    from muretai_cli.home import Profiles
    from muretai_cli.visit.replies import relay_drain

    relay_url = Profiles().relay_of(ident.did)
    if relay_url is None:
        return None
    hint = f"the relay did not answer in time; `muretai doctor --as {ident.name}` checks it"
    return relay_drain(ident.signing_key(), relay_url, lambda: open_store(ident, db),
                       lambda seconds, max_bytes: client_for(seconds, max_bytes,
                                                             deadline_hint=hint))


def answered_inline(report: SendReport) -> bool:
    """The knock's own answer settles the wait: a verified reply, or an unverified answer
    (exit 1, nothing to wait for: the check failed)."""
    dm = report.dm
    return report.state == "delivered" and dm is not None and (dm.exit_code != 0
                                                                or not dm.receipt)


def finish(report: SendReport, store: IdentityStore, *, after: int, seconds: int,
           context: str | None, drain: Drain | None, json_out: bool,
           render: Callable[[SendReport, bool], None]) -> None:
    """Wait (unless the knock was answered), then one result: the send and its reply."""
    from muretai_cli.visit.replies import ReplyScope, await_reply

    if answered_inline(report):
        if json_out:
            emit_json({**report.to_json(), "timedOut": False})
            if report.exit_code:
                raise typer.Exit(report.exit_code)
            return
        render(report, False)
        return
    scope = ReplyScope(report.to, report.message_id, context)
    with _quiet_progress(json_out):
        got = await_reply(store, scope, after=after, timeout=seconds, drain=drain)
    warnings: list[dict[str, Any]] = []
    if got.problem is not None:
        warnings.append({"code": got.problem.code, "message": got.problem.detail,
                         "severity": "warning"})
        note(f"warning: the relay drain stopped: {got.problem.code}: "
             f"{safe(got.problem.detail, limit=300)} (the wait went on over the store)")
    later = (f"read it later: `muretai op --as ME inbox --after {got.latest} --reply-to "
             f"{report.message_id}`")
    if json_out:
        doc = report.to_json()
        doc["warnings"] = [*doc.get("warnings", []), *warnings]
        if got.entry is None:
            doc.update({"ok": False, "error": "timeout",
                        "message": f"no reply from {report.to} within {seconds} s; the "
                                   f"message is {report.state}", "hint": later})
        doc.update({"reply": got.entry, "timedOut": got.entry is None, "latest": got.latest})
        emit_json(doc)
    else:
        render(report, False)
        if got.entry is not None:
            _say_reply(got.entry)
        else:
            note(f"error: timeout: no reply from {report.to} within {seconds} s; the "
                 f"message is {report.state}\n  hint: {later}")
    if got.entry is None:
        raise typer.Exit(TIMEOUT_EXIT)


def _say_reply(entry: dict[str, Any]) -> None:
    from muretai_cli.cli._opdoor import message_lines

    lines = message_lines({**entry, "direction": "in", "peer": entry["from"]})
    say(f"reply  seq {entry['seq']}  {lines[0]}")
    for line in lines[1:]:
        say(line)


def _quiet_progress(json_out: bool) -> Any:
    from contextlib import nullcontext

    from muretai_cli.cli._visitout import progress

    return nullcontext() if json_out else progress("waiting for the reply")
