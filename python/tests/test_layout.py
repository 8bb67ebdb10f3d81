"""The package's layout, checked on its source with ``ast`` (nothing is
run): ``cca/__init__.py`` only re-exports; every topic module imports what
it needs, never reaching the package through ``sys.modules``, and no two
import each other round; ``cca.allocators`` uses no private name of
another module (``cca._core`` and ``cca._lib`` themselves, and their
public names, are what it may use); every module is installed by
python/meson.build; ``cca.__version__`` is meson.build's version.

The package checked is the one ``import cca`` finds (PYTHONPATH), so the
same tests read another checkout's package too."""
import ast
import importlib
import os
import re
from pathlib import Path

import pytest

import cca

PKG = Path(cca.__file__).resolve().parent               # .../python/cca
PYDIR = PKG.parent                                      # .../python: meson.build, tests
TOP = PYDIR.parent                                      # the checkout: meson.build, pyproject.toml


def _sources():
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _module_name(path):
    rel = path.relative_to(PYDIR).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(path):
    return path.name == "__init__.py"


def _is_cca_module(dotted):
    """Whether dotted ("cca", "cca._lib", "cca.allocators.torch") names a
    module or package of this package's source."""
    parts = dotted.split(".")
    if parts[0] != "cca":
        return False
    base = PKG.joinpath(*parts[1:])
    return (base / "__init__.py").is_file() or base.with_suffix(".py").is_file()


