"""Studies: sets of independent scenario runs compared side by side (``simclient study NAME``).

A :class:`Study` names a scenario and its cases (a label and the parameters that differ from the
scenario's defaults). :func:`run_study` runs the cases in parallel processes (they share nothing
but the tables, which each process opens itself) and returns the JSON summary
``{"study": NAME, "cases": [{"case": LABEL, ...the run's keys...}]}``; with ``out`` it also saves
each case's histories and the study's comparison plots.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simclient.errors import ParameterError
from simclient.scenarios._base import SCENARIOS, Summary, Tables, get_scenario
from surfacestore import objects

__all__ = ["Study", "STUDIES", "run_study", "get_study"]


@dataclass(frozen=True)
class Study:
    """A named set of runs of one scenario: ``cases`` are ``(label, parameters)`` pairs. Its
    comparison plot is its scenario's report's ``save_study(study, cases, out)``, or its
    ``study_figure(plt, cases)`` saved as ``out/NAME.png``."""

    name: str
    scenario: str
    title: str
    cases: tuple[tuple[str, dict[str, Any]], ...]


_registered: dict[str, Study] = {}


class _Studies(Mapping[str, Study]):
    """The studies by name: each scenario's package registers its own (all are imported, light,
    when the studies are first listed)."""

    def _all(self) -> dict[str, Study]:
        for name in SCENARIOS:
            SCENARIOS[name]
        return _registered

    def __getitem__(self, name: str) -> Study:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


#: the studies by name
STUDIES: Mapping[str, Study] = _Studies()


def register(study: Study) -> Study:
    """Register ``study`` (its scenario's package does, when imported)."""
    _registered[study.name] = study
    return study


def get_study(name: str) -> Study:
    """The study registered as ``name``; :class:`ParameterError` listing them otherwise."""
    try:
        return STUDIES[name]
    except KeyError:
        raise ParameterError(f"unknown study {name!r}; choose one of {', '.join(STUDIES)}") from None


def save_study(study: Study, cases: list[tuple[str, Summary]], out: Path) -> list[Path]:
    """The comparison plot of ``study``'s ``cases`` into ``out`` (see :class:`Study`)."""
    report = get_scenario(study.scenario).part("report")
    out.mkdir(parents=True, exist_ok=True)
    if hasattr(report, "save_study"):
        return report.save_study(study, cases, out)
    from simclient.results import pyplot

    plt = pyplot()
    fig = report.study_figure(plt, cases)
    fig.suptitle(f"study {study.name}: {study.title}")
    fig.tight_layout()
    files = [out / f"{study.name}.png"]
    fig.savefig(files[0], dpi=110)
    plt.close(fig)
    return files


def _run_case(scenario: str, params: dict[str, Any], tables: Tables) -> Summary:
    """One case (in a worker process): the summary's values and its history, which pickle."""
    cls = get_scenario(scenario)
    s = cls().run(cls.Params(**params), tables)
    return Summary(s.scenario, s.values, {"history": s.artifacts.get("history", {})})


def run_study(study: Study, tables: Tables, *, out: Path | None = None, workers: int | None = None,
              progress: Callable[[str], None] | None = None) -> tuple[dict[str, Any], list[tuple[str, Summary]]]:
    """Run every case of ``study`` (``workers`` processes, default the CPUs, at most the cases)
    and return the JSON summary and the ``(label, summary)`` pairs."""
    if workers is not None and workers < 1:
        raise ParameterError(f"study {study.name}: workers must be at least 1, got {workers}")
    n = max(1, min(workers or os.cpu_count() or 1, len(study.cases)))
    labels = [label for label, _ in study.cases]
    if n == 1:
        results = [_run_case(study.scenario, p, tables) for _, p in study.cases]
    else:
        # a process that has read object storage holds its client's runtime threads, which a forked
        # child inherits mid-lock (the first study on a bucket hung): those workers come from a fork
        # server (about 2 s more per study); tables in folders or on a store are forked as before
        remote = any(objects.is_object_url(str(x)) for x in (tables.folder, *tables.overrides.values()))
        context = multiprocessing.get_context("forkserver" if remote else "fork")
        if remote:
            context.set_forkserver_preload(["simclient.scenarios"])
        with ProcessPoolExecutor(n, mp_context=context) as pool:
            futures = [pool.submit(_run_case, study.scenario, p, tables) for _, p in study.cases]
            results = []
            for label, fut in zip(labels, futures):
                results.append(fut.result())
                if progress:
                    progress(f"{study.name}: {label} done ({len(results)}/{len(futures)})")
    cases = list(zip(labels, results))
    summary: dict[str, Any] = {"study": study.name, "cases": [{"case": label, **s.values} for label, s in cases]}
    if out is not None:
        summary["outputs"] = [str(f) for f in save_study(study, cases, out)]
    return summary, cases
