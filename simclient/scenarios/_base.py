"""The scenario plug-in contract: parameters, tables, runs and summaries.

A scenario is a package ``simclient/scenarios/NAME/`` of three modules, one shape for all:

- ``__init__.py`` (light: the command line reads it without numpy): a subclass of :class:`Scenario`
  declaring, as class keywords (``class Ball(Scenario, name=..., title=..., params=..., tables=...)``),
  ``name`` (``simclient run NAME``), ``title`` (one line for ``--help``), ``params`` (a frozen
  dataclass of its parameters, ``Params`` on the class: fields made with :func:`param` carry a help
  text and a unit and become its command-line options, ``--field-name``; the integration method and
  its tolerances are parameters like any other) and ``tables`` (the tables it reads, by role, with
  the default table name of each; each role is also an option, ``--ROLE NAME-OR-LOCATION``);
- ``model.py``: ``run(params, tables, *, out=None, progress=None) -> Summary`` (``progress``: a
  :data:`Progress`, one line of text at a time; with ``out``, the report's files are written there);
- ``report.py``: ``text(summary) -> str`` and ``save(summary, out) -> list[Path]`` (histories, plots).

Defining the class registers it; :data:`SCENARIOS` knows every shipped scenario by name and imports
its package when asked for it.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from typing import TYPE_CHECKING

from simclient.errors import ParameterError, SourceUnavailable
from surfacestore.toml import toml_value

if TYPE_CHECKING:
    from simclient.io import Source

__all__ = ["Scenario", "Summary", "Tables", "save_outputs", "param", "extent_param", "check_choices", "check_positive",
           "SCENARIOS", "get_scenario", "locate", "extent", "Progress"]

#: progress callback: one line of text per stage
Progress = Callable[[str], None]


def time_progress(progress: Progress | None, t_end: float) -> Callable[[float], None] | None:
    """:func:`simclient.dynamics.simulate`'s ``progress`` (simulated time, s) for a scenario's
    ``progress`` (messages): "t = 0.1234 s of 0.4 s"."""
    return None if progress is None else (lambda t: progress(f"t = {t:.4g} s of {t_end:g} s"))


def save_outputs(summary: Summary, out: str | os.PathLike[str] | None, progress: Progress | None = None) -> Summary:
    """With ``out``: the scenario's histories and plots written there by its report's
    ``save(summary, out, progress)``, listed in the summary's ``outputs``; ``summary`` itself."""
    if out is not None:
        if progress is not None:
            progress(f"writing histories and plots to {out}")
        report = get_scenario(summary.scenario).part("report")
        summary.values["outputs"] = [str(f) for f in report.save(summary, Path(out), progress)]
    return summary


def param(default: Any, help: str, unit: str = "", *, choices: tuple[str, ...] | None = None,
          parse: Callable[[str], Any] | None = None, metavar: str | None = None) -> Any:
    """A scenario parameter exposed as a command-line option: ``help`` text, SI ``unit`` (empty
    for none), allowed ``choices``, a ``parse`` function for the option's text and its ``metavar``."""
    return field(default=default, metadata={"help": help, "unit": unit, "choices": choices, "parse": parse,
                                            "metavar": metavar})


def check_choices(params: Any, scenario: str) -> Any:
    """``params`` (a dataclass of :func:`param` fields) when every field with ``choices`` holds one
    of them; :class:`ParameterError` naming the field, the value and the choices otherwise."""
    for f in dataclasses.fields(params):
        choices = f.metadata.get("choices")
        value = getattr(params, f.name)
        if choices and value not in choices:
            raise ParameterError(f"{scenario}: unknown {f.name.replace('_', ' ')} {value!r}; choose one of "
                                 f"{', '.join(choices)}")
    return params


def check_positive(params: Any, scenario: str, *names: str) -> None:
    """:class:`ParameterError` naming the first of the fields ``names`` of ``params`` that is not
    positive and finite (with its unit)."""
    units = {f.name: f.metadata.get("unit", "") for f in dataclasses.fields(params)}
    for name in names:
        value = getattr(params, name)
        if not (value > 0 and math.isfinite(value)):
            unit = f" ({units[name]})" if units.get(name) else ""
            raise ParameterError(f"{scenario}: {name} must be positive and finite{unit}, got {value}")


