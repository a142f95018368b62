"""Parameter sweeps of any scenario on Dask distributed (``simclient sweep SPEC.toml``).

A sweep specification (TOML)::

    scenario = "bouncing-ball"        # any registered scenario
    [fixed]                           # parameters shared by every run
    t_end = 0.12
    [grid]                            # cartesian product
    law = ["hertz", "flores"]
    cr = [0.5, 0.9]
    [sample]                          # optional Monte Carlo: n draws per grid point
    n = 4
    seed = 1
    K = {uniform = [4e9, 6e9]}        # or normal = [mean, sd], or choice = [a, b, ...]
    [output]                          # optional: the summary keys kept per run (default: every scalar)
    keys = ["max_indentation_m"]

Every run is one Dask task: it opens its own tables (the store's URL or the tables' folder travel
as a :class:`Tables`, never arrays), runs the scenario and returns its summary's scalar values. A
run that raises is recorded with its parameters and error and the others go on; a task whose
worker dies is run again elsewhere (Dask's retries). The rows (parameters and summary keys per
run, in the order of the specification) go to ``DIR/sweep.csv`` and ``DIR/sweep.zarr`` (one array
per column), with a plot per swept parameter.
"""

from __future__ import annotations

import itertools
import json
import math
import time
import tomllib
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from simclient.errors import ParameterError, ServiceError
from simclient.scenarios._base import Tables, get_scenario, plain_json
from surfacestore.toml import toml_value

__all__ = ["SweepSpec", "load_sweep", "run_sweep", "cluster"]

