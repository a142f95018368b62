"""Measure the validation and benchmark results again: ``python3 dev.py docs --record [NAME ...]``.

Each command's JSON goes to ``docs/data/KIND/NAME.json`` with the command, the date, the commit and
the machine. The sample tables are built in ``--tables`` where missing; the scenarios on tables
fitted to ``../shared/data`` are recorded only where those tables exist (``preprocess build
sample_surfaces/real/*.toml``)."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from docs.generate.data import DATA

ROOT = DATA.parents[1]
#: (kind, name) -> the simclient command (its --tables and --json added)
COMMANDS: dict[tuple[str, str], list[str]] = {
    ("validation", "bouncing-ball"): ["run", "bouncing-ball"],
    ("validation", "knee3d"): ["run", "knee3d"],
    ("validation", "knee2d"): ["run", "knee2d"],
    ("validation", "prosthetic-knee"): ["run", "prosthetic-knee"],
    ("validation", "blankevoort"): ["run", "blankevoort"],
    ("validation", "layer-drop"): ["run", "layer-drop"],
    ("validation", "natural-knee"): ["run", "natural-knee"],
    ("validation", "artificial-knee"): ["run", "artificial-knee", "--analysis", "gait"],
    ("validation", "validate"): ["validate"],
    ("benchmarks", "contact"): ["bench", "contact"],
    ("benchmarks", "store"): ["bench", "store"],
    ("benchmarks", "windows"): ["bench", "windows"],
    ("benchmarks", "scenarios"): ["bench", "scenarios"],
    ("benchmarks", "peers"): ["bench", "peers"],
    ("benchmarks", "latency"): ["bench", "latency", "--larger-side", "10000"],
}


def machine() -> dict[str, object]:
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9 if hasattr(os, "sysconf") else 0.0
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_GB": memory, "python": platform.python_version(),
            "platform": f"{platform.system()} {platform.machine()}"}


def record(kind: str, name: str, tables: str) -> None:
    command = [*COMMANDS[(kind, name)], "--tables", tables, "--json"]
    print(f"simclient {' '.join(command)} ...", file=sys.stderr, flush=True)
    r = subprocess.run([sys.executable, "-m", "simclient.cli", *command], capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        print(f"  failed (exit {r.returncode}): {r.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    shown = " ".join(c for c in command if c not in ("--tables", tables))
    out = {"command": f"simclient {shown}", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": commit or "unknown", "machine": machine(), "result": json.loads(r.stdout)}
    path = DATA / kind / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="dev.py docs --record", description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help=f"results to measure (default: all): {', '.join(n for _, n in COMMANDS)}")
    p.add_argument("--tables", default="tables", help="folder of the tables (default: tables)")
    args = p.parse_args(argv)
    unknown = set(args.names) - {n for _, n in COMMANDS}
    if unknown:
        p.error(f"unknown result(s) {sorted(unknown)}")
    for kind, name in COMMANDS:
        if not args.names or name in args.names:
            record(kind, name, args.tables)
    return 0


if __name__ == "__main__":
    sys.exit(main())
