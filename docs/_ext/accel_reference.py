"""Reference pages written from the code at build time, so they cannot drift from it.

A directive per table, not a script that writes .md files before the build: nothing generated
lies in the tree to go stale or to be committed by mistake, ``sphinx-build`` alone (no extra step
to forget) builds the whole site, and each directive notes the source files it read, so an
incremental build redoes the page when they change. Each renders Markdown that the page's MyST
parser reads, so its tables and code blocks are checked like the hand-written ones.

- ``{accel-options}``: every option of the plugin's group as pytest declares it (the plugin's own
  ``pytest_plugins``, each module's ``pytest_addoption`` on pytest's real ``Parser``).
- ``{accel-cli}``: ``accel-regress COMMAND --help`` of every registered command, from the parser the
  command builds (captured when it parses, so no command runs), sub-commands included.
- ``{accel-contracts}``: every entry-point group's Protocols (core/contracts.py's ``CONTRACTS`` and the
  ``ProgramKind``s the registered backends declare): each member, its signature, required or not;
  the contracts' version and the previous signatures still accepted (``DEPRECATED``).
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import os
import sys
from typing import get_type_hints

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


class _Markdown(SphinxDirective):
    """A directive whose body is Markdown computed from the code."""

    def markdown(self) -> str:
        raise NotImplementedError

    def depends(self, *modules) -> None:
        for module in modules:
            path = getattr(module, "__file__", None)
            if path:
                self.env.note_dependency(path)

    def run(self):
        container = nodes.container()
        self.state.nested_parse(StringList(self.markdown().splitlines(), source=self.get_source_info()[0]),
                                self.content_offset, container)
        return container.children


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(text) -> str:
    # A code span holding backquotes needs a longer fence (CommonMark 6.1); in a table cell a pipe
    # is escaped, inside a code span too (GFM 4.10).
    text = str(text).replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}" if text else ""


class Options(_Markdown):
    def markdown(self) -> str:
        from _pytest.config.argparsing import Parser
        import accel_regress.plugin as plugin
        parser = Parser(_ispytest=True)
        for name in plugin.pytest_plugins:
            module = importlib.import_module(name)
            self.depends(module)
            if hasattr(module, "pytest_addoption"):
                module.pytest_addoption(parser)
        from accel_regress.plugin import spelling
        rows = ["| option | also | ini | what it does |", "|---|---|---|---|"]
        for arg in parser.getgroup("accel-regress").options:
            flag = arg.names()[0]
            attrs = spelling.declared(arg)
            value = attrs.get("metavar") or ("" if attrs.get("action") == "store_true" else
                                            "|".join(attrs.get("choices") or ()) or arg.dest.upper())
            if attrs.get("nargs") == "?":
                value = f"[={value}]"
            elif value:
                value = f" {value}"
            short = spelling.short(arg.dest)
            help_text = (attrs.get("help") or "").replace("%%", "%").split(" [ini: ")[0]
            rows.append(f"| {_code(flag + value)} | {_code(short)} | {_code(spelling.dest(arg.dest))} "
                        f"| {_cell(help_text)} |")
        return "\n".join(rows)


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


class Cli(_Markdown):
    def markdown(self) -> str:
        from accel_regress import __main__ as cli
        self.depends(cli)
        with _placeholders():
            commands = cli.commands()
            out = ["**`accel-regress --help`**\n", "```text", cli.help_text(commands), "```", ""]
            for name, value in commands.items():
                out += self.command(cli, name, value)
        return "\n".join(out)

    def command(self, cli, name: str, value: str) -> list:
        out = []
        module_name, func = value.split(":")
        self.depends(importlib.import_module(module_name))
        out.append(f"**`accel-regress {name}`** ({_code(value)})\n")
        if module_name == cli.__name__ and func == "list_backends":
            out.append(inspect.getdoc(cli.list_backends) + "\n")
            return out
        parser = cli.command_parser(value)
        if parser is None:
            raise self.error(f"accel-regress {name}: {value} parsed no arguments; its help cannot be shown")
        out += ["```text", parser.format_help().rstrip(), "```", ""]
        for sub, subparser in _subparsers(parser):
            out += [f"`accel-regress {name} {sub}`:\n", "```text", subparser.format_help().rstrip(), "```", ""]
        return out


@contextlib.contextmanager
def _placeholders():
    """The help as any machine prints it: argparse wraps to $COLUMNS, and defaults under the user's
    folders are shown by the variable that decides them, not this machine's path."""
    names = ("COLUMNS", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")
    saved = {n: os.environ.get(n) for n in names}
    os.environ.update({"COLUMNS": "100", **{n: f"${n}" for n in names[1:]}})
    try:
        yield
    finally:
        for n, v in saved.items():
            if v is None:
                os.environ.pop(n, None)
            else:
                os.environ[n] = v


def _signature(fn) -> str:
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1:]      # without self
    hints = get_type_hints(fn)
    parts = []
    for p in params:
        hint = hints.get(p.name)
        parts.append(f"{p.name}: {_type_name(hint)}" if hint is not None else p.name)
    ret = hints.get("return")
    return f"{fn.__name__}({', '.join(parts)})" + (f" -> {_type_name(ret)}" if ret is not None else "")


def _type_name(hint) -> str:
    if hint is type(None):
        return "None"
    text = getattr(hint, "__name__", None) if not getattr(hint, "__args__", None) else None
    text = text or repr(hint)
    for noise in ("typing.", "collections.abc.", "accel_regress.golden.case.", "accel_regress.golden.tolerance.",
                  "numpy.", "<class '", "'>"):
        text = text.replace(noise, "")
    return text


class Contracts(_Markdown):
    def markdown(self) -> str:
        from accel_regress.core import contracts, registry
        self.depends(contracts)
        kinds = [(registry.GROUPS.get(kind, kind), proto_pair) for kind, proto_pair in contracts.CONTRACTS.items()]
        kinds += [(group, (pk.required, pk.optional)) for group, pk in sorted(registry.program_kinds().items())]
        out = []
        for group, (required, optional) in kinds:
            self.depends(sys.modules[required.__module__])
            out.append(f"**`{group}`**: `{required.__module__}.{required.__qualname__}`\n")
            doc = inspect.getdoc(required)
            if doc and doc != inspect.getdoc(object):
                out.append(" ".join(doc.split()) + "\n")
            out += ["| member | required |", "|---|---|"]
            for proto, must in ((required, "yes"), (optional, "when present")):
                hints = get_type_hints(proto)
                for name, hint in hints.items():
                    out.append(f"| {_code(f'{name}: {_type_name(hint)}')} | {must} |")
                for name, fn in vars(proto).items():
                    if callable(fn) and not name.startswith("_"):
                        out.append(f"| {_code(_signature(fn))} | {must} |")
            out.append("")
        out.append(f"Contract version {contracts.CONTRACT_VERSION} (`accel_regress.core.contracts.CONTRACT_VERSION`). "
                   "Previous signatures still accepted, each with one `AccelRegressDeprecationWarning`:\n")
        out += ["| contract | member | change | refused from |", "|---|---|---|---|"]
        out += [f"| {old.kind} | `{old.member}` | {_cell(old.change)} | accel-regress {old.until} |"
                for old in contracts.DEPRECATED]
        return "\n".join(out)


def setup(app):
    app.add_directive("accel-options", Options)
    app.add_directive("accel-cli", Cli)
    app.add_directive("accel-contracts", Contracts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
