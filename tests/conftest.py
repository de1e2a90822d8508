"""Shared fixtures: the real-data folder, a CLI runner, a reader of parsed rows, random CSR data
cut into chunks, an independent (pure Python + mmh3) model of VW's feature hashing, and real text
spread over namespaces. The
plain functions behind them live in helpers.py, which test files import directly."""
import signal
from collections import defaultdict

import pytest

import helpers

# pytest-xdist's workers ignore SIGINT, and a child process inherits an ignored signal: Python
# then installs no KeyboardInterrupt handler, and the tests that press Ctrl-C on a run would see
# it go on. The test processes take Ctrl-C as a terminal's process would.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config):
    """The test processes (pytest-xdist's workers) compile kernels at once into one cache, as
    commands do: their saves hold its lock too (numba_runtime.lock_cache_saves), or two of them
    could write two signatures' code under one name and a later run load the wrong kernel."""
    from streamherd import numba_runtime

    numba_runtime.lock_cache_saves()


@pytest.fixture(scope="session")
def data_dir():
    """The real data folder (helpers.DATA_DIR); the test is skipped when it is absent."""
    if not helpers.DATA_DIR.is_dir():
        pytest.skip(f"real data folder {helpers.DATA_DIR} is absent")
    return helpers.DATA_DIR


@pytest.fixture(scope="session")
def run_cli():
    return helpers.run_cli


@pytest.fixture(scope="session")
def read_rows():
    return helpers.read_rows


@pytest.fixture
def parse(tmp_path):
    """Write bytes to a file and parse it; returns the rows (see helpers.read_rows)."""
    def _parse(content, name="data.txt", **kwargs):
        path = tmp_path / name
        path.write_bytes(content)
        rows, _, _ = helpers.read_rows(path, **kwargs)
        return rows
    return _parse


@pytest.fixture(scope="session")
def vw_slot():
    return helpers.py_vw_slot


@pytest.fixture(scope="session")
def vw_hashstring():
    return helpers.py_hashstring


@pytest.fixture(scope="session")
def random_csr():
    return helpers.random_csr


@pytest.fixture(scope="session")
def csr_chunks():
    return helpers.split_csr


@pytest.fixture(scope="module")
def namespaced_sms(data_dir, tmp_path_factory):
    """SMS spam (real text, its first 120 lines: each namespace below on tens of them, all
    five on twenty; each cross checked is a line's alone, so more lines add time, not cases)
    with its words spread over namespaces: 'words' (a-m) and 'wide' (8 letters or more): one
    letter w, two names; 'Other' (n-z; uppercase letter), 'n' (all digits: numbers as names)
    and the default namespace (words of 1-2 letters)."""
    out = tmp_path_factory.mktemp("crosses") / "sms_namespaces.vw"
    lines = []
    for raw in (data_dir / "sms_spam.vw").read_text().splitlines()[:120]:
        label, _, text = raw.partition(" |w")
        spaces = defaultdict(list)
        for token in text.split():
            name = token.split(":")[0]
            space = ("n" if name.isdigit() else "" if len(name) <= 2 else "wide"
                     if len(name) >= 8 else "words" if name[0] <= "m" else "Other")
            spaces[space].append(token)
        lines.append(label + "".join(f" |{space} {' '.join(tokens)}"
                                     for space, tokens in sorted(spaces.items())))
    out.write_text("\n".join(lines) + "\n")
    return out
