"""The house holds its shape (../shared/DESIGN.md): every room has an ``__all__`` and each
public surface is pinned here; the import graph of ``muretai_cli``, read with ``ast`` so
that imports inside functions count, keeps its arrows: down only, no circles, no sibling
imports among door/relay/visit, typer and rich only in the shell, the relay never reaching
``inbox/``, the seam importing nothing of the project but its error family.

Changing a surface or a layer is allowed: change it here too, on purpose.
"""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from tests.repo_files import ROOT

LIBRARY = ROOT / "muretai_cli"

SURFACES: dict[str, list[str]] = {
    "artifacts": ["binding", "diddoc", "grant", "handoff", "invite", "keystate", "message",
                  "org", "ownerstate", "vouch"],
    "cli": ["app", "build_app", "main"],
    "conformance": ["GroupResult", "Status", "keys", "missing_groups", "run_conformance",
                    "web"],
    "db": ["CHANGES_CHANNEL", "Batcher", "Changes", "Conflict", "Database", "DatabaseFull", "DatabaseUnavailable", "Dialect",
           "Result", "Row", "Schema", "SchemaMismatch", "StoreDamaged", "Tx", "Undecodable",
           "Unstorable", "damaged", "is_postgres_url", "json_rows", "lock_key",
           "open_database", "padded_chunks", "redact", "render_ddl", "require",
           "to_format_style", "upgrade", "version_of"],
    "door": ["app", "card", "config", "core", "events", "executors", "publish", "respond",
             "serve", "wba"],
    "home": ["Connection", "ConnectionStore", "Identity", "KeyStatePins", "KeyStore",
             "ListenerLease", "ListenerState", "MintedRecords", "Pin", "PinStore", "Profiles", "TrustList", "TrustedOrg",
             "VerifiedPeers",
             "atomic_write", "dids_named", "ensure_private_dir", "hold_listener", "home_dir",
             "keys_dir", "listener_holder", "listener_state",
             "open_to_others", "read_json_file", "valid_name", "write_json_file"],
    "inbox": ["arrival", "claims", "consent", "contacts", "invites", "ladder", "proposals",
              "reader", "relayed", "revocations", "store", "vouches"],
    "lint": ["KNOWN_ORIGINS", "LEVEL_NAMES", "MAX_RESULT_BYTES", "RULES", "SHAPES",
             "VISITOR_ONLY", "Finding", "HandoffFound", "LevelReport", "LevelStatus",
             "LintStream", "Manifest", "Mode", "RawResult", "ResultReader", "ResultReport",
             "Severity", "Shape", "Tally", "View", "level_report", "lint_bytes", "lint_raw",
             "lint_stream", "parse_manifest"],
    "mcp": ["ToolSession", "build_server", "run_server", "tool_session"],
    "net": ["ClientFor", "DEFAULT_MAX_BYTES", "DEFAULT_TIMEOUT", "MAX_REDIRECTS", "Deadline", "HttpResult",
            "SafeClient", "check_request_url", "http_refusal", "private_addresses",
            "retry_after_seconds", "user_agent"],
    "relay": ["answers", "app", "core", "limits", "notify", "pgnotify", "serve", "store"],
    "schemas": ["load", "names", "text"],
    "seam": ["ARTIFACT_IAT_SKEW", "CLOCK_SKEW", "DID_CONFIGURATION_PATH",
             "DIRECTORY_MEDIA_TYPE", "DIRECTORY_PATH", "DIRECTORY_WINDOW", "ENC_PUB_CHARS",
             "ENVELOPE_MAX_AGE", "ENVELOPE_MAX_AHEAD", "INTRO_REQUEST_WINDOW", "MAX_B58_LEN",
             "MAX_BLOB_CHARS",
             "MAX_BODY", "MAX_DEPTH", "MAX_DIRECTORY_BYTES", "MAX_DIRECTORY_LIFETIME",
             "MAX_HEADER_CHARS", "MAX_ID_LEN", "MAX_LINKED_DIDS", "MAX_REQUEST_LIFETIME",
             "MAX_SAFE_INT", "MAX_SAME_ISSUER", "MAX_TEXT", "MAX_TOKEN_CHARS", "MAX_VC_CHARS",
             "MESSAGE_WINDOW", "RELAYED_MAX_AGE", "REQUEST_WINDOW", "SIGNED_FIELDS",
             "SMALL_ORDER_ENCODINGS", "DomainLink", "Freshness", "SignedCard", "SigningKey",
             "authority_of", "b64decode_strict", "b64encode", "canonical_bytes",
             "canonical_from_json", "card_envelope_payload", "check_fresh", "check_signable",
             "check_signed_fields", "is_number_hazard", "timestamp_seconds",
             "did_configuration", "did_from_public", "domain_linkage_signing_input",
             "enc_pub_from_seed", "envelope_freshness", "is_enc_pub", "is_small_order",
             "jwk_from_public", "jwk_thumbprint", "linked_did", "listen_token_payload",
             "open_box", "open_card_envelope", "parse_document", "precheck_request",
             "public_from_did", "relay_send_payload", "seal_box", "sign_card_envelope",
             "sign_directory", "sign_domain_linkage", "sign_envelope", "sign_listen_token",
             "sign_relay_send", "sign_request", "signature_agent_url", "signing_payload",
             "six_fields", "verify_card_envelope", "verify_directory", "verify_domain_linkage",
             "verify_envelope", "verify_listen_token", "verify_relay_send", "verify_request",
             "verify_served_card", "verify_signature", "verifying_key_from_did",
             "x25519_from_ed25519_public"],
    "site": ["ORDER", "TITLES", "Finding", "Remedy", "SiteReport", "Status", "check_public",
             "check_site", "domain_linkage", "domain_of", "site_base"],
    "transport": ["IDLE_SECONDS", "MAX_CONNECTIONS", "MAX_PER_CLIENT", "asgi", "binding",
                  "children", "rate", "serve", "server", "workers"],
    "visit": ["card", "dm", "handoff", "introduce", "join", "offline", "probe", "relay",
              "remedies", "replies", "send", "signposts", "turn", "vouch", "wba"],
}

