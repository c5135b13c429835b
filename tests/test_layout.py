"""DESIGN.md rule 7, dependencies point inward: which room may import which,
read from the source (every import, including those inside functions)."""

import ast
from collections import defaultdict
from pathlib import Path

import pytest

import tokenyard

ROOT = Path(tokenyard.__file__).parent

# Rooms at the bottom, and all of ours they may import.
ALLOWED = {
    "settings": set(),
    "faults": set(),
    # What the request path writes as JSON: every room may use it, so it uses none.
    "json_out": set(),
    # The family catalog is pure data: the lowest floor.
    "families": set(),
    "parsing": {"events", "conversation", "faults", "families"},
}
# Room -> the rooms of ours it must never import.
FORBIDDEN = {
    "apis": {"server", "engines", "prompting", "parsing", "routing", "models", "launchers", "cli"},
    "engines": {"server", "apis", "prompting", "parsing", "launchers", "cli"},
    "prompting": {"server", "apis", "engines", "routing", "launchers", "cli"},
    "routing": {"server", "apis", "prompting", "launchers", "cli"},
}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports() -> dict[str, set[str]]:
    """Each room's imports of our other rooms, as room names."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in ROOT.rglob("*.py"):
        parts = ("tokenyard", *path.relative_to(ROOT).with_suffix("").parts)
        package = parts[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[: len(package) - node.level + 1]
                targets = (
                    [".".join((*base, node.module))]
                    if node.module
                    else [f"{'.'.join(base)}.{a.name}" for a in node.names]
                )
            elif isinstance(node, ast.ImportFrom):
                targets = [node.module or ""]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                if target.startswith("tokenyard.") and _room(target) != parts[1]:
                    found[parts[1]].add(_room(target))
    return found


def test_the_tables_name_real_rooms():
    rooms = {p.stem for p in ROOT.iterdir() if p.suffix == ".py" or (p.is_dir() and p.name != "__pycache__")}
    named = set(ALLOWED) | set(FORBIDDEN)
    for group in (*ALLOWED.values(), *FORBIDDEN.values()):
        named |= group
    assert named <= rooms, sorted(named - rooms)


@pytest.mark.parametrize("room", sorted({*ALLOWED, *FORBIDDEN}))
def test_dependencies_point_inward(room):
    imported = _imports().get(room, set())
    wrong = imported - ALLOWED[room] if room in ALLOWED else imported & FORBIDDEN[room]
    assert not wrong, f"{room} imports {sorted(wrong)}"
