"""Every example of README.md and docs/**/*.md runs as written, and prints what the page shows.

The convention (docs/development.md, "Examples in the docs", says the same to authors):

- A page's fenced blocks run in page order, in a temporary folder of the page's own that holds
  ``samples`` (a link to the repository's), so that a block may use the files an earlier block
  of the same page made. ``streamherd`` on the PATH is ``python -m streamherd`` of this checkout
  (the repository on PYTHONPATH), ``python`` this interpreter.
- ```` ```sh ```` and ```` ```bash ````: the block is one bash script (``set -eu``); it must exit
  0. Its output is not checked.
- ```` ```console ````: each line starting with ``$ `` is a command (a line ending in ``\\``
  goes on on the next line); the lines after it, up to the next ``$ `` line, are its output as
  a terminal shows it (stdout and stderr together), compared after trailing blanks are dropped,
  with doctest's ELLIPSIS rule: ``...`` stands for any text, also across lines. Each command
  must exit 0; a page that shows a failure writes ``CMD; echo "exit code $?"``.
- ```` ```python ````: run in the page's namespace (one per page, shared by its Python blocks).
  ```` ```pycon ````: doctest examples (``>>>``, ``...``) in the same namespace, their output
  checked with doctest's ELLIPSIS rule.
- Any other fence must name a language of NOT_EXAMPLES (``text``, ``ini``, ...): a fence with no
  language, or an unknown one, fails, so that an example cannot escape by losing its tag.
- Opting out: the line ``<!-- not-run: REASON -->`` just before a runnable fence (the reason is
  required); a marker before anything else fails. GENERATED_PAGES are pages a script writes
  whose commands take minutes to hours on the shared data. Neither runs, but the ``streamherd``
  command lines of both are read by the commands' own option parser: a flag or value that the
  command line no longer takes fails here.

The fences are found by markdown-it-py (CommonMark, rich's dependency): fences in list items
and indented ones are found as a renderer finds them.
"""
import contextlib
import doctest
import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass

import pytest
from markdown_it import MarkdownIt

from helpers import REPO, without_compile_notice

SHELL = {"sh", "bash"}
RUNNABLE = SHELL | {"console", "python", "pycon"}
# fences that show a file, a layout, a format or a configuration, not a command or a program
NOT_EXAMPLES = {"text", "ini", "json", "csv", "toml", "yaml", "svmlight", "vw", "markdown"}
OPT_OUT = re.compile(r"^<!--\s*not-run:\s*(?P<reason>\S.*?)\s*-->\s*$")
GENERATED_PAGES = {
    "docs/results.md": "written by docs/make_results.py and benchmarks/herding_table.py; its "
                       "commands are the tournament's and Table 1's, minutes to hours each on "
                       "../shared/data",
}
COMMAND_TIMEOUT = 300


@dataclass
class Block:
    page: str
    line: int          # 1-based line of the opening fence
    language: str
    source: str
    opt_out: str       # the reason, or "" when the block runs

    @property
    def where(self):
        return f"{self.page}:{self.line}"


def pages():
    found = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return [p.relative_to(REPO).as_posix() for p in found]


def blocks(page):
    """The page's fenced blocks, with their opt-out reasons; a fence of no known language, or
    a marker that does not precede a runnable fence, is an error."""
    text = (REPO / page).read_text()
    lines = text.splitlines()
    found, markers = [], {}
    for number, line in enumerate(lines):
        match = OPT_OUT.match(line.strip())
        if match:
            markers[number] = match["reason"]
        elif line.lstrip().startswith("<!--") and "not-run" in line:
            raise AssertionError(f"{page}:{number + 1}: a not-run marker needs a reason: "
                                 "<!-- not-run: REASON -->")
    for token in MarkdownIt("commonmark").parse(text):
        if token.type not in ("fence", "code_block") or token.map is None:
            continue
        start = token.map[0]
        language = token.info.split()[0] if token.info.strip() else ""
        where = f"{page}:{start + 1}"
        assert token.type == "fence", f"{where}: an indented code block; fence it with a language"
        assert language in RUNNABLE | NOT_EXAMPLES, (
            f"{where}: fence language {language!r} is neither an example "
            f"({', '.join(sorted(RUNNABLE))}) nor one of {', '.join(sorted(NOT_EXAMPLES))}")
        previous = start - 1
        while previous >= 0 and not lines[previous].strip():
            previous -= 1
        reason = markers.pop(previous, "")
        assert not reason or language in RUNNABLE, (
            f"{where}: a not-run marker before a {language} block, which never runs")
        found.append(Block(page, start + 1, language, token.content, reason))
    assert not markers, f"{page}:{min(markers) + 1}: a not-run marker before no fenced block"
    return found


