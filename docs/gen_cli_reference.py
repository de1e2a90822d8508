"""The command line's reference pages, written at every ``mkdocs build`` (mkdocs-gen-files) from
the declarations the commands parse and print their ``--help`` from (``streamherd.cli.COMMANDS``):
one page per command, a table per help group, and an index. An option declared in the code is
in the pages with no edit here; nothing in them is typed by hand.

The pages are also listed under "Command line" in the site's navigation (mkdocs.yml's entry,
replaced here by the index and the commands' pages, in the order the code declares them).
"""
import html
import re
import sys
from pathlib import Path

import mkdocs_gen_files

# the checkout's own commands, also where an installed streamherd (another checkout's editable
# install) comes first on the path; mkdocstrings reads the same tree (mkdocs.yml's paths)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from streamherd.cli import COMMANDS  # noqa: E402

FOLDER = "reference/cli"
NAV_TITLE = "Command line"


def cell(text):
    """``text`` as the plain text of one Markdown table cell: lines joined, and every
    character that Markdown or HTML would read as markup (``nherd*``, ``<file>``, a pipe)
    escaped."""
    text = html.escape(" ".join(str(text).split()), quote=False)
    return re.sub(r"([\\`*_\[\]|])", r"\\\1", text)


def code(text):
    """``text`` as inline code (a pipe inside a code span does not end a table cell)."""
    return f"`{text}`"


def invocation(option, flags):
    shown = ", ".join(code(f) for f in flags)
    if option.switch:
        return shown
    return f"{shown} {code(option.metavar or option.dest.upper())}"


def option_rows(options):
    for option in options:
        own = [f for f in option.flags if f not in option.vw]
        if not own:
            continue
        vw = ", ".join(code(f) for f in option.vw)
        yield f"| {invocation(option, own)} | {cell(option.described())} | {vw} |"


def vw_rows(options):
    for option in options:
        if not option.vw:
            continue
        if option.note:
            meaning = f"Accepted; does nothing here: {cell(option.note)}"
        else:
            meaning = "= " + ", ".join(code(f) for f in option.flags if f not in option.vw)
        yield f"| {invocation(option, option.vw)} | {meaning} |"


def command_page(command):
    lines = [f"# streamherd {command.name}", "", command.help, "", "```text",
             command.usage, "```", ""]
    if command.positional is not None:
        lines += [f"`{command.positional.metavar}`: {command.positional.help}", ""]
    for title, options in command.groups:
        rows = list(option_rows(options))
        if not rows:
            continue
        lines += [f"## {title}", "", "| option | meaning | Vowpal Wabbit's spelling |",
                  "|---|---|---|", *rows, ""]
    spellings = list(vw_rows(command.options))
    if spellings:
        lines += ["## Vowpal Wabbit's spellings", "",
                  "Flags taken under VW's names, and the VW flags that are accepted but change "
                  "nothing here.", "", "| VW's flag | here |", "|---|---|", *spellings, ""]
    lines += ["`-h`, `--help` prints this page's content on the terminal.", ""]
    return "\n".join(lines)


def index_page():
    lines = ["# Command line", "",
             "Generated from the option declarations the commands parse (the same text as "
             "`streamherd COMMAND --help`). A user error is one line on standard error and exit "
             "code 2; see [files and exit codes](../../guides/files.md).", "",
             "| command | what it does |", "|---|---|"]
    lines += [f"| [`{name}`]({name}.md) | {cell(command.help)} |"
              for name, command in COMMANDS.items()]
    return "\n".join(lines) + "\n"


def fill_nav(nav, pages):
    """Replace the nav entry titled NAV_TITLE (at any depth) by the reference pages."""
    for k, item in enumerate(nav):
        if not isinstance(item, dict):
            continue
        (title, value), = item.items()
        if title == NAV_TITLE:
            nav[k] = {title: pages}
            return True
        if isinstance(value, list) and fill_nav(value, pages):
            return True
    return False


with mkdocs_gen_files.open(f"{FOLDER}/index.md", "w") as page:
    page.write(index_page())
pages = [{"Commands": f"{FOLDER}/index.md"}]
for name, command in COMMANDS.items():
    with mkdocs_gen_files.open(f"{FOLDER}/{name}.md", "w") as page:
        page.write(command_page(command))
    pages.append({f"streamherd {name}": f"{FOLDER}/{name}.md"})
    mkdocs_gen_files.set_edit_path(f"{FOLDER}/{name}.md", "../streamherd/cli.py")
if mkdocs_gen_files.config.nav:
    fill_nav(mkdocs_gen_files.config.nav, pages)