SECTIONS = {"scenario", "fixed", "grid", "sample", "output"}


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep: the scenario, its fixed parameters, the grid (name -> values), the Monte
    Carlo draws (``n`` per grid point, ``seed``, name -> distribution) and the kept keys."""

    scenario: str
    fixed: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    n: int = 0
    seed: int = 0
    sample: dict[str, dict[str, Any]] = field(default_factory=dict)
    keys: list[str] | None = None

    def runs(self) -> list[dict[str, Any]]:
        """Every run's parameters: the grid's product, each with ``n`` draws (if any), over ``fixed``."""
        names = list(self.grid)
        points = [dict(zip(names, values)) for values in itertools.product(*self.grid.values())] or [{}]
        if not self.sample:
            return [{**self.fixed, **p} for p in points]
        rng = np.random.default_rng(self.seed)
        out = []
        for p in points:
            for _ in range(self.n):
                draw = {k: _draw(rng, k, d) for k, d in self.sample.items()}
                out.append({**self.fixed, **p, **draw})
        return out

    @property
    def swept(self) -> list[str]:
        return [*self.grid, *self.sample]


#: the most runs a sweep may have unless told otherwise (``--max-runs``)
MAX_RUNS = 10_000


def _check_distribution(where: str, name: str, dist: Any) -> None:
    """A ``[sample]`` entry: one of ``uniform = [low, high]``, ``normal = [mean, sd]`` (finite
    numbers, low < high, sd > 0) or ``choice = [a, b, ...]`` (not empty)."""
    if not (isinstance(dist, dict) and len(dist) == 1 and isinstance(next(iter(dist.values())), list)):
        raise ParameterError(f"{where}: [sample] {name} must be one distribution, e.g. {{uniform = [low, high]}}, "
                             f"got {toml_value(dist)}")
    (kind, args), = dist.items()
    if kind == "choice":
        if not args:
            raise ParameterError(f"{where}: [sample] {name}: choice needs at least one value")
        return
    if kind not in ("uniform", "normal"):
        raise ParameterError(f"{where}: [sample] {name}: unknown distribution {kind!r}; use uniform, normal or choice")
    if len(args) != 2 or not all(isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a)
                                 for a in args):
        raise ParameterError(f"{where}: [sample] {name}: {kind} takes two finite numbers, got {toml_value(args)}")
    if (kind == "uniform" and not args[0] < args[1]) or (kind == "normal" and not args[1] > 0):
        what = "low < high" if kind == "uniform" else "a positive standard deviation"
        raise ParameterError(f"{where}: [sample] {name}: {kind} needs {what}, got {toml_value(args)}")


def _whole_number(where: str, key: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ParameterError(f"{where}: {key} must be a whole number of at least {least}, got {toml_value(value)}")
    return value


def _draw(rng: np.random.Generator, name: str, dist: dict[str, Any]) -> Any:
    (kind, args), = dist.items()
    if kind == "uniform":
        return float(rng.uniform(*args))
    if kind == "normal":
        return float(rng.normal(*args))
    if kind == "choice":
        return args[int(rng.integers(len(args)))]
    raise ParameterError(f"sweep: [sample] {name}: unknown distribution {kind!r}; use uniform, normal or choice")


def load_sweep(path: str | Path, max_runs: int = MAX_RUNS) -> SweepSpec:
    """Read and check a whole sweep specification before anything runs: an unknown scenario,
    section or parameter, a section that is not a table, a grid that is not a list, a bad
    distribution, ``n`` or ``keys``, any run's parameter value (every random draw included), or more
    than ``max_runs`` runs is a :class:`ParameterError` naming it."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ParameterError(f"sweep {path}: cannot read it: {exc}") from None
    unknown = set(raw) - SECTIONS
    if unknown:
        raise ParameterError(f"sweep {path}: unknown section(s) {sorted(unknown)}; use {sorted(SECTIONS)}")
    if "scenario" not in raw:
        raise ParameterError(f"sweep {path}: no scenario named (scenario = \"NAME\")")
    where = f"sweep {path}"
    if not isinstance(raw["scenario"], str):
        raise ParameterError(f"{where}: scenario must be a name, got {toml_value(raw['scenario'])}")
    cls = get_scenario(raw["scenario"])
    known = {f.name for f in fields(cls.Params) if "help" in f.metadata}
    for section in ("fixed", "grid", "sample", "output"):
        if not isinstance(raw.get(section, {}), dict):
            raise ParameterError(f"{where}: [{section}] must be a table of keys, got {toml_value(raw[section])}")
    fixed, grid, sample = raw.get("fixed", {}), raw.get("grid", {}), dict(raw.get("sample", {}))
    n = _whole_number(where, "[sample] n", sample.pop("n", 1 if sample else 0), 1 if sample else 0)
    seed = _whole_number(where, "[sample] seed", sample.pop("seed", 0), 0)
    for section, names in (("fixed", fixed), ("grid", grid), ("sample", sample)):
        bad = set(names) - known
        if bad:
            raise ParameterError(f"sweep {path}: [{section}] unknown {cls.name} parameter(s) {sorted(bad)}; "
                                 f"choose from {', '.join(sorted(known))}")
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ParameterError(f"sweep {path}: [grid] {name} must be a non-empty list, got {values!r}")
    for name, dist in sample.items():
        _check_distribution(where, name, dist)
    keys = raw.get("output", {}).get("keys")
    if keys is not None and not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
        raise ParameterError(f"{where}: [output] keys must be a list of summary keys, got {toml_value(keys)}")
    spec = SweepSpec(raw["scenario"], fixed, grid, n, seed, sample, keys)
    count = math.prod(len(v) for v in grid.values()) * (n if sample else 1)
    if count > max_runs:
        raise ParameterError(f"{where}: {count} runs, more than the {max_runs} allowed (--max-runs)")
    for k, params in enumerate(spec.runs()):
        try:  # every run's values (each random draw too) are checked before anything runs
            cls.params(params)
        except ParameterError as exc:
            raise ParameterError(f"{where}: run {k}: {exc}") from None
    return spec


def _kept(values: dict[str, Any], keys: list[str] | None) -> dict[str, Any]:
    """The summary's scalar values (numbers, strings, booleans), or the ``keys`` asked for, lists
    and tables kept as they are (JSON values: plain lists and dicts of numbers)."""
    if keys is not None:
        return {k: _plain(values.get(k)) for k in keys}
    return {k: v for k, v in values.items() if _is_scalar(v) and k not in ("outputs",)}


def _plain(v: Any) -> Any:
    """``v`` as JSON holds it: numpy numbers and arrays as Python numbers and lists."""
    return json.loads(json.dumps(v, default=plain_json))


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str, np.number))


