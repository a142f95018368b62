"""How the project's compiled kernels are declared, built and loaded.

A kernel is a Python function written once, in the subset of Python that numba compiles. Two
decorators declare them:

- ``@kernel(signature)``: an entry point that Python code calls, with its types in numba's
  notation (``"UniTuple(i8, 2)(f8[:, :, ::1], i8[::1], f8)"``);
- ``@helper`` (``@helper(inline=True)``): a function only kernels call, compiled into them.

How they run is chosen once per process (``SIMCLIENT_KERNELS``):

- ``aot`` (``auto``, the default, takes it wherever it can be built): every entry point of every
  module in :data:`KERNEL_MODULES` from one extension module compiled ahead of time by
  ``numba.pycc`` for the platform's generic CPU (the same machine code, so the same bits, on every
  machine of an architecture). Loading it takes a millisecond and imports no numba. Its file name
  carries :func:`source_hash`, a hash of those modules' sources: a kernel, or a callee of it in
  another file, edited since the module was built is never run stale; the module is built again,
  once, in a child process (about a minute), the first time a process meets the new sources.
- ``jit``: numba compiles each kernel in the process at its first call, and caches it on disk in a
  folder named by the same hash (so numba's own cache cannot serve a kernel whose callee changed).
- ``python``: the functions as written, interpreted (numba's ``NUMBA_DISABLE_JIT``): a reference
  for debugging, far slower.

``auto`` falls back to ``jit`` where the module cannot be built (no C compiler, no ``numba.pycc``)
and says so once on stderr. Built modules live in ``SIMCLIENT_KERNEL_DIR``, by default
``~/.cache/simclient/kernels`` (``$XDG_CACHE_HOME`` where set).

The extension module's functions do not check their arguments: an array of another type or layout
than the signature's is read as if it had them (and one of a higher rank overruns the record
numba unpacks it into). Every caller passes arrays it made itself, or checked: the one entry that
takes a user's arrays as they come, ``ContactPair.detect``'s, checks their types, dtypes and ranks
in Python and their shapes and strides in the kernel. With ``SIMCLIENT_CHECK_POINTERS=1`` every
call checks each argument against the signature first (:func:`checked`), and the
pointer-carrying callers check their addresses too.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np

__all__ = ["kernel", "helper", "mode", "module_path", "source_hash", "build", "KERNEL_MODULES", "CHECK", "checked",
           "KernelArgumentError", "kernel_cache_dir", "address_array"]

F = TypeVar("F", bound=Callable[..., Any])

_ROOT = Path(__file__).resolve().parents[1]  # the simclient package
#: the modules holding kernels and what they read at compile time (constants), in build order;
#: their sources make :func:`source_hash`
KERNEL_MODULES = (
    "simclient.geometry.kernels",
    "simclient.geometry.layout",
    "simclient.geometry._interpolation",
    "simclient.geometry._poses",
    "simclient.contact._newton",
    "simclient.contact._rules",
    "simclient.contact._raycast",
    "simclient.contact._nearest",
    "simclient.dynamics._rules",
    "simclient.dynamics._tableau",
    "simclient.dynamics._compiled",
)
#: bumped when the way modules are built changes (their names then change too)
_BUILD_FORMAT = 1
#: with ``SIMCLIENT_CHECK_POINTERS=1``: every kernel call checks its arguments (:func:`checked`)
CHECK = os.environ.get("SIMCLIENT_CHECK_POINTERS", "") not in ("", "0")


class KernelArgumentError(TypeError):
    """A kernel was called with an argument of another type or layout than its signature's
    (raised only while ``SIMCLIENT_CHECK_POINTERS`` is set: without it the call would read it
    wrongly)."""


def _file_of(module: str) -> Path:
    return _ROOT.joinpath(*module.split(".")[1:]).with_suffix(".py")


def source_hash() -> str:
    """A hash of the kernels' sources (:data:`KERNEL_MODULES`), numpy's major version and the build
    format: the key of the compiled module (and of numba's cache in ``jit`` mode)."""
    h = hashlib.sha256(f"{_BUILD_FORMAT} numpy {np.__version__.split('.')[0]}".encode())
    for module in KERNEL_MODULES:
        h.update(module.encode())
        h.update(_file_of(module).read_bytes())
    return h.hexdigest()[:16]


def kernel_cache_dir() -> Path:
    """Where compiled modules are kept: ``SIMCLIENT_KERNEL_DIR``, else the user's cache folder."""
    configured = os.environ.get("SIMCLIENT_KERNEL_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "simclient" / "kernels"


def module_name(key: str | None = None) -> str:
    return f"simclient_kernels_{key or source_hash()}"


def module_path(key: str | None = None) -> Path:
    """The compiled module's file for the sources' hash ``key`` (default: the current sources')."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    return kernel_cache_dir() / (module_name(key) + suffix)


# -- the mode -----------------------------------------------------------------------------------

_MODES = ("auto", "aot", "jit", "python", "build")
_requested = os.environ.get("SIMCLIENT_KERNELS", "auto").strip().lower() or "auto"
if _requested not in _MODES:
    raise RuntimeError(f"SIMCLIENT_KERNELS={_requested!r}: choose one of auto, aot, jit, python")
_mode: str | None = None
_aot: Any = None
#: build mode: export name -> (signature, function)
_exports: dict[str, tuple[str, Callable[..., Any]]] = {}


def mode() -> str:
    """How kernels run in this process: ``aot``, ``jit``, ``python`` (or ``build`` while one is
    being built); decided at the first kernel's declaration (see the module docstring)."""
    global _mode, _aot
    if _mode is not None:
        return _mode
    chosen = _requested
    if chosen in ("auto", "aot"):
        try:
            _aot = _load_or_build()
            chosen = "aot"
        except _Unavailable as exc:
            if _requested == "aot":
                raise RuntimeError(f"SIMCLIENT_KERNELS=aot: {exc}") from None
            print(f"simclient: compiled kernels unavailable ({exc}); numba compiles them at their first call "
                  "instead", file=sys.stderr)
            chosen = "jit"
    if chosen == "python":
        os.environ["NUMBA_DISABLE_JIT"] = "1"
    if chosen in ("jit", "build"):
        _numba_cache_for(source_hash())
    _mode = chosen
    return _mode


class _Unavailable(Exception):
    pass


def _load_or_build() -> Any:
    key = source_hash()
    path = module_path(key)
    if not path.exists():
        build(quiet=False)
    return _load(path, key)


def _load(path: Path, key: str) -> Any:
    spec = importlib.util.spec_from_file_location(module_name(key), path)
    if spec is None or spec.loader is None:
        raise _Unavailable(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise _Unavailable(f"cannot load {path}: {exc}") from None
    return module


def build(quiet: bool = True, force: bool = False) -> Path:
    """Build the compiled module of the current sources (if it is not there yet, or ``force``) in a
    child process; return its path. Concurrent builds of one version wait for each other (a
    lock), and a module appears under its name only when complete."""
    key = source_hash()
    path = module_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    import fcntl  # (POSIX; elsewhere the jit mode is the fallback)

    with open(path.with_suffix(".lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process is compiling this version: wait for it
            if not quiet:
                print("simclient: waiting for the kernels another process is compiling ...", file=sys.stderr,
                      flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists() and not force:
            return path
        if not quiet:
            print("simclient: compiling the kernels for this version of the sources (once; about a minute) ...",
                  file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        env = {**os.environ, "SIMCLIENT_KERNELS": "build", "SIMCLIENT_CHECK_POINTERS": "0"}
        env.pop("NUMBA_DISABLE_JIT", None)
        done = subprocess.run([sys.executable, "-c", "from simclient.geometry.kernels import _build_here; "
                               f"_build_here({str(path.parent)!r}, {key!r})"], env=env, capture_output=True, text=True)
        if done.returncode != 0 or not path.exists():
            raise _Unavailable("the build failed: " + (done.stderr.strip().splitlines() or ["no output"])[-1])
        if not quiet:
            print(f"simclient: kernels compiled in {time.perf_counter() - t0:.0f} s into {path}", file=sys.stderr,
                  flush=True)
        _prune(path.parent)
    return path


#: compiled modules kept (the newest; other checkouts or versions may still use them)
KEEP_MODULES = 8


def _prune(folder: Path) -> None:
    """Delete all but the :data:`KEEP_MODULES` newest compiled modules in ``folder``."""
    built = sorted(folder.glob("simclient_kernels_*" + importlib.machinery.EXTENSION_SUFFIXES[0]),
                   key=lambda f: f.stat().st_mtime, reverse=True)
    for old in built[KEEP_MODULES:]:
        old.unlink(missing_ok=True)
        old.with_suffix(".lock").unlink(missing_ok=True)


def _build_here(folder: str, key: str) -> None:
    """(In the child process of :func:`build`.) Import every kernel module in build mode and
    compile their entry points into one module, written under a temporary name and renamed."""
    import tempfile
    import warnings

    assert mode() == "build"
    for module in KERNEL_MODULES:
        importlib.import_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (numba.pycc's pending deprecation)
        from numba.pycc import CC
    if key != source_hash():
        raise RuntimeError("the kernel sources changed during the build")
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        cc = CC(module_name(key))
        cc.output_dir = tmp
        cc.verbose = False
        for name, (signature, func) in _exports.items():
            cc.export(name, signature)(func)
        cc.compile()
        built = next(Path(tmp).glob(module_name(key) + "*"))
        os.replace(built, Path(folder) / (module_name(key) + importlib.machinery.EXTENSION_SUFFIXES[0]))


def _numba_cache_for(key: str) -> None:
    """numba's on-disk cache in a folder of the sources' hash (before numba is imported, else in
    its configuration)."""
    folder = str(kernel_cache_dir() / f"numba-{key}")
    os.environ["NUMBA_CACHE_DIR"] = folder
    numba = sys.modules.get("numba")
    if numba is not None:
        numba.config.CACHE_DIR = folder


# -- declaring kernels ---------------------------------------------------------------------------

def _export_name(func: Callable[..., Any]) -> str:
    return f"{func.__module__.replace('simclient.', '').replace('.', '__')}__{func.__name__}"


def kernel(signature: str, *, inline: bool = False) -> Callable[[F], F]:
    """Declare an entry point called from Python, with its numba ``signature``; in ``aot`` mode it
    is the compiled module's function (checked with ``SIMCLIENT_CHECK_POINTERS``). ``inline``: other
    kernels inline it (a small one in a hot loop)."""
    def declare(func: F) -> F:
        m = mode()
        name = _export_name(func)
        if m == "build":
            import numba

            _exports[name] = (signature, func)
            return cast(F, numba.njit(error_model="numpy", inline="always" if inline else "never")(func))
        if m == "aot":
            compiled = getattr(_aot, name, None)
            if compiled is None:
                raise RuntimeError(f"the compiled kernels have no {name}: rebuild them (simclient kernels --rebuild)")
        elif m == "jit":
            import numba

            compiled = numba.njit(cache=True, error_model="numpy", inline="always" if inline else "never")(func)
        else:
            compiled = func
        return cast(F, checked(compiled, signature, name) if CHECK else compiled)
    return declare


def helper(func: F | None = None, *, inline: bool = False) -> Any:
    """Declare a function that only kernels call (compiled into them; numba's ``inline="always"``
    with ``inline``). Outside ``build`` and ``jit`` modes it stays the plain function."""
    def declare(f: F) -> F:
        if mode() in ("build", "jit"):
            import numba

            options: dict[str, Any] = {"error_model": "numpy", "inline": "always" if inline else "never"}
            if mode() == "jit":
                options["cache"] = True
            return cast(F, numba.njit(**options)(f))
        return f
    return declare(func) if func is not None else declare


# -- argument checks -----------------------------------------------------------------------------

_SCALARS = {"f8": (float, int, np.floating, np.integer), "i8": (int, np.integer, bool, np.bool_),
            "b1": (bool, np.bool_, int, np.integer)}
_DTYPES = {"f8": np.float64, "i8": np.int64, "b1": np.bool_}


def _split(text: str) -> list[str]:
    """``text`` split at its top-level commas."""
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        depth += ch in "([" and 1 or (-1 if ch in ")]" else 0)
        if ch == "," and depth == 0:
            parts.append(text[start:k].strip())
            start = k + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _arguments(signature: str) -> list[str]:
    """The argument types of a numba signature string."""
    depth = 0
    for k, ch in enumerate(signature):  # the return type ends where depth 0 meets "("
        if ch == "(" and depth == 0 and k > 0 and not signature[:k].endswith(("Tuple", "UniTuple")):
            return _split(signature[k + 1:-1])
        depth += ch in "([" and 1 or (-1 if ch in ")]" else 0)
    raise ValueError(f"not a signature: {signature!r}")


_ARRAY = re.compile(r"^(f8|i8|b1)\[([:, 1]*)\]$")


def _check(value: Any, typ: str, where: str) -> None:
    m = _ARRAY.match(typ)
    if m:
        dims = [d.strip() for d in m.group(2).split(",")]
        if not isinstance(value, np.ndarray) or value.dtype != _DTYPES[m.group(1)] or value.ndim != len(dims):
            got = f"{value.dtype}[{value.ndim}-d]" if isinstance(value, np.ndarray) else type(value).__name__
            raise KernelArgumentError(f"{where}: expected a {typ} array, got {got}")
        if dims[-1] == "::1" and not value.flags.c_contiguous:
            raise KernelArgumentError(f"{where}: expected a C-contiguous {typ} array, got strides {value.strides}")
        return
    if typ.startswith("Tuple((") or typ.startswith("UniTuple("):
        if typ.startswith("UniTuple("):
            inner, count = _split(typ[len("UniTuple("):-1])
            types = [inner] * int(count)
        else:
            types = _split(typ[len("Tuple(("):-2])
        if not isinstance(value, tuple) or len(value) != len(types):
            raise KernelArgumentError(f"{where}: expected a tuple of {len(types)}, got {value!r:.80}")
        for k, (v, t) in enumerate(zip(value, types)):
            _check(v, t, f"{where}[{k}]")
        return
    if typ in _SCALARS:
        if not isinstance(value, _SCALARS[typ]) or (typ != "f8" and isinstance(value, (float, np.floating))):
            raise KernelArgumentError(f"{where}: expected {typ}, got {type(value).__name__} {value!r:.40}")
        return
    raise ValueError(f"{where}: the checks know no type {typ!r}")


def checked(func: Callable[..., Any], signature: str, name: str) -> Callable[..., Any]:
    """``func`` checking each call's arguments against ``signature`` first
    (:class:`KernelArgumentError` naming the kernel and the argument)."""
    types = _arguments(signature)

    def call(*args: Any) -> Any:
        if len(args) != len(types):
            raise KernelArgumentError(f"kernel {name}: {len(types)} arguments expected, got {len(args)}")
        for k, (value, typ) in enumerate(zip(args, types)):
            _check(value, typ, f"kernel {name}, argument {k}")
        return func(*args)
    call.__name__ = call.__qualname__ = getattr(func, "__name__", name)
    call.__doc__ = getattr(func, "__doc__", None)
    return call


# -- arrays at addresses (inside kernels) -------------------------------------------------------

def _address_array_numba() -> Any:
    import numba
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def void_pointer(typingctx: Any, address: Any) -> Any:
        """An integer address as a ``void *`` (for ``numba.carray``)."""
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            return builder.inttoptr(args[0], cgutils.voidptr_t)
        return types.voidptr(address), codegen

    options: dict[str, Any] = {"inline": "always"}
    if _mode == "jit":
        options["cache"] = True

    to_pointer: Any = void_pointer  # (its signature inside compiled code)

    @numba.njit(**options)
    def address_array(address: int, shape: Any, dtype: Any) -> Any:
        return numba.carray(to_pointer(address), shape, dtype)
    return address_array


def _address_array_python(address: int, shape: Any, dtype: Any) -> np.ndarray:
    """The array of ``shape`` and ``dtype`` at ``address`` (a view; the owner keeps it alive)."""
    import ctypes

    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    dt = np.dtype(dtype)
    size = int(np.prod(shape)) * dt.itemsize
    buf = (ctypes.c_char * size).from_address(int(address))
    return np.frombuffer(buf, dtype=dt).reshape(shape)


#: ``address_array(address, shape, dtype)``: the array at an integer address, inside kernels (a
#: caller that holds several arrays hands them to one call by the address of one of them)
address_array: Callable[..., Any] = _address_array_numba() if mode() in ("build", "jit") else _address_array_python


def report() -> dict[str, Any]:
    """What ``simclient kernels`` prints: the mode, the sources' hash, the module's path."""
    m = mode()
    out: dict[str, Any] = {"mode": m, "source_hash": source_hash(), "cache": str(kernel_cache_dir())}
    if m == "aot":
        out["module"] = str(module_path())
    return out

