"""--algo auto beyond binary tasks: multiclass (joint, one-versus-all, mira) and regression
(--loss squared). The bank holds each learner of LEARNER_GRIDS that has a form for the task (a
learner the task refuses is left out), each member learning as a run of its learner and value
alone, in a TaskBank; the model written is the chosen member's, an ordinary model of its
learner; a bank too large for memory is a one-line error before it is made."""
import time

import numpy as np
import pytest

from streamherd import learners, tasks
from streamherd.errors import StreamherdError
from streamherd.labels import ClassLabels
from streamherd.model import load_model
from streamherd.model.online import checked_options
from streamherd.selection import (LEARNER_GRIDS, TaskBank, default_grid, has_form, new_bank,
                                  search_learners)

from helpers import one_line_error
from test_auto_tasks import regression_file

BITS = 14   # dna's 180 features, the constant and the few collisions as every run of it has


def _hyperparameter(algo, name):
    return next(h for h in learners.spec(algo).hyperparameters if h.name == name)


def _summary(stderr, key):
    return next(line for line in stderr.splitlines() if line.startswith(key + " = ")) \
        .split(" = ", 1)[1]


def _learners_refused_by(kind, mode=None):
    """The learners of LEARNER_GRIDS the task refuses when named alone: --loss squared refuses
    a learner without a squared-loss form (checked_options), --multiclass mira one outside
    the Passive-Aggressive family (its learner is not made)."""
    refused = []
    for algo, _ in LEARNER_GRIDS:
        try:
            if kind == "regression":
                checked_options(algo, {}, kind)
            else:
                tasks.MulticlassTask(ClassLabels.of_values([0, 1]), mode).new_learner(algo, 1,
                                                                                      {})
        except StreamherdError:
            refused.append(algo)
    return refused


@pytest.mark.parametrize("kind, mode", [("regression", None), ("multiclass", "mira"),
                                        ("multiclass", "joint"), ("multiclass", "ova"),
                                        ("binary", None)])
def test_a_learner_the_task_refuses_is_no_member_of_its_search(kind, mode):
    """Every learner of the registry has a form for a task exactly when the task takes it
    named alone; the search of a task keeps LEARNER_GRIDS' learners but those, in order, each
    over its default grid."""
    for algo in learners.REGISTRY:
        try:
            if kind == "regression":
                checked_options(algo, {}, kind)
            elif kind == "multiclass":
                tasks.MulticlassTask(ClassLabels.of_values([0, 1]), mode).new_learner(algo, 1,
                                                                                      {})
            taken = True
        except StreamherdError:
            taken = False
        assert has_form(algo, kind, mode) == taken, algo
    refused = _learners_refused_by(kind, mode) if kind != "binary" else []
    search = search_learners({}, None, None).for_task(kind, mode)
    assert [(g.algo, g.name) for g in search.grids] == \
        [(algo, name) for algo, name in LEARNER_GRIDS if algo not in refused]
    for grid in search.grids:
        assert grid.values == default_grid(_hyperparameter(grid.algo, grid.name))
    if kind == "regression":
        assert refused == ["scw1"]   # (the one of LEARNER_GRIDS without a squared-loss form)
        assert search_learners({}, None, "regression").grids == search.grids
    if mode == "mira":
        assert [g.algo for g in search.grids] == ["pa2"]


class _Rows:
    def __init__(self, indptr, indices, values, importance):
        self.indptr, self.indices, self.values = indptr, indices, values
        self.n_examples = len(indptr) - 1
        self.importance = importance