def run_one(scenario: str, params: dict[str, Any], tables: Tables, keys: list[str] | None) -> dict[str, Any]:
    """One sweep task (in a worker): the run's scalar summary, or its error."""
    cls = get_scenario(scenario)
    try:
        summary = cls().run(cls.params(params), tables)
    except Exception as exc:  # a failed run is a row of the sweep, not a failed sweep
        return {"error": f"{type(exc).__name__}: {exc}"}
    out = _kept(summary.values, keys)
    if not summary.ok:
        out["error"] = summary.get("message", "failed")
    return out


def _prepare_worker() -> None:
    import simclient.scenarios  # noqa: F401  (registers the scenarios, loads the numerical stack)


@contextmanager
def cluster(scheduler: str) -> Iterator[Any]:
    """A Dask client: ``local`` or ``local:N`` (a LocalCluster of N single-threaded worker
    processes, default the CPUs) or ``tcp://HOST:PORT`` (an existing scheduler)."""
    from distributed import Client, LocalCluster

    if scheduler.startswith("tcp://"):
        try:
            client = Client(scheduler, timeout="20s")
        except OSError as exc:  # (a traceback before)
            raise ServiceError(f"sweep: no Dask scheduler answers at {scheduler} ({exc})") from None
        with client:
            yield client
        return
    if scheduler != "local" and not scheduler.startswith("local:"):
        raise ParameterError(f"sweep: --scheduler must be local, local:N or tcp://HOST:PORT, got {scheduler!r}")
    try:
        n = int(scheduler.split(":", 1)[1]) if ":" in scheduler else None
    except ValueError:
        raise ParameterError(f"sweep: --scheduler local:N needs a whole number of workers, got {scheduler!r}") from None
    if n is not None and n < 1:
        raise ParameterError(f"sweep: --scheduler local:N needs at least one worker, got {n}")
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
            Client(lc) as client:
        yield client


