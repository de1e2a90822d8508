"""The documentation site builds strictly, and its command line reference is the declarations':
every flag of every command is on the command's page, with its help text."""
import html
import os
import re
import subprocess
import sys

import pytest

from helpers import REPO

from streamherd.cli import COMMANDS

pytest.importorskip("mkdocs")
pytest.importorskip("material")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                           "--site-dir", str(out)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


def page_text(site, name):
    """The visible text of a command's reference page (tags dropped, entities read)."""
    raw = (site / "reference" / "cli" / name / "index.html").read_text()
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_declared_flag_is_on_its_commands_page(site, name):
    text = page_text(site, name)
    command = COMMANDS[name]
    assert command.usage in text
    for option in command.options:
        for flag in option.flags:
            assert flag in text, (name, flag)
        first_words = " ".join(option.help.split()[:6])
        assert first_words in " ".join(text.split()), (name, option.flags[0])


def test_the_reference_index_lists_every_command(site):
    raw = (site / "reference" / "cli" / "index.html").read_text()
    for name in COMMANDS:
        assert f'href="{name}/"' in raw, name


def test_the_readme_stays_a_front_door():
    """At most 150 lines (its first commands: test_docs_examples)."""
    assert len((REPO / "README.md").read_text().splitlines()) <= 150
