"""One reference page per command of the three command lines, from their argparse parsers."""

from __future__ import annotations

import argparse
import os


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """``parser``'s sub-commands: their parsers and one-line helps."""
    for action in parser._actions:  # (argparse keeps its sub-parsers only here)
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return {name: (sp, helps.get(name, "")) for name, sp in action.choices.items()}
    return {}


def _help(parser: argparse.ArgumentParser) -> str:
    os.environ["COLUMNS"] = "100"  # (argparse wraps at the terminal's width: one width for every page)
    return parser.format_help().rstrip()


def _page(prog: str, name: str, parser: argparse.ArgumentParser, help_text: str) -> str:
    lines = [f"# `{prog} {name}`", "", help_text[:1].upper() + help_text[1:] + ".", "", "```text", _help(parser), "```", ""]
    for sub, (sp, help_text) in _subcommands(parser).items():
        if prog == "simclient" and name == "run":  # (each scenario's options are on its own page)
            lines += [f"- [`{prog} run {sub}`](../../scenarios/{sub}.md): {help_text}"]
            continue
        lines += [f"## `{prog} {name} {sub}`", "", "```text", _help(sp), "```", ""]
    return "\n".join(lines) + "\n"


def parsers() -> dict[str, argparse.ArgumentParser]:
    from preprocess.cli import build_parser as preprocess_parser
    from simclient.cli import build_parser as simclient_parser
    from surfacestore.cli import build_parser as surfacestore_parser

    return {"preprocess": preprocess_parser(), "surfacestore": surfacestore_parser(), "simclient": simclient_parser()}


def pages() -> dict[str, str]:
    """``reference/cli/PROG-COMMAND.md`` for every command, and an index."""
    out: dict[str, str] = {}
    index = ["# Command lines", "",
             "Every command of the three programs, with its options as `--help` prints them. Each program "
             "also takes `--version`.", ""]
    for prog, parser in parsers().items():
        index += [f"## `{prog}`", "", parser.description or "", ""]
        for name, (sp, help_text) in _subcommands(parser).items():
            out[f"reference/cli/{prog}-{name}.md"] = _page(prog, name, sp, help_text)
            index.append(f"- [`{prog} {name}`]({prog}-{name}.md): {help_text}")
        index.append("")
    out["reference/cli/index.md"] = "\n".join(index) + "\n"
    return out
