"""How the code is laid out: no import circles, front doors through public names, a query that
does not load the build side. The imports are read with `ast`, as a linter would, including the
ones inside functions."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import manual_text

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "knowledge_build"
# The front doors: what users run. They use the public API (`import knowledge_build`) or public
# names of a sub-package, never a private `_name`.
FRONT_DOORS = sorted([*(PACKAGE / "cli").glob("*.py"), PACKAGE / "serve" / "mcp_server.py",
                      PACKAGE / "serve" / "slack_app.py"])
MAX_TOP_LEVEL_MODULES = 15


def _module_name(path: Path, root: Path = ROOT) -> tuple[str, bool]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def _modules(package: Path) -> dict[str, Path]:
    return {_module_name(p, package.parent)[0]: p for p in package.rglob("*.py")}


def _imported(module: str, is_package: bool, node: ast.ImportFrom | ast.Import, known: set[str]) -> list[str]:
    """The modules of the package an import statement loads (a name imported from a package may
    be a sub-module)."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            start = ".".join(base + ([node.module] if node.module else []))
        else:
            start = node.module or ""
        targets = [f"{start}.{a.name}" if f"{start}.{a.name}" in known else start for a in node.names]
    found = []
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != module:
            found.append(target)
    return found


def import_graph(package: Path) -> dict[str, set[str]]:
    modules = _modules(package)
    known = set(modules)
    graph = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges.update(_imported(name, is_package, node, known))
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_package_has_no_import_circle():
    assert circles(import_graph(PACKAGE)) == []


def test_the_circle_finder_finds_a_circle_through_an_import_inside_a_function(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "b.py").write_text("def f():\n    from ..c import x\n")
    (package / "c.py").write_text("import pkg.a\n")
    (package / "d.py").write_text("from . import c\n")
    assert circles(import_graph(package)) == [["pkg.a", "pkg.c", "pkg.sub.b"]]


def test_few_modules_are_left_at_the_top_of_the_package():
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


def test_every_sub_package_says_what_it_owns():
    for init in PACKAGE.glob("*/__init__.py"):
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), f"{init} has no docstring"


def private_names(path: Path) -> list[str]:
    """`_name`s a module imports from the package, or reads off a module of the package it imported."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found, package_aliases = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("knowledge_build")):
            for alias in node.names:
                if alias.name.startswith("_") and alias.name != "__version__":
                    found.append(f"{path.name}:{node.lineno}: {alias.name}")
                package_aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("knowledge_build"):
                    package_aliases.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in package_aliases):
            found.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_front_doors_use_no_private_name_of_the_library():
    assert [name for path in FRONT_DOORS for name in private_names(path)] == []


def test_the_private_name_check_sees_both_ways_of_reaching_one(tmp_path):
    door = tmp_path / "knowledge_build" / "cli" / "door.py"
    door.parent.mkdir(parents=True)
    door.write_text("import knowledge_build as kb\nfrom ..config import _coerce_one, load_config\n"
                    "from . import common\nkb._EXPORTS\ncommon._hidden()\nkb.build\n")
    assert [n.split(": ")[1] for n in private_names(door)] == ["_coerce_one", "kb._EXPORTS", "common._hidden"]


def test_the_jekyll_plugin_runs_the_command_not_the_library():
    plugin = (ROOT / "_plugins" / "knowledge_index.rb").read_text(encoding="utf-8")
    assert "knowledge_build." not in plugin.replace('fetch("knowledge_build"', "").replace("knowledge_build.command", "")


BUILD_SIDE = ("lxml", "knowledge_build.site", "knowledge_build.html", "knowledge_build.chunking",
              "knowledge_build.pipeline", "knowledge_build.checks")


@pytest.mark.model
def test_a_search_in_a_fresh_process_loads_nothing_of_the_build_side(real_index_dir):
    code = ("import json, sys\nfrom knowledge_build import KnowledgeIndex\n"
            f"index = KnowledgeIndex.open({str(real_index_dir)!r})\n"
            "results = index.search('二次方程式を公式で解きたい')\n"
            "print(json.dumps([results[0].id, sorted(sys.modules)]))")
    first, loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                              check=True).stdout.strip().splitlines()[-1])
    assert first.startswith("二次方程式")
    assert [m for m in loaded if m.startswith(BUILD_SIDE)] == []
    assert "knowledge_build.search.knowledge_index" in loaded  # the check looks at the right process


@pytest.mark.model
def test_the_search_command_loads_nothing_of_the_build_side(real_index_dir):
    code = ("import json, sys\nfrom knowledge_build.cli import main\n"
            f"try:\n    main(['search', '二次方程式の解き方', '--index', {str(real_index_dir)!r}, '--format', 'json'])\n"
            "except SystemExit as exc:\n    assert not exc.code, exc.code\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = json.loads(out.strip().splitlines()[-1])
    assert [m for m in loaded if m.startswith(BUILD_SIDE)] == []
    assert "knowledge_build.search.knowledge_index" in loaded


def test_the_readme_names_every_sub_package_and_no_other():
    import re

    readme = manual_text()
    section = readme.split("## How the code is laid out", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(\w+)/`", section)) | set(re.findall(r"`store/(\w+)/`", section))
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")} | {"templates", "migrations", "functions"}
    assert named == packages


ENGINES = ("search", "store", "browser")  # the three engines of ranking/'s docstring: artifacts, database, box


def _package_of(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_ranking_is_a_leaf_that_no_engine_bypasses():
    """ranking/ states the ranking for every engine: it imports none of them (only the top-level errors and
    kinds), and no engine imports another's modules to reach a rule (issue 39)."""
    graph = import_graph(PACKAGE)
    leaf = {name: sorted(edge for edge in edges if not edge.startswith("knowledge_build.ranking")
                         and edge not in ("knowledge_build.errors", "knowledge_build.kinds"))
            for name, edges in graph.items() if name.startswith("knowledge_build.ranking")}
    assert leaf and all(not edges for edges in leaf.values()), leaf
    crossing = sorted(f"{name} imports {edge}" for name, edges in graph.items() for edge in edges
                      if _package_of(name) in ENGINES and _package_of(edge) in ENGINES
                      and _package_of(edge) != _package_of(name))
    assert crossing == []


def test_importing_the_writable_stores_loads_no_other_engine():
    """The notes and web-source stores check a query with ranking/'s limits and fuse with its fusion: they
    need none of the artifacts' loader, the index or the box (before issue 39: 26 modules, index/ among them)."""
    code = ("import json, sys\nimport knowledge_build.store.notes, knowledge_build.store.sources\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('knowledge_build'))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout.strip().splitlines()[-1])
    assert "knowledge_build.ranking.fusion" in loaded  # the check looks at the right process
    others = [m for m in loaded if _package_of(m) in ("index", "search", "browser")]
    assert others == []
def test_only_the_search_package_imports_the_artifacts_loader():
    graph = import_graph(PACKAGE)
    outside = sorted(name for name, edges in graph.items()
                     if "knowledge_build.search.knowledge_index" in edges and _package_of(name) != "search")
    assert outside == []