# Top to bottom; an import may only point to a lower layer (a room never imports one of its
# own layer: door, relay and visit meet over HTTP). Top-level modules count as rooms.
LAYERS: list[set[str]] = [
    {"__main__"},
    {"cli"},
    {"mcp"},  # the second shell: cli/ starts it (`muretai mcp`)
    {"doctor", "conformance"},
    {"site"},
    {"door", "relay", "visit", "lint"},
    {"inbox"},
    {"transport", "net", "schemas"},
    {"db"},
    {"home"},
    {"artifacts"},
    {"urls", "verdict"},
    {"seam"},
    {"errors"},
    {"muretai_cli"},  # the package itself: __version__, imports nothing
]
SHELLS = {"cli", "__main__"}
UI = {"typer", "rich", "click"}
MCP_SDK = "mcp"  # the official MCP SDK's top-level package (not the room muretai_cli.mcp)


@dataclass(frozen=True)
class Edge:
    source: str  # the importing module
    target: str  # the imported module (of the project) or top-level package (outside)
    line: int
    lazy: bool  # inside a function
    typing_only: bool  # under ``if TYPE_CHECKING:``


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(LIBRARY.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(LIBRARY.rglob("*.py"))}


def _resolve(name: str) -> str:
    """The longest module of the project ``name`` names (``pkg.mod.attr`` -> ``pkg.mod``)."""
    parts = name.split(".")
    while parts and ".".join(parts) not in MODULES:
        parts.pop()
    return ".".join(parts)