def extent_param(default: tuple[int, int], help: str) -> Any:
    """A window-extent (or grid) parameter, ``WxH`` on the command line."""
    return param(default, help, parse=extent, metavar="WxH")


def extent(text: str) -> tuple[int, int]:
    """A window extent ``WxH`` in records, e.g. ``3x9`` (or a grid's, in elements); ``0x0`` says
    "none" where a parameter allows it."""
    try:
        a, b = text.lower().split("x")
        value = int(a), int(b)
    except ValueError:
        raise argparse.ArgumentTypeError(f"window extent must look like 3x9, got {text!r}") from None
    if min(value) < 1 and value != (0, 0):
        raise argparse.ArgumentTypeError(f"an extent's sides must be at least 1 (or both 0), got {text!r}")
    return value


def _finite(kind: type) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be finite, got {text!r}")
        return value
    parse.__name__ = kind.__name__
    return parse


def locate(name: str, store: str | None = None, tables: str | os.PathLike[str] | None = None) -> str:
    """Location of table ``name``: on a store (``store``, its base URL) or in a folder or under an
    ``s3://`` prefix (``tables``, default ``tables`` in the current directory)."""
    if store:
        return f"{store.rstrip('/')}/v1/surfaces/{name}"
    from surfacestore.format import table_location

    return table_location(tables if tables is not None else "tables", name)


@dataclass(frozen=True)
class Tables:
    """Where a run finds its tables: a store's base URL (``store``) or a folder (``folder``), a
    bearer ``token`` for the store, and per-role ``overrides`` (a table name, or a location: an
    ``http(s)://`` URL or a path).

    ``store`` may list replicas of one store, comma-separated (``http://a:8000,http://b:8000``):
    each process reads from one of them, chosen by its process id so that a sweep's workers spread
    over the replicas (client-side round robin, no proxy needed), and :meth:`open` falls over to
    the next replica when one does not answer."""

    store: str | None = None
    folder: str | os.PathLike[str] | None = None
    token: str | None = None
    overrides: dict[str, str] = field(default_factory=dict)

    def replicas(self) -> list[str]:
        """The store's replicas, this process's first (empty without a store)."""
        bases = [b.strip() for b in (self.store or "").split(",") if b.strip()]
        k = os.getpid() % len(bases) if bases else 0
        return bases[k:] + bases[:k]

    def names(self, defaults: Mapping[str, str]) -> list[str]:
        """The names of the tables read, by role (``defaults``: role -> default table name): each
        role's override where it is a table's name, not a location (a path or URL), else its default."""
        chosen = [self.overrides.get(role) or name for role, name in defaults.items()]
        return [name for name in chosen if not _is_location(name)]

    def location(self, role: str, default: str, replica: int = 0) -> str:
        """The location of the table playing ``role`` (default table name ``default``), on the
        ``replica``-th of :meth:`replicas` when it is on a store."""
        value = self.overrides.get(role) or default
        if _is_location(value):
            return value
        bases = self.replicas()
        return locate(value, bases[replica % len(bases)] if bases else None, self.folder)

    def source_kwargs(self) -> dict[str, Any]:
        return {"token": self.token} if self.token else {}

    def open(self, role: str, default: str) -> Source:
        """Open the table playing ``role`` (on a store with replicas: the first that answers)."""
        from simclient.io import open_surface

        tries = max(1, len(self.replicas()))
        for k in range(tries):
            location = self.location(role, default, k)
            kwargs = self.source_kwargs() if location.startswith("http") else {}
            if k < tries - 1:
                kwargs["retries"] = 1  # another replica is there: do not wait out a restart
            try:
                return open_surface(location, **kwargs)
            except SourceUnavailable:
                if k == tries - 1:
                    raise
        raise AssertionError("unreachable")


