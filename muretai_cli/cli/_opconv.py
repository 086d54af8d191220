"""``op --as ME turn-check | policy``: the conversation's receiving side (``connections``:
``_opcontacts``)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from muretai_cli.cli._json import emit_json, json_text
from muretai_cli.cli._out import JsonOpt, note, say
from muretai_cli.cli._text import safe
from muretai_cli.errors import InputError

if TYPE_CHECKING:
    from muretai_cli.door.respond import OnMessage, Outcome
    from muretai_cli.visit.turn import TurnCheck

_OUT = threading.Lock()  # the follower's stdout: its events and --exec's reports



def register(op_app: typer.Typer) -> None:
    op_app.command("turn-check", context_settings={"allow_extra_args": True})(turn_check)
    op_app.command("policy")(policy)


def turn_check(
    ctx: typer.Context,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for a message if none is "
                                       "waiting: 25 s, or the seconds given after it (≤ 30).")
                    ] = False,
    follow: Annotated[bool, typer.Option("--follow", help="Keep listening; print each event "
                                         "as it comes (JSON Lines with --json).")] = False,
    exec_cmd: Annotated[str | None, typer.Option(
        "--exec", metavar="CMD", show_default=False,
        help="With --follow: run CMD (no shell) for each message stored, the message as JSON "
             "on stdin, one at a time; a failing or slow CMD is reported, the next still "
             "runs.")] = None,
    exec_timeout: Annotated[str, typer.Option(
        "--exec-timeout", metavar="DURATION",
        help="How long CMD may take before its process group is killed: 5, 1.5s, 2m.")
    ] = "5s",
    json_out: JsonOpt = False,
) -> None:
    """Fetch new mail from this identity's relay and print each message exactly once.

    Each deposit is opened, verified (signed by its depositor, addressed to you, at most 30
    days old), passed through your consent rules (`op policy`), stored, and only then
    acknowledged. What cannot be opened or verified is acknowledged and reported as refused.
    One process per identity listens at the relay (a follower, `muretai mcp`, or this one):
    while another does, this one only shows what that one has stored.
    """
    from muretai_cli.cli._acting import op_identity
    from muretai_cli.cli._opdoor import op_store, wait_seconds
    from muretai_cli.cli._visitout import client_for
    from muretai_cli.home import Profiles, hold_listener
    from muretai_cli.inbox.consent import policy_of
    from muretai_cli.visit.relay import RelayClient
    from muretai_cli.visit.turn import TurnCheck, this_process

    seconds = wait_seconds(wait, list(ctx.args))
    runner = _wake_runner(exec_cmd, exec_timeout, follow)
    ident = op_identity(ctx)
    relay_url = Profiles().relay_of(ident.did)
    if relay_url is None:
        raise InputError("no-relay", f"{ident.name} has no relay",
                         hint=f"set one with `muretai id relay {ident.name} URL`")
    store = op_store(ctx)
    lease = hold_listener(ident.did, holder=this_process())
    try:
        relay = RelayClient(relay_url, lambda seconds, max_bytes: client_for(
            seconds, max_bytes, deadline_hint=_relay_slow_hint(ident.name)))
        check = TurnCheck(ident.signing_key(), store, relay, policy_of(store),
                          at=_kill_seam())
        if lease is None:
            _held_elsewhere(ident.did, ident.name, follow)
        if follow:
            _follow(check, json_out, runner)
        else:
            _once(check, seconds, json_out, listening=lease is not None)
    finally:
        if lease is not None:
            lease.release()
        store.close()


def _held_elsewhere(did: str, name: str, follow: bool) -> None:
    """Another process holds this identity's relay listener: a follower is refused; a
    one-shot turn-check says so and shows only what the holder has stored."""
    from muretai_cli.errors import Refused
    from muretai_cli.home import listener_holder

    holder = safe(listener_holder(did) or "another process", limit=120)
    if follow:
        raise Refused("listener-held", f"another process ({holder}) holds {name}'s relay "
                                       "listener; one process per identity listens",
                      hint="stop it (or `muretai mcp`'s client) first; a one-shot turn-check "
                           "or `op inbox` still reads what it stores")
    note(f"another process ({holder}) holds {name}'s relay listener: showing what it has "
         "stored, without asking the relay")


def _wake_runner(command: str | None, timeout: str, follow: bool) -> OnMessage | None:
    """``--exec CMD``'s runner (the door's ``--on-message`` executor), checked up front."""
    if command is None:
        return None
    if not follow:
        raise InputError("usage", "--exec runs CMD for each message a follower stores",
                         hint="use it with --follow")
    from muretai_cli.cli._durations import parse_seconds
    from muretai_cli.door.respond import OnMessage

    return OnMessage(command, timeout=parse_seconds(timeout, name="--exec-timeout"),
                     running=1, option="--exec")


def _relay_slow_hint(name: str) -> str:
    """turn-check has no --timeout (a listen waits --wait seconds and then a margin)."""
    return (f"the relay did not answer in time: try again later; `muretai doctor --as "
            f"{name}` checks the relay")


def _kill_seam() -> Callable[[str], None]:
    """A TEST SEAM, nothing else: ``MURETAI_TEST_KILL_AT=POINT[:N]`` kills this process with
    SIGKILL the N-th time (default: the first) it reaches POINT, one of
    ``visit.turn.KILL_POINTS``, so tests stop a real turn-check at each step where a kill -9
    matters. Unset (always, outside tests): does nothing."""
    spec = os.environ.get("MURETAI_TEST_KILL_AT", "")
    point, _, nth = spec.partition(":")
    left = [int(nth) if nth.isdigit() else 1]

    def at(reached: str) -> None:
        if spec and reached == point:
            left[0] -= 1
            if left[0] == 0:
                os.kill(os.getpid(), signal.SIGKILL)

    return at


def _superseded(exc: Exception) -> None:
    """The relay's ``superseded`` is no refusal of the peer: another of your own turn-checks
    (a higher epoch) holds the mailbox, a local condition, so exit 1, not 4."""
    from muretai_cli.errors import PeerRefused, Refused

    if isinstance(exc, PeerRefused) and exc.code == "superseded":
        raise Refused("superseded", "another turn-check for this identity took over the "
                                    "mailbox; this one stops (nothing was lost)",
                      hint="run one turn-check per identity at a time") from None


def _interrupted(check: TurnCheck) -> list[dict[str, Any]]:
    """What an earlier turn-check claimed and may not have shown (it was killed while
    printing): named on stderr, never printed again."""
    from muretai_cli.visit.turn import interrupted_of

    missed = [interrupted_of(i) for i in check.interrupted()]
    if missed:
        ids = ", ".join(safe(m["depositId"], limit=40) for m in missed[:5])
        note(f"warning: an earlier turn-check stopped while showing {len(missed)} deposit(s) "
             f"({ids}{', ...' if len(missed) > 5 else ''}); they may not have reached its "
             "output and are not shown again (each is shown at most once): see `op inbox`")
    return missed


def _show(check: TurnCheck, items: list[dict[str, Any]],
          render: Callable[[list[dict[str, Any]]], str]) -> list[dict[str, Any]]:
    """Print ``items`` exactly once: rendered first, then claimed, written in one write and
    flushed, then confirmed shown (see ``visit.turn`` for a kill at each point). Returns
    those shown (a one-shot turn-check beside this one may have taken some)."""
    text = render(items)
    claimed = check.claim(items)
    if len(claimed) != len(items):  # another turn-check took some: show only ours
        items = claimed
        text = render(items)
    with _OUT:
        sys.stdout.write(text)
        sys.stdout.flush()
    check.shown(items)
    return items


def _once(check: TurnCheck, seconds: int, json_out: bool, *, listening: bool) -> None:
    from muretai_cli.errors import MuretaiError
    from muretai_cli.visit.turn import event_of

    problem: MuretaiError | None = None
    missed = _interrupted(check)
    if not listening:  # another process holds the listener: its commits wake this one
        check.wait_stored(seconds)
    else:
        try:
            check.drain(seconds if not check.unshown() else 0)
        except MuretaiError as exc:
            _superseded(exc)
            problem = exc  # a relay that lies or fails: what was committed is still shown

    def render(items: list[dict[str, Any]]) -> str:
        from muretai_cli.inbox.vouches import mark_requests

        events = [event_of(i) for i in items]
        mark_requests([e for e in events if e["event"] == "message"])
        if not json_out:
            return "".join(line + "\n" for event in events for line in event_lines(event))
        doc: dict[str, Any] = {
            "ok": problem is None,
            "messages": [e for e in events if e["event"] == "message"],
            "held": [e for e in events if e["event"] == "held"],
            "refused": [e for e in events if e["event"] == "refused"],
            "joined": [e for e in events if e["event"] == "joined"],
            "vouches": [e for e in events if e["event"] == "vouch"],
        }
        if missed:
            doc["interrupted"] = missed
        if problem is not None:
            doc["error"] = {"code": problem.code, "message": problem.detail}
        return json_text(doc)

    items = check.unshown()
    _show(check, items, render)
    if not items and problem is None and not json_out:
        note("no new messages")
    if problem is not None:
        if json_out:  # the one document is printed; the diagnosis goes to stderr
            note(f"error: {safe(problem.diagnostics(), multiline=True)}")  # the relay's words
            raise typer.Exit(problem.exit_code)
        raise problem


def _follow(check: TurnCheck, json_out: bool, runner: OnMessage | None = None) -> None:
    from muretai_cli.cli._opwake import Wake
    from muretai_cli.errors import MuretaiError
    from muretai_cli.visit.turn import event_of

    wake = Wake(runner, _exec_report(json_out)) if runner is not None else None

    def render(items: list[dict[str, Any]]) -> str:
        from muretai_cli.inbox.vouches import mark_requests

        out = []
        events = [event_of(item) for item in items]
        mark_requests([e for e in events if e["event"] == "message"])
        for event in events:
            if json_out:
                out.append(json_text({"ok": event["event"] != "refused", **event}, line=True))
            else:
                out += [line + "\n" for line in event_lines(event)]
        return "".join(out)

    _interrupted(check)
    try:
        while True:
            for item in check.unshown():  # one at a time: a kill leaves at most one unsure
                for shown in _show(check, [item], render):
                    if wake is not None and shown["outcome"] == "accepted":
                        wake.give(event_of(shown))  # once shown; CMD runs beside us
            try:
                check.drain(25)
            except MuretaiError as exc:
                _superseded(exc)
                raise
    except KeyboardInterrupt:  # the way a follow ends; its stream gets a last line
        from muretai_cli.errors import Interrupted

        _stop_wake(wake)
        wake = None
        stop = Interrupted()
        with _OUT:
            if json_out:
                sys.stdout.write(json_text(stop.to_json(), line=True))
            else:
                note("stopped (Ctrl-C)")
        raise typer.Exit(stop.exit_code) from None
    finally:
        _stop_wake(wake)


def _stop_wake(wake: Any) -> None:
    if wake is None:
        return
    left = wake.close()
    if left:
        note(f"--exec: {left} message(s) shown were not handed to CMD (the follow ended); "
             "they are in the store: `op inbox`")


def _exec_report(json_out: bool) -> Callable[[dict[str, Any], Outcome], None]:
    """How a CMD's outcome is told: a failure on stderr; every outcome as an ``exec`` line
    in --json's stream (CMD's output is its own words, cleaned as a reply's text is)."""
    def report(event: dict[str, Any], outcome: Outcome) -> None:
        mid = safe(event.get("messageId"), limit=80)
        if outcome.code is not None:
            note(f"--exec failed for message {mid}: {outcome.code}: "
                 f"{safe(outcome.message, limit=200)}")
        if not json_out:
            return
        line: dict[str, Any] = {"ok": outcome.code is None, "event": "exec",
                                "messageId": event.get("messageId"),
                                "depositId": event.get("depositId")}
        if outcome.code is not None:
            line["error"] = {"code": outcome.code, "message": outcome.message}
        else:
            line["output"] = outcome.text or ""
        with _OUT:
            sys.stdout.write(json_text(line, line=True))
            sys.stdout.flush()

    return report