def _chunks(kind, seed=0, n=240, dim=32, pieces=3):
    """Random rows cut in ``pieces`` chunks, with targets: 3 classes (ids) or real values."""
    rng = np.random.default_rng(seed)
    nnz = rng.integers(1, 6, n)
    indptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)
    # int32 slots, as the parser hands them to the learners: the tests run the kernels the
    # commands compile (and the install precompiles), not a second int64 copy of each
    indices = np.concatenate([rng.choice(dim, k, replace=False) for k in nnz]).astype(np.int32)
    values = rng.normal(size=indptr[-1])
    importance = rng.choice([0.5, 1.0, 2.0], n)
    if kind == "regression":
        truth = rng.normal(size=dim)
        targets = np.array([values[indptr[i]:indptr[i + 1]] @ truth[indices[indptr[i]:
                                                                           indptr[i + 1]]]
                            for i in range(n)]) + 0.1 * rng.normal(size=n)
    else:
        targets = rng.integers(0, 3, n).astype(np.int64)
    chunks = []
    for lo, hi in zip(range(0, n, n // pieces), range(n // pieces, n + 1, n // pieces)):
        a, b = indptr[lo], indptr[hi]
        chunks.append((targets[lo:hi], _Rows(indptr[lo:hi + 1] - a, indices[a:b],
                                             values[a:b], importance[lo:hi])))
    return chunks, dim


def _task(kind, mode):
    if kind == "regression":
        return tasks.RegressionTask()
    return tasks.MulticlassTask(ClassLabels.of_values([0, 1, 2]), mode)


@pytest.mark.parametrize("kind, mode", [("multiclass", "joint"), ("multiclass", "ova"),
                                        ("regression", None)])
def test_each_member_learns_as_its_single_learner_and_a_dropped_one_stops(kind, mode):
    """--algo auto's TaskBank on a task: member k's state after each chunk is that of the
    learner of its algo and value alone through the task; a member whose alive flag is cleared
    between chunks (the base class dropping it) learns no more, and its loss is never chosen;
    the others go on. The bank's memory is the sum of its members' states."""
    chunks, dim = _chunks(kind)
    task = _task(kind, mode)
    bank = new_bank(task, search_learners({}, None, None), dim, {"C": 5.0})
    assert isinstance(bank, TaskBank)
    refused = _learners_refused_by(kind, mode)
    assert [m.algo for m in bank.members] == [algo for algo, name in LEARNER_GRIDS
                                              for _ in default_grid(_hyperparameter(algo, name))
                                              if algo not in refused]
    singles = []
    for member in bank.members:
        single_task = _task(kind, mode)
        singles.append((single_task, single_task.new_learner(
            member.algo, dim, {member.hyperparameter.name: member.value})))
    dropped = [3, len(bank.members) - 2]
    for c, (targets, rows) in enumerate(chunks):
        if c == 1:
            bank.alive[dropped] = False
        bank.learn_chunk(targets, rows, lambda task, learner, calibration, targets=targets,
                         rows=rows: task.learn(learner, targets, rows))
        for k, (single_task, single) in enumerate(singles):
            if bank.alive[k]:
                single_task.learn(single, targets, rows)
    for k, (_, single) in enumerate(singles):
        assert bank.learners[k].options == single.options
        ours = bank.learners[k].state()
        for key, theirs in single.state().items():
            np.testing.assert_array_equal(ours[key], theirs, err_msg=f"{k} {key}")
    scores = bank.scores()
    assert np.isinf(scores.losses[dropped]).all() and bank.chosen() not in dropped
    blocks = 3 if kind == "multiclass" else 1
    assert bank.members_bytes(blocks) == sum(array.nbytes for _, single in singles
                                             for array in single.state().values())


def _chosen_single_run(run_cli, tmp_path, meta, flags, data):
    """`train --algo A -X v FLAGS` of the bank's choice: (its meta, arrays, the -X flag)."""
    algo = meta["algo"]
    name = next(m["hyperparameter"] for m in meta["auto"]["members"] if m["algo"] == algo)
    value = meta["hyperparameters"][name]
    flag = _hyperparameter(algo, name).flag
    single = tmp_path / "single.npz"
    done = run_cli("train", "--algo", algo, flag, repr(value), *flags, data, "-f", single,
                   "--quiet")
    assert done.returncode == 0, done.stderr
    return (*load_model(single), flag)


@pytest.mark.parametrize("case", ["joint", "ova", "squared"])
def test_the_model_is_the_single_run_of_the_chosen_learner_and_value(run_cli, data_dir,
                                                                     tmp_path, case):
    """`train --algo auto` on dna (joint, one-versus-all) or a regression file (--loss
    squared) writes the model `train --algo A -X v` writes for the member it chose (its arrays
    bit for bit, its calibration), the member of the lowest recent loss (nearest its default on
    a tie), which the summary names; the preamble names the learners searched, and the meta
    records every member tried, none of a learner the task refuses."""
    if case == "squared":
        flags, data = ["--loss", "squared"], regression_file(tmp_path / "reg.svm")
    else:
        flags, data = ["--multiclass", case], data_dir / "dna.scale.svm"
        if not data.exists():
            pytest.skip(f"{data} is absent")
    flags += ["-b", str(BITS)]
    model = tmp_path / "m.npz"
    proc = run_cli("train", "--algo", "auto", *flags, data, "-f", model, "--save-bank")
    assert proc.returncode == 0, proc.stderr
    meta, arrays = load_model(model)
    refused = _learners_refused_by("regression") if case == "squared" else []
    searched = [(algo, name) for algo, name in LEARNER_GRIDS if algo not in refused]
    tried = [(m["algo"], m["hyperparameter"], m["value"]) for m in meta["auto"]["members"]]
    assert tried == [(algo, name, v) for algo, name in searched
                     for v in default_grid(_hyperparameter(algo, name))]
    banks = ", ".join(f"{algo} ({_hyperparameter(algo, name).flag} over 11 values)"
                      for algo, name in searched)
    assert f"algorithm = auto (banks of {banks})" in proc.stderr
    # every member wrote its file, and none other
    assert len(list(tmp_path.glob("m.bank*.npz"))) == len(tried)

    losses = np.array(meta["auto"]["losses"])
    lowest = np.flatnonzero(losses <= losses.min() + meta["auto"]["spread"])
    distance = [abs(np.log(tried[k][2] / _hyperparameter(*tried[k][:2]).default))
                for k in lowest]
    order = sorted(lowest, key=lambda k: (losses[k], distance[list(lowest).index(k)],
                                          tried[k][2], k))
    chosen = order[0]
    assert (meta["algo"], meta["hyperparameters"][tried[chosen][1]]) == \
        (tried[chosen][0], tried[chosen][2])

    single_meta, single_arrays, flag = _chosen_single_run(run_cli, tmp_path, meta, flags, data)
    assert _summary(proc.stderr, "auto --algo chosen").startswith(
        f"{meta['algo']} {flag} {tried[chosen][2]:g} (")
    assert set(arrays) == set(single_arrays)
    for key in single_arrays:
        np.testing.assert_array_equal(arrays[key], single_arrays[key], err_msg=key)
    for key in ("algo", "hyperparameters", "task", "calibration", "learner"):
        assert meta.get(key) == single_meta.get(key), key
    _, member_arrays = load_model(tmp_path / f"m.bank{chosen + 1}.npz")
    for key in single_arrays:
        np.testing.assert_array_equal(member_arrays[key], single_arrays[key], err_msg=key)


def test_mira_searches_the_passive_aggressive_learners_only(run_cli, data_dir):
    data = data_dir / "dna.scale.svm"
    if not data.exists():
        pytest.skip(f"{data} is absent")
    proc = run_cli("train", "--algo", "auto", "--multiclass", "mira", "-b", str(BITS), data)
    assert proc.returncode == 0, proc.stderr
    assert "algorithm = auto (banks of pa2 (-C over 11 values))" in proc.stderr
    assert _summary(proc.stderr, "auto --algo chosen").startswith("pa2 -C ")


def _bytes_per_slot(kind, mode=None):
    """Every member's state bytes per slot and class block, from a learner of each over one
    slot (its arrays' sizes)."""
    total = 0
    for algo, name in LEARNER_GRIDS:
        if has_form(algo, kind, mode):
            learner = learners.create(algo, 1, task="regression" if kind == "regression"
                                      else "binary")
            total += len(default_grid(_hyperparameter(algo, name))) * sum(
                array.nbytes for array in learner.state().values())
    return total


@pytest.mark.parametrize("flags, classes, blocks", [
    (["--multiclass", "joint", "-b", "26"], 3, 1),          # refused as the bank is made
    (["--multiclass", "ova", "-b", "20"], 1000, 1000),      # refused as the classes come
    (["--loss", "squared", "-b", "30"], 0, 1),
], ids=["joint", "ova-classes", "squared"])
def test_a_bank_too_large_is_a_one_line_error_before_it_is_made(run_cli, tmp_path, flags,
                                                                classes, blocks):
    """The banks' bytes are the sum of every member's (its learner's state, over every class
    block the task knows), scw1's left out of a regression bank: refused in one line, at
    once, the model file kept."""
    data = tmp_path / "d.svm"
    labels = range(1, classes + 1) if classes else (0.5, 1.25, -3.5)
    data.write_text("".join(f"{z} {k % 7 + 1}:1\n" for k, z in enumerate(labels)))
    model = tmp_path / "m.npz"
    model.write_bytes(b"kept")
    kind = "regression" if "squared" in flags else "multiclass"
    members = 33 if kind == "regression" else 44
    size = _bytes_per_slot(kind, flags[1]) * 2 ** int(flags[-1]) * blocks
    start = time.monotonic()
    line = one_line_error(run_cli("train", "--algo", "auto", *flags, data, "-f", model))
    assert time.monotonic() - start < 30
    assert f"--algo auto's banks of {members} models need {size:,} bytes" in line, line
    assert model.read_bytes() == b"kept"