def run_sweep(spec: SweepSpec, tables: Tables, client: Any, *, out: Path | None = None,
              progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Run every run of ``spec`` as a task on ``client`` (a Dask client); return the JSON summary
    ``{"scenario", "runs", "failed", "wall_s", "prepare_s", "rows"}`` (``wall_s``: the runs, s;
    ``prepare_s``: the workers importing the scenarios first, s) and, with ``out``, save the table
    and plots. Rows keep the specification's order; a failed run's row has its ``error``."""
    from distributed import as_completed

    runs = spec.runs()
    # every worker imports the scenarios (about a second: numpy, scipy, numba, the scenario
    # modules) before the clock starts, so wall_s measures the runs rather than the workers' start-up
    t_prep = time.perf_counter()
    client.run(_prepare_worker)
    prepare_s = time.perf_counter() - t_prep
    t0 = time.perf_counter()
    # keys unique to this sweep: a cluster hands back the result of a key it still holds, so keys
    # reused by an earlier sweep on the same cluster would return that sweep's rows
    tag = uuid.uuid4().hex[:12]
    futures = [client.submit(run_one, spec.scenario, p, tables, spec.keys, key=f"{spec.scenario}-{tag}-{k}",
                             retries=2, pure=False) for k, p in enumerate(runs)]
    index = {f.key: k for k, f in enumerate(futures)}
    results: list[dict[str, Any] | None] = [None] * len(runs)
    for done, fut in enumerate(as_completed(futures), 1):
        try:
            results[index[fut.key]] = fut.result()
        except Exception as exc:  # the task itself failed (e.g. its worker died more often than the retries)
            results[index[fut.key]] = {"error": f"{type(exc).__name__}: {exc}"}
        if progress:
            progress(done, len(runs))
    rows = [{**p, **(r or {})} for p, r in zip(runs, results)]
    summary: dict[str, Any] = {
        "scenario": spec.scenario, "runs": len(rows),
        "failed": [{"run": k, "parameters": runs[k], "error": r["error"]} for k, r in enumerate(rows) if "error" in r],
        "wall_s": time.perf_counter() - t0, "prepare_s": prepare_s, "rows": rows,
    }
    if out is not None:
        summary["outputs"] = [str(f) for f in save_sweep(spec, rows, out)]
    return summary


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        cols += [k for k in r if k not in cols]
    return cols


#: unit of a summary key, by its name's ending (the summaries' convention: ``max_indentation_m``)
UNITS = {"_m_s": "m/s", "_rad_s": "rad/s", "_Nm": "N m", "_m2": "m^2", "_Pa": "Pa", "_deg": "deg", "_N": "N",
         "_J": "J", "_m": "m", "_s": "s", "_kg": "kg", "_MB": "MB", "_us": "us"}


def axis_label(key: str, unit: str = "") -> str:
    """A plot's label for a summary key or parameter: its words, and its unit in brackets (``unit``,
    or the one its name ends in)."""
    words = key
    if not unit:
        ending = next((e for e in UNITS if key.endswith(e)), "")
        unit, words = UNITS.get(ending, ""), key[:len(key) - len(ending)] if ending else key
    if key == "energy_drift":
        unit = "relative"
    return words.replace("_", " ") + (f" [{unit}]" if unit else "")


def save_sweep(spec: SweepSpec, rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """``sweep.csv`` (lists and tables as JSON text), ``sweep.zarr`` (a Zarr v3 group: one 1-D
    float64 array per numeric column, NaN for a missing value; the other columns in its attributes,
    as JSON values) and ``sweep_PARAM.png`` per swept parameter: the first six numeric or list-valued
    summary keys against it (a list's every element at its run's value), labelled with their units."""
    import csv

    import zarr

    out.mkdir(parents=True, exist_ok=True)
    cols = _columns(rows)
    files = [out / "sweep.csv", out / "sweep.zarr"]
    with open(files[0], "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows({k: v if _is_scalar(v) else json.dumps(v) for k, v in r.items()} for r in rows)
    group = zarr.open_group(str(files[1]), mode="w", zarr_format=3)
    numeric, lists, other = [], [], {}
    for c in cols:
        vals = [r.get(c) for r in rows]
        if all(v is None or _is_number(v) for v in vals):
            group.create_array(c, data=np.array([math.nan if v is None else float(v) for v in vals]))
            numeric.append(c)
        else:  # Zarr v3 has no settled text data type yet: these columns live in the group's attributes
            other[c] = vals
            if all(v is None or (isinstance(v, list) and all(_is_number(x) for x in v)) for v in vals):
                lists.append(c)
    group.attrs.update({"scenario": spec.scenario, "swept": spec.swept, "columns": cols, "text_columns": other})
    outputs = [c for c in numeric + lists if c not in spec.swept and c not in spec.fixed][:6]  # the first six
    if outputs:
        units = {f.name: f.metadata.get("unit", "") for f in fields(get_scenario(spec.scenario).Params)}
        files += [_plot(spec, rows, p, outputs, units.get(p, ""), out) for p in spec.swept]
    return files


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.number)) and not isinstance(v, bool)


def _plot(spec: SweepSpec, rows: list[dict[str, Any]], p: str, outputs: list[str], unit: str, out: Path) -> Path:
    """``sweep_P.png``: each of ``outputs`` against the swept parameter ``p`` (of ``unit``)."""
    from matplotlib.ticker import MaxNLocator

    from simclient.results import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, len(outputs), figsize=(4 * len(outputs), 3.5), squeeze=False)
    for ax, c in zip(axes[0], outputs):
        xs, ys = [], []
        for r in rows:
            values = r.get(c)
            values = values if isinstance(values, list) else [math.nan if values is None else values]
            xs += [str(r.get(p)) if isinstance(r.get(p), str) else r.get(p)] * len(values)
            ys += values
        ax.scatter(xs, ys, s=12)
        ax.set(xlabel=axis_label(p, unit), ylabel=axis_label(c) + (" (each)" if any(isinstance(r.get(c), list)
                                                                                   for r in rows) else ""))
        if all(isinstance(y, int) for y in ys):
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(f"sweep of {spec.scenario}: against {p}")
    fig.tight_layout()
    path = out / f"sweep_{p}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