def event_lines(event: dict[str, Any]) -> list[str]:
    """A drained event for people; peer text quoted behind ``| ``."""
    from muretai_cli.cli._opdoor import message_lines

    if event["event"] == "joined":
        if not event.get("newContact", True):  # a claim never rewrites a known contact
            return [f"{safe(event['from'], limit=120)} claimed your invite again, giving the "
                    f"name {safe(event['name'], limit=200)!r}: already a contact, kept as it was"]
        return [f"joined through your invite: {safe(event['from'], limit=120)}, who gives "
                f"the name {safe(event['name'], limit=200)!r}"]
    if event["event"] == "vouch":
        from muretai_cli.cli._vouch import vouch_event_line

        return [vouch_event_line(event)]
    if event["event"] == "refused":
        reason = event["reason"] or {}
        return [f"refused deposit {safe(event['depositId'], limit=80)} from "
                f"{safe(event['from'] or '?', limit=120)}: {safe(reason.get('code'))}: "
                f"{safe(reason.get('message'), limit=300)}"]
    row = {**event, "direction": "in", "peer": event["from"]}
    lines = message_lines(row)
    if event["event"] == "held":
        lines[0] += f"  HELD for approval (request {safe(event.get('requestId'))})"
    return lines


def policy(
    ctx: typer.Context,
    value: Annotated[str | None, typer.Argument(
        metavar="[open|quarantine|closed|introduced]", help="Set it; without a value, show it.",
        show_default=False)] = None,
    json_out: JsonOpt = False,
) -> None:
    """Show or set who may reach this identity (door and relay alike; default quarantine).

    `serve --dm-policy` overrides it for one run of the door.
    """
    from muretai_cli.cli._acting import op_identity
    from muretai_cli.cli._opdoor import op_store
    from muretai_cli.inbox.consent import POLICIES, policy_of, set_policy

    chosen = next((p for p in POLICIES if p == value), None)
    if value is not None and chosen is None:
        raise InputError("bad-policy", f"{safe(value, limit=40)!r} is not a policy",
                         hint="use open, quarantine, closed or introduced")
    ident = op_identity(ctx)
    store = op_store(ctx)
    try:
        if chosen is not None:
            set_policy(store, chosen)
        current = policy_of(store)
    finally:
        store.close()
    if json_out:
        emit_json({"ok": True, "as": ident.name, "policy": current})
    else:
        say(current)