def shell_environment(folder):
    """PATH with ``streamherd`` and ``python`` running this checkout under this interpreter."""
    bin_folder = folder / ".bin"
    bin_folder.mkdir()
    for name, command in (("streamherd", f'exec "{sys.executable}" -m streamherd "$@"'),
                          ("python", f'exec "{sys.executable}" "$@"')):
        script = bin_folder / name
        script.write_text(f"#!/bin/sh\n{command}\n")
        script.chmod(0o755)
    environment = dict(os.environ)
    environment.pop("COLUMNS", None)
    environment["PATH"] = f"{bin_folder}{os.pathsep}{environment['PATH']}"
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, [environment.get("PYTHONPATH")])])
    return environment


class Page:
    """One page's folder, namespace and shell environment; ends the process groups its shell
    blocks started (a server a block left in the background) when closed."""

    def __init__(self, folder):
        self.folder = folder
        (folder / "samples").symlink_to(REPO / "samples")
        self.environment = shell_environment(folder)
        self.namespace = {"__name__": "__main__"}
        self.groups = []

    def shell(self, script, where, options=("-eu",)):
        """Run ``script`` in bash; its output (stdout and stderr, as a terminal interleaves
        them) goes through a file, so that a process it leaves in the background (a server)
        does not hold the test until it ends."""
        with open(self.folder / ".output", "w+b") as output:
            proc = subprocess.Popen(["bash", *options, "-c", script], cwd=self.folder,
                                    env=self.environment, stdout=output,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            self.groups.append(proc.pid)
            try:
                proc.wait(timeout=COMMAND_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                raise AssertionError(f"{where}: still running after {COMMAND_TIMEOUT} s") \
                    from None
            output.seek(0)
            text = without_compile_notice(output.read().decode("utf-8", "replace"))
        assert proc.returncode == 0, f"{where}: exit code {proc.returncode}\n$ {script}\n{text}"
        return text

    def run(self, block):
        getattr(self, "run_" + ("shell" if block.language in SHELL else block.language))(block)

    def run_shell(self, block):
        self.shell(block.source, block.where)

    def run_console(self, block):
        commands = console_commands(block)
        assert commands, f"{block.where}: a console block without a '$ ' command"
        checker = doctest.OutputChecker()
        for line, command, want in commands:
            where = f"{block.page}:{line}"
            got = "".join(text.rstrip() + "\n" for text in
                          self.shell(command, where, options=()).splitlines())
            assert checker.check_output(want, got, doctest.ELLIPSIS), (
                f"{where}: $ {command}\nexpected:\n{want}got:\n{got}")

    def run_python(self, block):
        code = compile("\n" * (block.line) + block.source, block.page, "exec")
        exec(code, self.namespace)

    def run_pycon(self, block):
        test = doctest.DocTestParser().get_doctest(block.source, self.namespace, block.where,
                                                   block.page, block.line)
        report = []
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test, out=report.append, clear_globs=False)
        self.namespace.update(test.globs)   # a DocTest runs in a copy of the namespace
        assert not runner.failures, "".join(report)

    def close(self):
        for group in self.groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGTERM)


def console_commands(block):
    """(line, command, expected output) of each ``$ `` command of a console block."""
    commands = []
    lines = block.source.splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        assert line.startswith("$ "), (
            f"{block.page}:{block.line + 1 + k}: output before the first '$ ' command")
        start = k
        command = [line[2:]]
        while command[-1].endswith("\\") and k + 1 < len(lines):
            k += 1
            command.append(lines[k])
        k += 1
        output = []
        while k < len(lines) and not lines[k].startswith("$ "):
            output.append(lines[k].rstrip() + "\n")
            k += 1
        commands.append((block.line + 1 + start, "\n".join(command), "".join(output)))
    return commands