@dataclass
class Summary:
    """What a run returns: the ``scenario``'s name, ``values`` (its JSON summary: DESIGN's keys
    and more) and ``artifacts`` (results kept in memory for reports and plots: the integration
    result, the system, histories; never serialised). ``summary[key]`` reads ``values``."""

    scenario: str
    values: dict[str, Any]
    artifacts: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def __contains__(self, key: str) -> bool:
        return key in self.values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    @property
    def ok(self) -> bool:
        """False when the run failed (its ``status`` is not ``ok``)."""
        return self.values.get("status", "ok") == "ok"

    def to_json(self, indent: int | None = 2) -> str:
        """The JSON summary (``scenario`` first); numpy values become plain numbers and lists."""
        return json.dumps({"scenario": self.scenario, **self.values}, indent=indent, default=plain_json)


#: the shipped scenarios' packages under simclient.scenarios, by name
_PACKAGES = {"bouncing-ball": "bouncing_ball", "knee3d": "knee3d", "knee2d": "knee2d",
             "prosthetic-knee": "prosthetic_knee", "artificial-knee": "artificial_knee", "blankevoort": "blankevoort",
             "natural-knee": "natural_knee", "layer-drop": "layer_drop"}
_registered: dict[str, type[Scenario]] = {}


class _Registry(Mapping[str, "type[Scenario]"]):
    """The scenarios by name: the shipped ones (each imported when first asked for) and any other
    :class:`Scenario` subclass defined since."""

    def __getitem__(self, name: str) -> type[Scenario]:
        if name not in _registered and name in _PACKAGES:
            importlib.import_module(f"simclient.scenarios.{_PACKAGES[name]}")
        return _registered[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(_PACKAGES), **dict.fromkeys(_registered)})

    def __len__(self) -> int:
        return len(set(_PACKAGES) | set(_registered))


#: every scenario by name (a :class:`Scenario` subclass registers itself when defined)
SCENARIOS: Mapping[str, type[Scenario]] = _Registry()


def plain_json(x: Any) -> Any:
    """``x`` (a numpy array or number, a path) as a JSON value (``json.dumps``'s ``default``)."""
    import numpy as np

    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, Path):
        return str(x)
    raise TypeError(f"{type(x).__name__} is not JSON serialisable")


