"""The architecture of DESIGN.md, checked: public APIs, a light ``import simclient``, no import
cycles, and the client's layers importing only the layers before them."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("surfacestore", "preprocess", "simclient", "sample_surfaces")
#: the client's layers, in order: each imports only the layers before it
LAYERS = ("simclient.io", "simclient.geometry", "simclient.contact", "simclient.dynamics", "simclient.results",
          "simclient.scenarios", "simclient.bench")
#: what the lower layers (io, geometry, contact, dynamics) never import
HEAVY_FOR_LOWER = ("preprocess", "surfacestore.app", "surfacestore.catalog", "surfacestore.cli", "fastapi",
                   "uvicorn", "starlette", "matplotlib")

#: DESIGN.md's public names of simclient (the test pins them: a change here is an API change)
SIMCLIENT_API = {
    "open_surface", "Source", "LocalSource", "HttpSource", "MemorySource", "CountingSource", "StorageWindow",
    "ContactPair", "Contact", "ContactStatus", "ContactForce", "ForceLaw", "HertzianLaw", "DoubleLayer", "make_law",
    "LAWS", "FoundationContact", "LinearLayer", "NonlinearLayer", "Body", "Surface", "ContactModel",
    "MultibodySystem", "simulate", "SimulationResult", "SimClientError", "SourceError", "SourceNotFound",
    "SourceRequestError", "SourceUnavailable", "SourceCorrupt", "TableChanged", "WindowError", "ContactError", "SimulationError",
    "ParameterError", "ServiceError", "PointerError",
}


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for f in (ROOT / pkg).rglob("*.py"):
            parts = list(f.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = f
    return mods


def _imports(path: Path, modules: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(project modules, other top-level names) imported anywhere in the file, function-level
    imports included. ``from a.b import c`` counts as an import of ``a.b.c`` when that is a module."""
    project, other = set(), set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = [f"{node.module}.{a.name}" for a in node.names]
            names = [n for n in subs if n in modules] or [node.module]
            if len(names) < len(subs) and node.module not in names:
                names.append(node.module)
        for n in names:
            (project if n in modules else other).add(n)
    return project, other


@pytest.fixture(scope="module")
def graph() -> dict[str, tuple[set[str], set[str]]]:
    modules = _modules()
    return {m: _imports(f, modules) for m, f in modules.items()}


@pytest.mark.parametrize("package", ["surfacestore", "preprocess", "simclient", *LAYERS])
def test_exported_members(package):
    """Each package's public names are exactly its ``__all__`` (as httpx's test_exported_members)."""
    mod = importlib.import_module(package)
    public = {n for n in dir(mod) if not n.startswith("_")} - {"annotations"}
    submodules = {n for n in public if type(getattr(mod, n)).__name__ == "module"}
    assert set(mod.__all__) == public - submodules
    for name in mod.__all__:
        assert getattr(mod, name) is not None


@pytest.mark.parametrize("package", ["surfacestore", "simclient"])
def test_every_error_is_exported_from_its_package(package):
    """A user catches ``surfacestore.InsufficientSpace`` as ``surfacestore.TableNotFound`` (the
    store's newest errors were missing from its package)."""
    errors = importlib.import_module(f"{package}.errors")
    assert set(errors.__all__) <= set(importlib.import_module(package).__all__)


def test_simclient_api_is_pinned():
    import simclient

    assert set(simclient.__all__) == SIMCLIENT_API


