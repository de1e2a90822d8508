"""Seeded fuzzing of ``train`` and ``predict`` over mutated svmlight and VW files (the generator,
mutator, reference grammar and oracle are in tests/fuzzing.py).

Every case is one small file (5 to 30 lines, a few mutations, sometimes compressed or with its
compressed bytes damaged) and its options; the oracle runs ``python -m streamherd`` on it as
subprocesses: train, train --skip-bad, train on the file with the reference's malformed lines
blanked, predict --skip-bad with the trained model, and, when the file has numbers with more
than 15 digits or large exponents, train on its numbers rewritten by Python. Each run must end
(timeout), exit 0 or 2, never with a traceback, a failure in one line 'streamherd: ...'; an
exit 0 with -f writes a loadable model of finite arrays, an exit 2 none; the first malformed
line is the one named; --skip-bad gives exactly (np.array_equal, same meta) the model of the
file with the malformed lines blanked, and says how many it skipped.

The cases are fixed: seed SEED, CASES of them, whatever the clock: the first FAST_CASES in every
``pytest``, the rest (a campaign of a minute or two) marked slow, run by ``pytest -m slow``. A
longer campaign with other seeds: ``python benchmarks/fuzz.py --seconds 600``; one case of this
test again, saved to a folder with its commands: ``python benchmarks/fuzz.py --seed
SEED --case N``.
"""
import os

import pytest

from fuzzing import check_case, make_case, warm_up

SEED = 20240611
CASES = int(os.environ.get("STREAMHERD_FUZZ_CASES", "40"))
FAST_CASES = 10
# seconds per run: a hang, or compiling a learner's kernels on the first run after an install
TIMEOUT = float(os.environ.get("STREAMHERD_FUZZ_TIMEOUT", "120"))


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory):
    """A folder for the cases, after one train and predict of each format: a run that has to
    compile streamherd's kernels first (numba's cache is stale after an edit) must not count
    against a case's timeout."""
    folder = tmp_path_factory.mktemp("fuzz")
    warm_up(folder / "warm-up")
    return folder


def _describe(case, failures, runs, folder):
    lines = [f"case {case.name} (python benchmarks/fuzz.py --seed {SEED} --case "
             f"{case.name.rsplit('-', 1)[1]}), in {folder}",
             f"  file {case.filename}: {case.raw[:400]!r}{' ...' if len(case.raw) > 400 else ''}",
             f"  mutations: {'; '.join(case.mutations) or 'none'}"
             f"{'; plain.npz existed before' if case.existing_model else ''}",
             "  runs (in that folder):"]
    lines += [f"    {run.command()}  -> exit {run.code}" for run in runs]
    lines += ["  failures:"] + [f"    {failure}" for failure in failures]
    return "\n".join(lines)


@pytest.mark.parametrize("index", [index if index < FAST_CASES else
                                   pytest.param(index, marks=pytest.mark.slow)
                                   for index in range(CASES)])
def test_fuzz_case(index, fuzz_dir):
    case = make_case(SEED, index)
    folder = fuzz_dir / case.name
    failures, runs, _ = check_case(case, folder, timeout=TIMEOUT)
    assert not failures, _describe(case, failures, runs, folder)


def test_cases_are_deterministic():
    """The same seed and index give the same bytes and options (the test's cases are fixed)."""
    for index in (0, 7, CASES - 1):
        a, b = make_case(SEED, index), make_case(SEED, index)
        assert (a.raw, a.train_args, a.predict_args, a.stdin) == \
            (b.raw, b.train_args, b.predict_args, b.stdin)
    assert make_case(SEED, 1).raw != make_case(SEED + 1, 1).raw