def _parse(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            node.value.inner = True                     # a.b of a.b.c: the chain is looked at whole, once
    return tree


def _absolute(path, node):
    """The absolute module an ImportFrom imports from."""
    if not node.level:
        return node.module or ""
    here = _module_name(path).split(".")
    if not _is_package(path):
        here.pop()                                      # a module's level 1 is its package
    base = here[:len(here) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _rel(path):
    return str(path.relative_to(PYDIR))


# ---- __init__.py: a docstring, imports, __all__, __version__ ---------------

def _literal_assignment(node):
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
        return None
    name = node.targets[0].id
    v = node.value
    if name == "__all__" and isinstance(v, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in v.elts):
        return name
    if name == "__version__" and isinstance(v, ast.Constant) and isinstance(v.value, str):
        return name
    return None


def test_init_only_reexports():
    tree = _parse(PKG / "__init__.py")
    bad = []
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            continue                                    # the docstring
        if isinstance(node, (ast.Import, ast.ImportFrom)) or _literal_assignment(node):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            what = node.name
        elif isinstance(node, ast.Assign):
            what = ", ".join(ast.unparse(t) for t in node.targets)
        else:
            what = ast.unparse(node).split("\n")[0][:60]
        bad.append("line %d: %s %s" % (node.lineno, type(node).__name__, what))
    assert not bad, "cca/__init__.py holds more than re-exports:\n  " + "\n  ".join(bad)


# ---- no sys.modules, no cycles ----------------------------------------------

def _sys_names(tree):
    """Names bound to the sys module and to sys.modules by this file's imports."""
    sys_names, modules_names = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "sys":
                    sys_names.add(a.asname or "sys")
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and not node.level:
            for a in node.names:
                if a.name == "modules":
                    modules_names.add(a.asname or "modules")
    return sys_names, modules_names


def _fixed_key(key):
    """A key of sys.modules that is a string naming another package: what
    ``sys.modules.get("torch")`` asks (is torch imported?)."""
    return isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.split(".")[0] != "cca"


def test_no_module_reaches_the_package_through_sys_modules():
    bad = []
    for path in _sources():
        tree = _parse(path)
        sys_names, modules_names = _sys_names(tree)

        def is_modules(n):
            return (isinstance(n, ast.Attribute) and n.attr == "modules" and isinstance(n.value, ast.Name)
                    and n.value.id in sys_names) or (isinstance(n, ast.Name) and n.id in modules_names)

        for node in ast.walk(tree):
            key = None
            if isinstance(node, ast.Subscript) and is_modules(node.value):
                key = node.slice
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_modules(node.func.value):
                key = node.args[0] if node.args else ast.Constant(None)
            elif isinstance(node, ast.Call) and (
                    (isinstance(node.func, ast.Name) and node.func.id in ("__import__", "import_module"))
                    or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")):
                names = {n.id for a in node.args for n in ast.walk(a) if isinstance(n, ast.Name)}
                if names & {"__package__", "__name__", "__spec__"}:
                    bad.append("%s:%d: %s" % (_rel(path), node.lineno, ast.unparse(node)))
                continue
            else:
                continue
            if not _fixed_key(key):
                bad.append("%s:%d: %s" % (_rel(path), node.lineno, ast.unparse(node)))
    bad.sort(key=lambda b: (b.split(":")[0], int(b.split(":")[1])))
    assert not bad, "reaching cca through sys.modules (import what you need instead):\n  " + "\n  ".join(bad)


def _imports(path):
    """The cca modules path's file imports, at any depth (a function's too)."""
    out = set()
    for node in ast.walk(_parse(path)):
        if isinstance(node, ast.Import):
            for a in node.names:
                if _is_cca_module(a.name):
                    out.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(path, node)
            if not _is_cca_module(base):
                continue
            for a in node.names:
                sub = base + "." + a.name
                out.add(sub if _is_cca_module(sub) else base)   # a module, or a name of base
    return out                                          # "import cca" in cca.x: cca.x needs cca's names


def test_no_import_cycles():
    graph = {_module_name(p): _imports(p) for p in _sources()}
    state, cycles = {}, []

    def visit(m, stack):
        state[m] = "open"
        for n in sorted(graph.get(m, ())):
            if state.get(n) == "open":
                cycles.append(" -> ".join(stack[stack.index(n):] + [n]))
            elif n not in state:
                visit(n, stack + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles in cca:\n  " + "\n  ".join(cycles)


def test_no_module_shadows_a_public_name():
    # cca.history is the function: a module cca/history.py would be
    # replaced by it in cca's namespace, and "import cca.history as h"
    # would give the function
    clash = sorted(p.stem for p in PKG.iterdir() if p.suffix == ".py" and p.stem in cca.__all__)
    clash += sorted(p.name for p in PKG.iterdir() if (p / "__init__.py").is_file() and p.name in cca.__all__)
    assert not clash, "modules named as public names of cca: %s" % clash


# ---- cca.allocators: public names only ----------------------------------------

def _imported_modules(path, tree):
    """{name: dotted module} for the names this file's imports bind (at any
    depth): "cca" for ``import cca``, "cca._lib" for ``from cca import _lib``;
    a name imported from a module (not a module itself) maps to None."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(path, node)
            for a in node.names:
                sub = base + "." + a.name
                bound[a.asname or a.name] = sub if (_is_cca_module(sub) or not base.startswith("cca")) else None
    return bound


def _private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_allocators_use_no_private_name_of_another_module():
    bad = []
    for path in sorted((PKG / "allocators").glob("*.py")):
        tree = _parse(path)
        bound = _imported_modules(path, tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _absolute(path, node)
                for a in node.names:
                    if _private(a.name) and not _is_cca_module(base + "." + a.name):
                        bad.append("%s:%d: from %s import %s" % (_rel(path), node.lineno, base, a.name))
            elif isinstance(node, ast.Attribute):
                chain, n = [], node
                while isinstance(n, ast.Attribute):
                    chain.append(n.attr)
                    n = n.value
                if getattr(node, "inner", False) or not (isinstance(n, ast.Name) and n.id in bound):
                    continue
                dotted = bound[n.id]
                if dotted is not None and not (dotted == "cca" or dotted.startswith("cca.")):
                    continue                             # another package's (torch._C: what cca answers for torch)
                for attr in reversed(chain):             # cca._core.allocator: _core is a module, allocator public
                    if dotted is not None and _is_cca_module(dotted + "." + attr):
                        dotted += "." + attr
                        continue
                    if _private(attr):
                        bad.append("%s:%d: %s" % (_rel(path), node.lineno, ast.unparse(node)))
                    break
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                    "getattr", "hasattr", "setattr") and len(node.args) >= 2:
                obj, name = node.args[0], node.args[1]
                if isinstance(obj, ast.Name) and obj.id in bound and isinstance(name, ast.Constant) \
                        and isinstance(name.value, str) and _private(name.value):
                    bad.append("%s:%d: %s" % (_rel(path), node.lineno, ast.unparse(node)))
    bad.sort(key=lambda b: (b.split(":")[0], int(b.split(":")[1])))
    assert not bad, ("cca.allocators uses private names of other modules (use cca._core's and cca._lib's "
                     "public names):\n  " + "\n  ".join(bad))


# ---- installed, resolving, versioned ------------------------------------------

def _meson_lists():
    """{file: subdir} of python/meson.build's install_sources calls."""
    text = (PYDIR / "meson.build").read_text()
    text = re.sub(r"#[^\n]*", "", text)
    out = {}
    for m in re.finditer(r"install_sources\(\s*files\(([^)]*)\)(.*?)\)", text, re.S):
        sub = re.search(r"subdir\s*:\s*'([^']*)'", m.group(2))
        for f in re.findall(r"'([^']+)'", m.group(1)):
            out[f] = sub.group(1) if sub else ""
    return out


def test_every_module_is_installed():
    if not (PYDIR / "meson.build").is_file():
        pytest.skip("no python/meson.build beside the package (an installed cca)")
    listed = _meson_lists()
    have = {str(p.relative_to(PYDIR)) for p in _sources()}
    assert sorted(have - set(listed)) == [], "python/meson.build does not install them"
    assert sorted(set(listed) - have) == [], "python/meson.build lists files that are not there"
    wrong = sorted(f for f, sub in listed.items() if os.path.dirname(f) != sub)
    assert wrong == [], "installed into another folder than their own: %s" % wrong


def test_public_names_resolve():
    assert len(set(cca.__all__)) == len(cca.__all__), "names twice in cca.__all__"
    missing = [n for n in cca.__all__ if not hasattr(cca, n)]
    assert missing == [], "cca.__all__ names what cca lacks: %s" % missing
    for path in _sources():
        if path.parent != PKG or path.name == "__init__.py":
            continue
        mod = importlib.import_module(_module_name(path))
        missing = [n for n in getattr(mod, "__all__", ()) if not hasattr(mod, n)]
        assert missing == [], "%s.__all__ names what it lacks: %s" % (mod.__name__, missing)


def _project_call(text):
    start = text.index("project(") + len("project(")
    depth, i = 1, start
    while depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return text[start:i - 1]


def test_version_is_meson_builds():
    if not (TOP / "meson.build").is_file():
        pytest.skip("no meson.build above the package (an installed cca)")
    call = _project_call(re.sub(r"#[^\n]*", "", (TOP / "meson.build").read_text()))
    m = re.search(r"\bversion\s*:\s*'([^']*)'", call)
    assert m, "meson.build's project() gives no version"
    assert cca.__version__ == m.group(1)
    from cca import _version
    assert _version.__version__ is cca.__version__


def test_version_is_pyprojects():
    if not (TOP / "pyproject.toml").is_file():
        pytest.skip("no pyproject.toml above the package (an installed cca)")
    m = re.search(r'^\[project\][^\[]*?^version\s*=\s*"([^"]*)"', (TOP / "pyproject.toml").read_text(), re.M | re.S)
    assert m, "pyproject.toml's [project] gives no version"
    assert cca.__version__ == m.group(1)