def test_import_simclient_is_light():
    """``import simclient`` loads nothing heavy; using its API loads the compiled kernels, which need
    no numba where they run ahead-of-time compiled (the default)."""
    code = ("import sys, simclient\n"
            "heavy = [m for m in ('numba', 'scipy.integrate', 'matplotlib', 'fastapi', 'uvicorn', 'starlette') "
            "if m in sys.modules]\n"
            "assert not heavy, heavy\n"
            "assert simclient.StorageWindow.__name__ == 'StorageWindow' and simclient.simulate\n"
            "from simclient.geometry import kernels\n"
            "assert kernels.mode() != 'aot' or 'numba' not in sys.modules, kernels.mode()\n"
            "assert 'scipy.integrate' not in sys.modules and 'scipy.optimize' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def _private_imports(path: Path, ours: tuple[str, ...]) -> list[str]:
    """Imports in ``path`` of a private name of another package: a module path with a component
    starting with ``_`` (``scipy.integrate._ivp``), or ``from X import _name``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
            names: list[str] = []
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module != "__future__":
            modules, names = [node.module], [a.name for a in node.names]
        else:
            continue
        for module in modules:
            if module.split(".")[0] in ours:
                continue
            private = [part for part in module.split(".") if part.startswith("_")]
            private += [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {module} ({', '.join(private)})")
    return found


def test_no_private_import_of_another_package():
    """No module of the packages imports a private name of another package (scipy's ``_ivp``
    internals held the compiled integrator: a scipy release renaming one field would have broken it)."""
    found = [p for pkg in PACKAGES for f in sorted((ROOT / pkg).rglob("*.py")) for p in _private_imports(f, PACKAGES)]
    assert not found, "\n".join(found)


def test_table_format_has_no_web_imports():
    banned = ("fastapi", "uvicorn", "starlette", "matplotlib", "preprocess")
    code = ("import sys, surfacestore.format, simclient.io, simclient.geometry, simclient.contact, simclient.dynamics\n"
            f"bad = [m for m in sys.modules if m.split('.')[0] in {banned!r} or m == 'surfacestore.app']\n"
            "assert not bad, bad\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_no_import_cycles(graph):
    """No cycle between the project's modules, function-level imports included."""
    edges = {m: project for m, (project, _) in graph.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                cycles.append(path[path.index(n):] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    assert not cycles, cycles


def _layer(module: str) -> int | None:
    for k, layer in enumerate(LAYERS):
        if module == layer or module.startswith(layer + "."):
            return k
    return None


def test_client_layers_import_only_the_layers_before_them(graph):
    bad = []
    for m, (project, other) in graph.items():
        k = _layer(m)
        if k is None:
            continue
        for n in project:
            if n.startswith("simclient.") and n != "simclient.errors":
                j = _layer(n)
                if j is None or j > k:
                    bad.append(f"{m} imports {n}")
            elif n == "simclient":
                bad.append(f"{m} imports the package root (the lazy public API)")
            elif n.startswith("surfacestore.") and n not in ("surfacestore.format", "surfacestore.objects",
                                                                 "surfacestore.errors", "surfacestore.vtk",
                                                                 "surfacestore.runtime", "surfacestore.toml"):
                bad.append(f"{m} imports {n}")
            if k <= 3 and any(n == h or n.startswith(h + ".") for h in HEAVY_FOR_LOWER):
                bad.append(f"{m} imports {n}")
        if k <= 3:
            bad += [f"{m} imports {n}" for n in other if n.split(".")[0] in {h.split(".")[0] for h in HEAVY_FOR_LOWER}]
    assert not bad, "\n".join(sorted(bad))


def test_only_the_command_line_and_the_demo_import_preprocess(graph):
    """The client builds no table itself: the command line and the demo build the missing sample
    tables (through ``preprocess.samples``), and benchmarks that need tables take a builder."""
    bad = [f"{m} imports {n}" for m, (project, _) in graph.items()
           if m.startswith("simclient") and m not in ("simclient.cli", "simclient.demo")
           for n in project if n == "preprocess" or n.startswith("preprocess.")]
    assert not bad, "\n".join(sorted(bad))


def test_no_scenario_solves_its_statics_itself():
    """Equilibria go through ``simclient.dynamics.StaticProblem``: no scenario model calls a root
    finder or settle of its own (``newton``, ``settle``, scipy's ``brentq``, ``fsolve``, ``root``)."""
    banned = {"newton", "settle", "brentq", "fsolve", "root", "root_scalar", "least_squares"}
    bad = []
    for f in sorted((ROOT / "simclient" / "scenarios").glob("*/model.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in banned:
                bad.append(f"{f.relative_to(ROOT)}:{node.lineno} calls {node.func.id}")
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("scipy.optimize"):
                bad.append(f"{f.relative_to(ROOT)}:{node.lineno} imports {node.module}")
    assert not bad, "\n".join(bad)


def test_every_scenario_has_one_entry_and_its_report_beside_it():
    """Each registered scenario is a package: ``model.run(params, tables, *, out=None,
    progress=None)``, ``report.text(summary)`` and ``report.save(summary, out, progress=None)``."""
    import inspect

    from simclient.scenarios import SCENARIOS

    for name in SCENARIOS:
        cls = SCENARIOS[name]
        run = inspect.signature(cls.part("model").run)
        assert [(p.name, p.kind, p.default) for p in run.parameters.values()] == [
            ("params", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
            ("tables", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
            ("out", inspect.Parameter.KEYWORD_ONLY, None), ("progress", inspect.Parameter.KEYWORD_ONLY, None)], name
        report = cls.part("report")
        assert list(inspect.signature(report.text).parameters) == ["summary"], name
        save = inspect.signature(report.save).parameters
        assert list(save) == ["summary", "out", "progress"] and save["progress"].default is None, name
    assert not (ROOT / "simclient" / "scenarios" / "report.py").exists()


def test_functions_stay_short_and_modules_readable():
    """No function of the packages is longer than 80 lines but compiled kernels that say why (a
    comment above them); no module is much longer than 600 lines."""
    long_functions, long_modules = [], []
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            text = f.read_text()
            lines = text.splitlines()
            if len(lines) > 650:
                long_modules.append(f"{f.relative_to(ROOT)}: {len(lines)} lines")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 80:
                    first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
                    why = lines[first - 1].lstrip().startswith("#") and any(
                        getattr(d, "func", d).id == "kernel" for d in node.decorator_list if hasattr(getattr(d, "func", d), "id"))
                    if not why:
                        long_functions.append(f"{f.relative_to(ROOT)}:{node.lineno} {node.name}")
    assert not long_functions, long_functions
    assert not long_modules, long_modules


def test_store_never_imports_the_other_packages(graph):
    bad = [f"{m} imports {n}" for m, (project, _) in graph.items() if m.startswith("surfacestore")
           for n in project if not n.startswith("surfacestore")]
    bad += [f"{m} imports {n}" for m, (project, _) in graph.items() if m.startswith("preprocess")
            for n in project if n.startswith("simclient")]
    assert not bad, bad