class Scenario:
    """A ready-made model run by ``simclient run NAME`` (see the module docstring)."""

    name: ClassVar[str]
    title: ClassVar[str]
    Params: ClassVar[type]
    tables: ClassVar[dict[str, str]]

    def __init_subclass__(cls, *, name: str, title: str, params: type, tables: dict[str, str],
                          **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.name, cls.title, cls.Params, cls.tables = name, title, params, dict(tables)
        if name in _registered:
            raise ParameterError(f"a scenario named {name!r} is already registered")
        _registered[name] = cls

    def table_names(self, params: Any) -> dict[str, str]:
        """The default table name of each role this run reads (``tables`` unless the parameters
        choose other tables, e.g. a spline variant)."""
        return dict(self.tables)

    @classmethod
    def part(cls, name: str) -> ModuleType:
        """The scenario package's module ``name``: ``model`` or ``report``."""
        return importlib.import_module(f"{cls.__module__}.{name}")

    def run(self, params: Any, tables: Tables, *, out: Path | None = None, progress: Progress | None = None) -> Summary:
        """Run with ``params`` on ``tables`` (the model's ``run``); with ``out``, write the
        report's histories and plots there."""
        return self.part("model").run(params, tables, out=out, progress=progress)

    def report(self, summary: Summary) -> str:
        """A short human-readable report of a run (the report's ``text``; the command line adds a
        failed run's message)."""
        return self.part("report").text(summary)

    # -- command line ---------------------------------------------------------------------------
    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """The scenario's options: one per :func:`param` field of ``Params`` and one per table role."""
        group = parser.add_argument_group(f"{cls.name} parameters")
        for f in dataclasses.fields(cls.Params):
            meta = f.metadata
            if "help" not in meta:
                continue
            unit = f" [{meta['unit']}]" if meta["unit"] else ""
            kind: type = type(f.default)
            kwargs: dict[str, Any] = {"dest": f.name, "default": f.default,
                                      "help": f"{meta['help']}{unit} (default {_show(f.default)})"}
            if kind is bool:
                kwargs["action"] = argparse.BooleanOptionalAction
            else:
                kwargs["type"] = meta["parse"] or (_finite(kind) if kind in (int, float) else kind)
                if meta["choices"]:  # checked by check_choices: a wrong name is bad input (exit 1), not usage
                    kwargs["help"] += f"; one of {', '.join(meta['choices'])}"
                kwargs["metavar"] = meta["metavar"] or f.name.upper()
            kwargs["help"] = kwargs["help"].replace("%", "%%")  # argparse formats help strings with %
            group.add_argument("--" + f.name.replace("_", "-"), **kwargs)
        if cls.tables:
            roles = parser.add_argument_group("tables (a name on --store / in --tables, or a location)")
            for role, default in cls.tables.items():
                roles.add_argument("--" + role.replace("_", "-"), dest=f"table_{role}", metavar="TABLE",
                                   help=f"the {role.replace('_', ' ')} table (default {default})")

    @classmethod
    def params_from_args(cls, args: argparse.Namespace) -> Any:
        return cls.params({f.name: getattr(args, f.name) for f in dataclasses.fields(cls.Params) if "help" in f.metadata})

    @classmethod
    def params(cls, values: dict[str, Any]) -> Any:
        """``Params`` from plain values (the command line's, or a sweep's TOML values), each checked
        as its option checks it: a number must be a finite number, a switch a boolean, a name one
        of its choices, an extent ``[W, H]`` or ``"WxH"``; :class:`ParameterError` naming the
        parameter otherwise."""
        fields = {f.name: f for f in dataclasses.fields(cls.Params) if "help" in f.metadata}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise ParameterError(f"{cls.name}: unknown parameter(s) {unknown}; choose from {', '.join(sorted(fields))}")
        return check_choices(cls.Params(**{k: _checked(cls.name, fields[k], v) for k, v in values.items()}), cls.name)

    @classmethod
    def tables_from_args(cls, args: argparse.Namespace) -> Tables:
        overrides = {role: getattr(args, f"table_{role}") for role in cls.tables if getattr(args, f"table_{role}")}
        return Tables(store=args.store, folder=args.tables, token=args.token, overrides=overrides)


def _checked(scenario: str, f: dataclasses.Field[Any], value: Any) -> Any:
    """``value`` for the :func:`param` field ``f``, of the field's kind (see :meth:`Scenario.params`)."""
    parse = f.metadata["parse"]
    kind: type = type(f.default)
    if value is None and f.default is None:  # (an optional parameter left out)
        return None
    try:
        if isinstance(value, (list, tuple)) and parse is extent:
            value = "x".join(str(v) for v in value)
        if isinstance(value, str) and parse is not None:
            return parse(value)
    except argparse.ArgumentTypeError as exc:
        raise ParameterError(f"{scenario}: {f.name}: {exc}") from None
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind in (int, float) or parse is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and (
            kind is not int or isinstance(value, int))
        if ok and kind is float:
            value = float(value)
    else:
        ok = isinstance(value, kind)
    if not ok:
        want = {bool: "true or false", int: "a whole number", float: "a finite number", str: "a name"}.get(
            kind, "a finite number" if parse is float else kind.__name__)
        raise ParameterError(f"{scenario}: {f.name} must be {want}, got {toml_value(value)}")
    return value


def _show(value: Any) -> str:
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f"{value[0]}x{value[1]}"
    return str(value)


def get_scenario(name: str) -> type[Scenario]:
    """The scenario registered as ``name``; :class:`ParameterError` listing them otherwise."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise ParameterError(f"unknown scenario {name!r}; choose one of {', '.join(SCENARIOS)}") from None


def _is_location(value: str) -> bool:
    """A table given by location (a path, a ``.zarr`` folder or a URL) rather than by name."""
    return value.startswith(("http://", "https://")) or "/" in value or value.endswith(".zarr")
