"""Code versions derived from the source that decides each asset's content.

An asset's code version is a hash of the source its compute functions use: the functions,
classes and constants of their own module that they name, followed transitively, and every
other module of the package they name, whole, with that module's imports inside the package,
transitively. A file or folder of ``chronoscope_dagster/data`` counts as source of the modules
that name it, except the embedded sample dumps: those are the dumps' data, versioned by
``wikidata_dump``'s observations. Computed when the definitions load, so no hand bump can be
forgotten.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import textwrap
import types
from collections.abc import Iterable, Iterator
from pathlib import Path

import dagster as dg

PACKAGE = "chronoscope_dagster"
PACKAGE_DIR = Path(__file__).parent
DATA_DIR = PACKAGE_DIR / "data"
NOT_CODE = (DATA_DIR / "sample" / "dumps",)


def code_version(assets_def: dg.AssetsDefinition) -> str:
    """The code version of every asset ``assets_def`` materializes."""
    local: dict[str, str] = {}
    modules: set[str] = set()
    for op in _ops(assets_def.node_def):
        function = op.compute_fn.decorated_fn  # type: ignore[union-attr]
        _reach(function, function.__module__, local, modules)
    digest = hashlib.sha256()
    for name in sorted(local):
        digest.update(f"{name}\n{local[name]}\n".encode())
    for module in sorted(_import_closure(frozenset(modules))):
        digest.update(f"{module}\n".encode())
        digest.update(_module_source_digest(module))
    return digest.hexdigest()[:16]


def _ops(node: dg.NodeDefinition) -> Iterator[dg.OpDefinition]:
    if isinstance(node, dg.GraphDefinition):
        for child in node.node_defs:
            yield from _ops(child)
    else:
        yield node  # type: ignore[misc]


def _reach(obj: object, home: str, local: dict[str, str], modules: set[str]) -> None:
    """Record the source of ``obj`` (a function or class of module ``home``) and follow the names
    it uses: definitions of ``home`` by their own source, other package modules whole."""
    name = f"{home}.{getattr(obj, '__qualname__', obj)}"
    if name in local:
        return
    try:
        local[name] = inspect.getsource(obj)  # type: ignore[arg-type]
    except OSError:
        local[name] = _module_source_digest(home).hex()
    imported, assigned = _module_index(home)
    namespace = vars(inspect.getmodule(obj))  # type: ignore[arg-type]
    for used in sorted(_used_names(obj)):
        if used in imported:
            modules.add(imported[used])
        elif _defined_in(namespace.get(used), home):
            _reach(namespace[used], home, local, modules)
        elif used in assigned:
            local.setdefault(f"{home}.{used}", assigned[used])
    for held in _closure(obj):
        _reach(held, held.__module__, local, modules)


def _closure(obj: object) -> list[object]:
    """The package's functions and classes a function holds in its closure: what an op built by
    a factory (a sharded stage's) runs, from the module that defines it."""
    if not isinstance(obj, types.FunctionType):
        return []
    held = inspect.getclosurevars(obj).nonlocals
    return [
        value
        for _, value in sorted(held.items())
        if _defined_in(value, getattr(value, "__module__", ""))
        and value.__module__.startswith(f"{PACKAGE}.")
    ]


def _defined_in(obj: object, module: str) -> bool:
    return isinstance(obj, (types.FunctionType, type)) and obj.__module__ == module


def _used_names(obj: object) -> set[str]:
    """The global names ``obj``'s code, annotations and decorators use."""
    try:
        source = textwrap.dedent(inspect.getsource(obj))  # type: ignore[arg-type]
        names = {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}
    except (OSError, SyntaxError):
        names = set()
    if isinstance(obj, types.FunctionType):
        names.update(_names([obj.__code__]))
    return names


def _names(codes: Iterable[types.CodeType]) -> Iterator[str]:
    for code in codes:
        yield from code.co_names
        yield from _names(c for c in code.co_consts if isinstance(c, types.CodeType))


@functools.cache
def _module_index(module: str) -> tuple[dict[str, str], dict[str, str]]:
    """What ``module``'s top level binds: names imported from package modules (to the module
    they come from) and names assigned a value (to the assignment's source)."""
    path = _module_path(module)
    assert path is not None
    source = path.read_text()
    imported: dict[str, str] = {}
    assigned: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                imported[alias.asname or alias.name] = (
                    submodule if _module_path(submodule) else str(node.module)
                )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE) and alias.asname:
                    imported[alias.asname] = alias.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            segment = ast.get_source_segment(source, node) or ""
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        assigned[name.id] = segment
    return imported, assigned


@functools.cache
def _import_closure(modules: frozenset[str]) -> frozenset[str]:
    """``modules`` and what they import inside the package, transitively. A package named by
    an import brings all its modules: a package may load its modules by name (the chain
    families, the model backends), which no import statement shows."""
    seen: set[str] = set()
    pending = list(modules)
    while pending:
        module = pending.pop()
        if module in seen or _module_path(module) is None:
            continue
        seen.add(module)
        named, parents = _imports(module)
        pending.extend(named)
        pending.extend(parents)
        pending.extend(sub for m in named for sub in _submodules(m))
    return frozenset(seen)


def _submodules(package: str) -> list[str]:
    path = _module_path(package)
    if path is None or path.name != "__init__.py":
        return []
    return [
        ".".join([package, *file.relative_to(path.parent).with_suffix("").parts])
        for file in sorted(path.parent.rglob("*.py"))
        if file.name != "__init__.py"
    ]


def _module_path(module: str) -> Path | None:
    relative = Path(*module.split(".")[1:])
    for path in (PACKAGE_DIR / relative / "__init__.py", PACKAGE_DIR / f"{relative}.py"):
        if path.is_file():
            return path
    return None


@functools.cache
def _imports(module: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The package modules ``module`` imports, anywhere in its source, and its parent packages
    (whose ``__init__`` runs first)."""
    path = _module_path(module)
    assert path is not None
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: module.count(".") + 1 - node.level + is_package]
                base = ".".join([*parts, base] if base else parts)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    parents = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
    return (
        tuple(sorted(m for m in found if m.startswith(f"{PACKAGE}.") and _module_path(m))),
        tuple(sorted(m for m in parents if _module_path(m))),
    )


@functools.cache
def _module_source_digest(module: str) -> bytes:
    """The module's source and the data files it names: an entry of ``data/`` (a file such as
    ``properties.yaml`` or a folder such as ``templates``) named by a string in its code."""
    path = _module_path(module)
    assert path is not None
    source = path.read_bytes()
    digest = hashlib.sha256(source)
    strings = {
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    for entry in sorted(DATA_DIR.iterdir()):
        if entry.name in strings:
            files = sorted(entry.rglob("*")) if entry.is_dir() else [entry]
            for data_file in files:
                if _is_data(data_file):
                    digest.update(str(data_file.relative_to(DATA_DIR)).encode())
                    digest.update(data_file.read_bytes())
    return digest.digest()


def _is_data(path: Path) -> bool:
    return (
        path.is_file()
        and "__pycache__" not in path.parts
        and not any(path.is_relative_to(p) for p in NOT_CODE)
    )
