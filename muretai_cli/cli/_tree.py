"""How the command tree reads at a shell: help, ``-h``, and ``--as`` anywhere on the line.

``RootGroup`` is the root's click class. When typer builds the tree it walks every command
once and makes help say what a person types: flags as bare flags, values as ``TEXT`` /
``INTEGER`` / ``PATH`` / ``a|b``, arguments as ``NAME`` (``[NAME]`` when optional), ranges in
words, and a command's first paragraph on one line. ``AsGroup`` is the class of the groups
that act as one of your identities (``op``, ``contact``): their ``--as NAME`` (and
``--keys DIR``, ``--db URL``) may come anywhere before ``--``, also after the subcommand.
"""

from __future__ import annotations

import re
from typing import Any

from typer.core import TyperArgument, TyperGroup, TyperOption

HELP_OPTIONS = ["-h", "--help"]
CONTEXT = {"help_option_names": HELP_OPTIONS}

_VALUE_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "Path": "PATH",
                "bool": "BOOL"}


HOISTED = ("--as", "--keys", "--db")  # the options of a group acting as an identity


def hoist_as(args: list[str]) -> list[str]:
    """``args`` with every ``--as NAME`` (``--keys DIR``) before ``--`` moved to the front,
    ``--as=NAME`` too, so the group sees them wherever they were typed."""
    front: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg in HOISTED and i + 1 < len(args):
            front += args[i:i + 2]
            i += 2
            continue
        (front if arg.startswith(tuple(f"{h}=" for h in HOISTED)) else rest).append(arg)
        i += 1
    return front + rest


class AsGroup(TyperGroup):
    """A group acting as an identity: ``--as NAME`` is accepted anywhere on its line."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_as(args))


def _range_words(param: Any) -> str | None:
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low is not None and high is not None:
        return f"{low} to {high}"
    if low is not None:
        return f"at least {low}"
    if high is not None:
        return f"at most {high}"
    return None


class _Option(TyperOption):
    """An option whose help shows what to type: a bare flag, or ``--name VALUE``."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag and not self.count:
            return None
        if self.metavar is not None:
            return self.metavar
        desc = self.type_descriptor
        if desc.is_choice:
            return self.display_type(ctx).strip("<>")
        if desc.is_path:
            return "PATH"
        bare = _VALUE_NAMES.get(self.bare_type(), self.bare_type().upper())
        return bare + ("..." if desc.is_list else "")

    def make_metavar(self, ctx: Any) -> str:
        return self.display_type_rich(ctx) or ""

    def _get_number_range_help_str(self) -> str | None:
        return None  # said in words in the help text instead of "[x>=1]"


class _Argument(TyperArgument):
    """An argument shown as ``NAME`` (``[NAME]`` when optional), ``...`` when repeated."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")


# What rich would read as a markup tag: "[" then a letter, "/", "@" or "#" ... "]".
_TAG = re.compile(r"(\\*)(\[[a-zA-Z#/@][^\[]*?\])")


def _literal(text: str | None) -> str | None:
    """Help text shown as written: ``https://host[/path]`` is not a rich closing tag."""
    if not text:
        return text
    return _TAG.sub(lambda m: m.group(1) * 2 + "\\" + m.group(2), text)


def _one_line_summary(text: str | None) -> str | None:
    if not text:
        return text
    first, sep, rest = text.strip().partition("\n\n")
    return re.sub(r"\s*\n\s*", " ", first) + sep + rest


def _retype(param: Any) -> None:
    if type(param) in (TyperOption, TyperArgument):
        param.help = _literal(param.help)
    if type(param) is TyperOption:
        words = _range_words(param)
        if words and param.help and words not in param.help:
            param.help = f"{param.help.rstrip('.')} ({words})."
        param.__class__ = _Option
    elif type(param) is TyperArgument:
        if param.metavar is None and param.name:
            param.metavar = param.name.upper().rstrip("_")
        param.__class__ = _Argument


def tidy(command: Any) -> None:
    """Make one command's (and its subcommands') help read as a shell user types it."""
    command.help = _literal(_one_line_summary(command.help))
    params_of = command.get_params

    def get_params(ctx: Any) -> list[Any]:
        params: list[Any] = params_of(ctx)  # --help and completion options are made late
        for param in params:
            _retype(param)
        return params

    command.get_params = get_params
    subs = getattr(command, "commands", None)
    if subs is None:
        _note_json(command)
    for sub in (subs or {}).values():
        tidy(sub)


JSON_META = "muretai.json"  # ctx.meta key: whether the command being run was given --json


def _note_json(command: Any) -> None:
    """Let the root know, should the command fail, whether it was asked for ``--json``."""
    invoke_of = command.invoke

    def invoke(ctx: Any) -> Any:
        ctx.meta[JSON_META] = bool(ctx.params.get("json_out"))
        return invoke_of(ctx)

    command.invoke = invoke


class RootGroup(TyperGroup):
    """The root: once typer has built the tree, make every command's help read well; and
    the one place the error family is caught. A ``MuretaiError`` from any command (or a
    group's callback) is rendered (one JSON document under ``--json``, else a line on
    stderr) and ends the run with its exit code; Ctrl-C is ``Interrupted`` (exit 130)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        tidy(self)

    def invoke(self, ctx: Any) -> Any:
        from muretai_cli.errors import Interrupted, MuretaiError

        try:
            return super().invoke(ctx)
        except MuretaiError as exc:
            from muretai_cli.cli._out import fail

            raise fail(exc, bool(ctx.meta.get(JSON_META))) from None
        except KeyboardInterrupt:
            from muretai_cli.cli._out import fail

            raise fail(Interrupted(), bool(ctx.meta.get(JSON_META))) from None