def _edges_of(module: str, path: Path) -> list[Edge]:
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[Edge] = []

    def visit(node: ast.AST, lazy: bool, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            child_lazy = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            child_typing = typing_only or (
                isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[:len(package.split(".")) - child.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                names = [base, *(f"{base}.{alias.name}" for alias in child.names)]
            for name in names:
                if name.split(".")[0] == "muretai_cli":
                    target = _resolve(name)
                    # a module's own packages are imported before it anyway: not an arrow
                    if target and target != module and not module.startswith(target + "."):
                        out.append(Edge(module, target, getattr(child, "lineno", 0), lazy, typing_only))
                elif name:
                    out.append(Edge(module, name.split(".")[0], getattr(child, "lineno", 0), lazy,
                                    typing_only))
            visit(child, child_lazy, child_typing)

    visit(tree, False, False)
    return out


EDGES = [edge for module, path in MODULES.items() for edge in _edges_of(module, path)]
INTERNAL = [e for e in EDGES if e.target in MODULES]


def room_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _rank(room: str) -> int:
    for rank, layer in enumerate(LAYERS):
        if room in layer:
            return rank
    raise AssertionError(f"{room} is in no layer of this test: place it on purpose")


def _circles(edges: list[Edge]) -> list[list[str]]:
    """Strongly connected sets of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        graph[e.source].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(MODULES):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        part.append(top)
                        if top == node:
                            break
                    if len(part) > 1:
                        found.append(sorted(part))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _rooms() -> list[str]:
    return sorted(p.parent.name for p in LIBRARY.glob("*/__init__.py"))


def test_every_room_has_its_pinned_public_surface() -> None:
    assert _rooms() == sorted(SURFACES), "a room was added or removed: pin its surface here"
    for room, expected in SURFACES.items():
        module = importlib.import_module(f"muretai_cli.{room}")
        assert isinstance(getattr(module, "__all__", None), list), f"{room} has no __all__"
        assert sorted(module.__all__) == sorted(expected), room
        for name in expected:  # each name is there (a module of the room, or an attribute)
            if (LIBRARY / room / f"{name}.py").exists() or (LIBRARY / room / name).is_dir():
                importlib.import_module(f"muretai_cli.{room}.{name}")
            else:
                assert hasattr(module, name), (room, name)


def test_the_graph_is_read_whole() -> None:
    # the walk sees lazy imports and typing-only ones; a graph without them tests nothing
    assert len(MODULES) > 100
    assert any(e.lazy for e in INTERNAL) and any(e.typing_only for e in INTERNAL)
    assert any(e.source == "muretai_cli.cli" and e.target == "muretai_cli.cli._tree"
               for e in INTERNAL)


def test_imports_point_down_only() -> None:
    upward = [f"{e.source}:{e.line} -> {e.target}" for e in INTERNAL
              if room_of(e.source) != room_of(e.target)
              and _rank(room_of(e.source)) >= _rank(room_of(e.target))]
    assert upward == [], "imports that do not point to a lower layer:\n" + "\n".join(upward)


def test_door_relay_and_visit_never_import_each_other() -> None:
    siblings = {"door", "relay", "visit"}
    found = [f"{e.source}:{e.line} -> {e.target}" for e in INTERNAL
             if room_of(e.source) in siblings and room_of(e.target) in siblings
             and room_of(e.source) != room_of(e.target)]
    assert found == []


def test_the_relay_never_imports_inbox_or_opens_a_box() -> None:
    found = [f"{e.source}:{e.line} -> {e.target}" for e in INTERNAL
             if room_of(e.source) == "relay"
             and (room_of(e.target) in {"inbox", "door", "visit"}
                  or e.target == "muretai_cli.seam._cryptobox")]
    assert found == []
    for path in (LIBRARY / "relay").glob("*.py"):
        assert "open_box" not in path.read_text(), path


def test_the_seam_imports_nothing_of_the_project_but_errors() -> None:
    found = [f"{e.source}:{e.line} -> {e.target}" for e in INTERNAL
             if room_of(e.source) == "seam" and room_of(e.target) not in {"seam", "errors"}]
    assert found == []
    # the structured-field parser is syntax alone: no crypto, no signature rules
    sfv = [e.target for e in EDGES if e.source == "muretai_cli.seam._sfv"]
    assert set(sfv) <= {"__future__", "typing", "muretai_cli.errors"}, sfv


def test_typer_and_rich_only_in_the_shell() -> None:
    found = [f"{e.source}:{e.line} imports {e.target}" for e in EDGES
             if e.target in UI and room_of(e.source) not in SHELLS]
    assert found == []


def test_the_mcp_sdk_only_in_the_mcp_shell() -> None:
    # the room muretai_cli.mcp speaks MCP; cli/ only starts it, lazily (a command that is
    # not `muretai mcp` never imports the SDK: tests/e2e/test_mcp_server.py runs one)
    found = [f"{e.source}:{e.line} imports the SDK" for e in EDGES
             if e.target == MCP_SDK and room_of(e.source) != "mcp"]
    assert found == []
    assert any(e.target == MCP_SDK for e in EDGES if room_of(e.source) == "mcp")


def test_no_import_circles() -> None:
    # lazy imports count (a circle through a function is still a circle); typing-only
    # ones do not run
    runtime = [e for e in INTERNAL if not e.typing_only]
    assert _circles(runtime) == [], "import circles"


def test_a_circle_is_found() -> None:
    # the walk's own check: a circle through a lazy import, and one of three modules
    def edge(source: str, target: str) -> Edge:
        return Edge(source, target, 1, lazy=True, typing_only=False)

    mods = sorted(MODULES)[:3]
    assert _circles([edge(mods[0], mods[1]), edge(mods[1], mods[0])]) == [sorted(mods[:2])]
    assert _circles([edge(mods[0], mods[1]), edge(mods[1], mods[2]),
                     edge(mods[2], mods[0])]) == [mods]
    assert _circles([edge(mods[0], mods[1]), edge(mods[1], mods[2])]) == []


def test_uvicorn_is_bounded_above_and_the_installed_one_fits() -> None:
    import re
    import tomllib
    from importlib.metadata import version

    project = tomllib.loads((LIBRARY.parent / "pyproject.toml").read_text())["project"]
    (spec,) = [d for d in project["dependencies"] if d.startswith("uvicorn")]
    upper = re.search(r"<\s*([0-9.]+)", spec)
    assert upper, f"{spec!r}: the transport subclasses uvicorn's private classes; bound it"

    def parts(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"[0-9]+", text)[:3])

    assert parts(version("uvicorn")) < parts(upper.group(1)), (version("uvicorn"), spec)