def runnable_pages():
    return [p for p in pages() if p not in GENERATED_PAGES]


def opted_out():
    """The opted-out blocks of every page that parses (a page that does not fails its own
    test)."""
    found = []
    for page in runnable_pages():
        try:
            found += [b for b in blocks(page) if b.opt_out]
        except AssertionError:
            continue
    return found


@pytest.mark.parametrize("page", runnable_pages())
def test_page_examples_run_and_print_what_the_page_shows(page, tmp_path, monkeypatch):
    page_blocks = [b for b in blocks(page) if b.language in RUNNABLE and not b.opt_out]
    folder = tmp_path / "page"
    folder.mkdir()
    monkeypatch.chdir(folder)
    runner = Page(folder)
    try:
        for block in page_blocks:
            runner.run(block)
    finally:
        runner.close()


def streamherd_commands(text):
    """The arguments of each ``streamherd`` command line of ``text`` (a comment dropped)."""
    return [shlex.split(line, comments=True)[1:] for line in text.splitlines()
            if line.startswith("streamherd ")]


def commands_not_run():
    """(where, arguments) of every streamherd command the tests do not run: in an opted-out
    block, or in a generated page."""
    found = [(block.where, arguments) for block in opted_out()
             for arguments in streamherd_commands(block.source)]
    for page in sorted(GENERATED_PAGES):
        found += [(page, arguments)
                  for arguments in streamherd_commands((REPO / page).read_text())]
    return found


NOT_RUN = commands_not_run()


@pytest.mark.parametrize("where, arguments", NOT_RUN,
                         ids=[f"{where} {arguments[0]}" for where, arguments in NOT_RUN])
def test_a_command_not_run_is_one_the_command_line_takes(where, arguments):
    from streamherd.cli import COMMANDS

    name, *argv = arguments
    assert name in COMMANDS, f"{where}: no command {name!r}"
    COMMANDS[name].parse(argv)   # a UsageError (an unknown flag, a bad value) fails the test


def test_readme_opens_with_the_commands_ci_runs():
    first = blocks("README.md")[0]
    commands = [line.split("#")[0].strip() for line in first.source.splitlines()]
    assert first.language == "sh", first.where
    assert commands == ['pip install -e ".[dev]"',
                        "streamherd train samples/sample.svm -f sample.npz", "pytest"]


def test_the_convention_catches_an_untagged_fence_and_a_marker_without_reason(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    (tmp_path / "untagged.md").write_text("text\n\n```\nstreamherd train x\n```\n")
    (tmp_path / "reasonless.md").write_text("<!-- not-run: -->\n```sh\nls\n```\n")
    (tmp_path / "orphan.md").write_text("<!-- not-run: why -->\n\ntext\n")
    (tmp_path / "fine.md").write_text("<!-- not-run: needs a cluster -->\n```sh\nls\n```\n")
    for page in ("untagged.md", "reasonless.md", "orphan.md"):
        with pytest.raises(AssertionError):
            blocks(page)
    assert [b.opt_out for b in blocks("fine.md")] == ["needs a cluster"]


def test_a_console_block_checks_its_output(tmp_path):
    runner = Page(tmp_path)
    shown = Block("page.md", 1, "console", "$ echo one; echo two\none\nthree\n", "")
    with pytest.raises(AssertionError, match="expected"):
        runner.run(shown)
    runner.run(Block("page.md", 1, "console", "$ echo one; echo two\none\n...\n", ""))


def test_readme_links_lead_to_files_of_the_checkout():
    """README.md is not in the site (mkdocs --strict checks the docs' links): its relative
    links must name files of the repository, as GitHub shows them."""
    text = (REPO / "README.md").read_text()
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text)
               if not re.match(r"[a-z]+:", t) and not t.startswith("#")]
    assert targets
    assert [t for t in targets if not (REPO / t).exists()] == []
