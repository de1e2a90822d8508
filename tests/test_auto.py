"""-C auto: a bank of one binary learner over a grid of values learns in one pass; each member
is the single learner of its value, and the bank keeps the member of the highest AUC among those
within one standard error of the lowest 0/1 loss, on the later half of the pass (holdout: the
lowest holdout loss). --algo auto: a bank of several learners' grids, chosen alike."""
import re

import numpy as np
import pytest

from streamherd import tasks
from streamherd.learners import create, spec
from streamherd.learners.base import UnstableUpdate
from streamherd.model import load_model
from streamherd.selection import (
    LEARNER_GRIDS,
    Grid,
    PackedBank,
    Search,
    default_grid,
    search_learners,
)
from streamherd.learners.packing import group_sizes
from streamherd.selection.scores import RecentRows, Scores, weighted_auc

from helpers import one_line_error

# (algo, the hyperparameter auto chooses): every family with a bank, and an auto on -a
# and every diagonal rule of the Gaussian families (each compiled into its own copy of the
# bank's update: kernels/bank.diag_bank_loop), cw's floor changing with -a
BANKED = [("nherd-p", "C"), ("nherd-e", "a"), ("nherd-d", "C"), ("arow-p", "r"), ("arow-d", "r"),
          ("pa2", "C"), ("pa1", "C"), ("cw", "eta"), ("cw", "a"), ("scw1", "C"), ("scw2", "eta"),
          ("narow-p", "b"), ("narow-d", "b")]


def random_chunks(seed, chunks=3, n=400, dim=128):
    """Chunks (y, importance, indptr, indices, values) of random sparse rows, with unlabeled
    rows (NaN) and importance weights 0 to 3."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(chunks):
        nnz = rng.integers(1, 12, n)
        indptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)
        # int32 slots, as the parser hands them to the learners: the tests run the kernels the
        # commands compile (and the install precompiles), not a second int64 copy of each
        indices = np.concatenate([rng.choice(dim, k, replace=False) for k in nnz]).astype(np.int32)
        values = rng.normal(size=indptr[-1]) * rng.choice([0.1, 1.0, 5.0], indptr[-1])
        truth = rng.normal(size=dim)
        margin = np.array([truth[indices[s:e]] @ values[s:e] for s, e in
                           zip(indptr[:-1], indptr[1:])])
        y = np.where(margin + rng.normal(size=n) > 0, 1.0, -1.0)
        y[rng.random(n) < 0.05] = np.nan
        importance = rng.choice([0.0, 0.5, 1.0, 3.0], n, p=[0.05, 0.15, 0.6, 0.2])
        out.append((y, importance, indptr, indices, values))
    return out, dim


def hyperparameter(algo, name):
    return next(h for h in spec(algo).hyperparameters if h.name == name)


def one_grid(algo, name, values=None):
    """The Search of -C auto (``name`` auto) over ``values`` (default: its default grid)."""
    h = hyperparameter(algo, name)
    return Search((Grid(algo, h, default_grid(h) if values is None else values),), h.flag)


# every family on two threads (groups of 8 and 3: what a two-core machine runs), pa2 on one and
# nherd-p on three too (the kernel is one for any group, compiled once per group size)
@pytest.mark.parametrize("algo, name, seed, threads",
                         [(*banked, seed, 2) for banked in BANKED for seed in (0, 1)]
                         + [("pa2", "C", 2, 1), ("nherd-p", "C", 2, 3)])
def test_every_member_is_the_single_learner_of_its_value(algo, name, seed, threads):
    """Weights, variances and each progressive margin of member k equal those of a learner of
    value k run alone (to 1e-12), and the member's progressive loss is the single run's; on
    one thread or on several (learners.packing.group_sizes: 11 members of two arrays in groups
    of 8 and 3 or of 4, 4 and 3; of one array, 8 and 3)."""
    chunks, dim = random_chunks(seed)
    search = one_grid(algo, name)
    bank = PackedBank(tasks.BinaryTask(), search, dim, {}, threads=threads)
    assert len(bank.groups) == 1
    assert len(bank.groups[0]) == min(threads, 2 if algo == "pa2" else 3)
    _check_members_are_single_learners(bank, chunks, dim)


def test_a_bank_of_learners_runs_each_learner_as_its_single_run():
    """--algo auto's bank: each learner's grid packed apart, every member of every learner
    equal to its single learner, the progressive losses and the window's Scores theirs."""
    chunks, dim = random_chunks(4)
    bank = PackedBank(tasks.BinaryTask(), search_learners({}, None, None), dim, {})
    assert [sum(len(group.alive) for group in groups) for groups in bank.groups] == [11] * 4
    _check_members_are_single_learners(bank, chunks, dim)


def _check_members_are_single_learners(bank, chunks, dim):
    """Learn ``chunks`` with the bank and beside it with a learner of each member's value
    alone: each member's state and options are its single learner's, the bank's progressive
    loss and window Scores theirs."""
    singles = [create(m.algo, dim, m.options({}), task="binary") for m in bank.members]
    mistakes, weight = np.zeros(len(singles)), 0.0
    rows = []   # (y, importance, every single's margin) of each learned row, in order
    for y, importance, indptr, indices, values in chunks:
        bank_margins = np.empty(len(y))
        bank.learn(y, importance, indptr, indices, values, bank_margins)
        learned = ~np.isnan(y) & (importance > 0)
        weight += importance[learned].sum()
        margins = np.empty((len(y), len(singles)))
        for k, single in enumerate(singles):
            single.learn(y, importance, indptr, indices, values, margins[:, k])
            wrong = (margins[learned, k] > 0) != (y[learned] > 0)
            mistakes[k] += importance[learned] @ wrong
        rows += zip(y[learned], importance[learned], margins[learned])
    progressive = mistakes / weight
    for k, single in enumerate(singles):
        assert bank.alive[k]
        ours = bank.learners[k].state()
        for key, theirs in single.state().items():
            np.testing.assert_allclose(ours[key], theirs, rtol=0, atol=1e-12, err_msg=key)
        assert bank.learners[k].options == single.options
    np.testing.assert_allclose(bank.progressive / bank.progressive_weight, progressive,
                               rtol=0, atol=1e-12)
    window = rows[len(rows) // 2:]   # the later half (the odd row to it)
    y = np.array([r[0] for r in window])
    w = np.array([r[1] for r in window])
    m = np.array([r[2] for r in window])
    losses = w @ ((m > 0) != (y > 0)[:, None]) / w.sum()
    scores = bank.scores()
    np.testing.assert_allclose(scores.losses, losses, rtol=0, atol=1e-12)
    np.testing.assert_allclose(scores.aucs, [pairwise_auc(m[:, k], y, w)
                                             for k in range(len(singles))], rtol=0, atol=1e-12)
    lowest = losses.min()
    assert scores.spread == pytest.approx(np.sqrt(lowest * (1 - lowest) * (w ** 2).sum())
                                          / w.sum(), abs=1e-12)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_member_whose_update_fails_leaves_the_bank_where_its_single_learner_fails(threads):
    """Values of 1e77 make nherd-p's update overflow for C >= 0.25 (at rows of their own) and
    not below: those members leave the bank at the row their single learner fails on, their
    margins NaN from it on; the others go on as their single learners do, whichever thread
    group each is in. All failing is an UnstableUpdate at the last failure's row."""
    rng = np.random.default_rng(0)
    n, dim = 300, 64
    nnz = rng.integers(1, 6, n)
    indptr = np.concatenate([[0], np.cumsum(nnz)]).astype(np.int64)
    # int32 slots, as the parser hands them to the learners: the tests run the kernels the
    # commands compile (and the install precompiles), not a second int64 copy of each
    indices = np.concatenate([rng.choice(dim, k, replace=False) for k in nnz]).astype(np.int32)
    values = rng.normal(size=indptr[-1])
    y, importance = np.where(rng.random(n) < 0.5, 1.0, -1.0), np.ones(n)
    search = one_grid("nherd-p", "C")
    bank = PackedBank(tasks.BinaryTask(), search, dim, {}, threads=threads)
    margins = bank.learn_members(y, importance, indptr, indices, values * 1e77)
    failed = 0
    for k, member in enumerate(search.members):
        single = create("nherd-p", dim, {"C": member.value}, task="binary")
        theirs = np.empty(n)
        try:
            single.learn(y, importance, indptr, indices, values * 1e77, theirs)
            at = n
        except UnstableUpdate as e:
            at, failed = e.index, failed + 1
            assert not bank.alive[k] and bank.failed_at[k] == at
            assert np.isnan(margins[at:, k]).all()
        else:
            assert bank.alive[k] and bank.failed_at[k] == -1
            np.testing.assert_array_equal(bank.learners[k].state()["mean"],
                                          single.state()["mean"])
        np.testing.assert_array_equal(margins[:at, k], theirs[:at])
    members = len(search.members)
    assert 0 < failed < members and bank.alive.sum() == members - failed
    everywhere = PackedBank(tasks.BinaryTask(), search, dim, {}, threads=threads)
    with pytest.raises(UnstableUpdate, match="failed for every value") as raised:
        everywhere.learn_members(y, importance, indptr, indices, values * 1e80)
    assert raised.value.index == everywhere.failed_at.max()


@pytest.mark.parametrize("members, arrays, threads, sizes", [
    (11, 2, 1, [11]), (11, 2, 2, [8, 3]), (11, 2, 3, [4, 4, 3]), (11, 2, 8, [4, 4, 3]),
    (11, 1, 2, [8, 3]), (11, 1, 3, [8, 3]), (16, 1, 2, [8, 8]), (20, 2, 2, [12, 8]),
    (3, 2, 2, [3]), (5, 2, 2, [4, 1]), (1, 1, 4, [1])])
def test_each_thread_runs_whole_cache_lines_of_members_the_first_the_most(members, arrays,
                                                                          threads, sizes):
    assert group_sizes(members, arrays, threads) == sizes


@pytest.mark.parametrize("module, rules", [("nherd", (0, 1, 2)), ("arow", (False, True)),
                                           ("cw", (0,)), ("scw", (0,))])
def test_the_numbers_of_no_step_keep_every_variance(module, rules):
    """The bank writes the members that do not learn from a row with their family's KEEP
    numbers (kernels/bank.diag_bank_loop): each diagonal rule then returns sigma_r itself, bit
    for bit, over variances and feature values of many magnitudes (those whose products
    sigma_r^2 x_r^2 are finite)."""
    from importlib import import_module

    family = import_module(f"streamherd.learners.algorithms.{module}")
    variance = {"nherd": "nherd_variance", "arow": "arow_variance", "cw": "cw_variance",
                "scw": "scw_variance"}[module]
    rng = np.random.default_rng(7)
    sigmas = np.concatenate([10.0 ** rng.uniform(-12, 12, 200), [1.0, 1e-12, 5e-324]])
    xs = np.concatenate([rng.normal(size=200) * 10.0 ** rng.uniform(-6, 6, 200),
                         [0.0, -0.0, 1e150]])
    for rule in rules:
        for sigma, x in zip(sigmas, xs):
            kept = getattr(family, variance)(sigma, x, family.KEEP, rule)
            assert kept == sigma, (rule, sigma, x, kept)


def pairwise_auc(margins, y, w):
    """Every (positive, negative) pair, weighted: 1 when the positive's margin is higher,
    1/2 when equal."""
    pos, neg = y > 0, y < 0
    higher = margins[pos][:, None] > margins[neg][None, :]
    equal = margins[pos][:, None] == margins[neg][None, :]
    pairs = w[pos][:, None] * w[neg][None, :]
    return float((pairs * (higher + 0.5 * equal)).sum() / pairs.sum())


def test_the_window_is_the_later_half_of_the_rows_at_most_its_capacity():
    rng = np.random.default_rng(5)
    recent = RecentRows(8, 2)
    added = []
    for n in (3, 0, 5, 11, 1, 2):
        y = rng.choice([-1.0, 1.0], n)
        weight = rng.random(n)
        margins = rng.normal(size=(n, 2))
        recent.add(y, weight, margins)
        added += zip(y, weight, margins)
        want = added[len(added) // 2:][-8:]
        got_y, got_weight, got_margins = recent.later_half()
        assert got_y.tolist() == [r[0] for r in want]
        assert got_weight.tolist() == [r[1] for r in want]
        assert got_margins.tolist() == [r[2].tolist() for r in want]


def test_weighted_auc_counts_ties_as_half_and_weights_each_pair():
    margins = np.array([0.5, -1.0, 0.5, 2.0, -1.0, 0.0])
    y = np.array([1.0, -1.0, -1.0, 1.0, 1.0, -1.0])
    w = np.array([1.0, 2.0, 0.5, 3.0, 1.0, 0.25])
    assert weighted_auc(margins, y > 0, w) == pytest.approx(pairwise_auc(margins, y, w),
                                                            abs=1e-15)
    assert np.isnan(weighted_auc(margins, np.ones(6, bool), w))


def test_the_leaders_margins_are_the_bank_prediction():
    """What the table and -p see of a chunk: the margins of the member whose loss led on the
    chunks before it (the first chunk: the value nearest the default)."""
    chunks, dim = random_chunks(3)
    bank = PackedBank(tasks.BinaryTask(), one_grid("arow-p", "r", (0.01, 1.0, 100.0)), dim, {})
    singles = [create("arow-p", dim, {"r": v}, task="binary") for v in (0.01, 1.0, 100.0)]
    leader = 1
    for y, importance, indptr, indices, values in chunks:
        shown = np.empty(len(y))
        bank.learn(y, importance, indptr, indices, values, shown)
        margins = []
        for single in singles:
            margins.append(np.empty(len(y)))
            single.learn(y, importance, indptr, indices, values, margins[-1])
        np.testing.assert_array_equal(shown, margins[leader])
        so_far = bank.progressive / bank.progressive_weight   # the loss on the chunks before
        leader = int(np.argmin(so_far))   # no tie on these data
        assert np.sum(so_far == so_far[leader]) == 1


def test_the_choice_is_the_best_auc_within_one_error_of_the_lowest_loss_then_the_default():
    grid, defaults = (0.25, 0.5, 2.0, 4.0, 8.0), (1.0,) * 5

    def best_first(losses, aucs, spread):
        return [int(k) for k in Scores(np.array(losses), np.array(aucs), spread)
                .ranking(grid, defaults)]
    # 0.31 and 0.32 are within 0.02 of 0.30: the highest AUC of the three first; the others
    # after them, by loss
    assert best_first([0.30, 0.31, 0.32, 0.40, 0.35], [0.7, 0.8, 0.75, 0.99, 0.6], 0.02) == \
        [1, 2, 0, 4, 3]
    # no spread: the lowest loss alone, whatever the AUCs
    assert best_first([0.30, 0.31, 0.32, 0.40, 0.35], [0.7, 0.8, 0.75, 0.99, 0.6], 0.0)[0] == 0
    # equal AUCs in the band: the lower loss, then the value nearest the default, then smaller
    assert best_first([0.2, 0.2, 0.2, 0.1, 0.1], [0.5] * 5, 0.0)[:2] == [3, 4]
    assert best_first([0.1, 0.2, 0.1, 0.3, 0.3], [0.5] * 5, 0.0)[:2] == [2, 0]
    assert best_first([0.2, 0.1, 0.1, 0.3, 0.3], [0.5] * 5, 0.0)[:2] == [1, 2]
    # a member that failed (inf) is never chosen; an AUC that is NaN (one class) counts as 0
    assert best_first([np.inf, 0.1, 0.1, 0.3, 0.3], [1.0, np.nan, 0.6, 0.9, 0.9], 0.05)[:2] \
        == [2, 1]


def test_the_leader_while_learning_is_the_lowest_progressive_loss_ties_to_the_default():
    bank = PackedBank(tasks.BinaryTask(), one_grid("nherd-p", "C", (0.25, 0.5, 2.0, 4.0, 8.0)),
                      4, {})
    assert bank.leader() == 1   # nothing seen: 0.5 and 2 as near C's default 1: the smaller
    bank.progressive_weight = 10.0
    bank.progressive[:] = [3.0, 2.0, 2.0, 1.0, 1.0]
    assert bank.leader() == 3                       # 4 and 8 tie: 4 is nearer C's default 1
    bank.alive[3] = False                           # a member that failed never leads
    assert bank.leader() == 4


def test_the_summary_describes_the_model_written_not_the_bank_now():
    """With passes, the model written is the best pass's: the summary reads its record."""
    bank = PackedBank(tasks.BinaryTask(), one_grid("arow-p", "r", (0.5, 1.0, 2.0)), 4, {})
    bank.pass_holdout = np.array([0.3, 0.2, 0.1])
    record = bank.model_meta()["auto"]              # the best pass's model: r = 2
    bank.pass_holdout = np.array([0.1, 0.2, 0.3])   # a later, worse pass: r = 0.5 leads
    bank.passes_done += 1
    assert bank.summary("0/1 loss")["auto -r chosen"] == "0.5 (holdout 0/1 loss 0.100000)"
    lines = bank.summary("0/1 loss", record)
    assert lines["auto -r chosen"] == "2 (holdout 0/1 loss 0.100000)"
    assert lines["auto -r runner-up"] == "1 (holdout 0/1 loss 0.200000)"


def _summary(stderr, key):
    return re.search(rf"^{re.escape(key)} = (.*)$", stderr, re.M).group(1)


def test_train_auto_on_real_data_keeps_the_best_and_each_bank_file_is_a_single_run(
        run_cli, data_dir, tmp_path):
    """spambase, -C auto over a 4-value grid: each --save-bank file is the model (weights and
    progressive loss) of `train -C v`; the model written is the chosen member's, an ordinary
    model of that C whose meta says auto chose it."""
    data = data_dir / "spambase.train.svm"
    grid = (2.0 ** -6, 2.0 ** -2, 1.0, 16.0)
    model = tmp_path / "m.npz"
    proc = run_cli("train", "--algo", "nherd-p", "-C", "auto", "--grid", "2^-6,0.25,1,16",
                   "--normalize", data, "-f", model, "--save-bank")
    assert proc.returncode == 0, proc.stderr
    meta, arrays = load_model(model)
    auto = meta["auto"]
    assert (auto["hyperparameter"], auto["grid"], auto["chosen_on"]) == ("C", list(grid),
                                                                         "progressive")
    for k, c in enumerate(grid, 1):
        single = tmp_path / f"single{k}.npz"
        done = run_cli("train", "--algo", "nherd-p", "-C", repr(c), "--normalize", data,
                       "-f", single, "--quiet")
        assert done.returncode == 0, done.stderr
        single_meta, single_arrays = load_model(single)
        member_meta, member_arrays = load_model(tmp_path / f"m.bank{k}.npz")
        assert member_meta["hyperparameters"] == single_meta["hyperparameters"] == \
            {"C": c, "a": 1.0}
        assert member_meta["auto"]["member"] == k
        for key in single_arrays:
            np.testing.assert_allclose(member_arrays[key], single_arrays[key], rtol=0,
                                       atol=1e-12)
        assert member_meta["progressive_loss"] == pytest.approx(single_meta["progressive_loss"],
                                                                abs=1e-12)
        _same_calibration(member_meta["calibration"], single_meta["calibration"])
    # the choice the record's scores make (their numbers: test_every_member_is_...)
    ranking = Scores(np.array(auto["losses"]), np.array(auto["aucs"]), auto["spread"]) \
        .ranking(grid, (1.0,) * 4)
    best, runner_up = int(ranking[0]), int(ranking[1])
    assert auto["chosen"] == grid[best] and meta["hyperparameters"]["C"] == grid[best]
    _, best_arrays = load_model(tmp_path / f"m.bank{best + 1}.npz")
    for key in best_arrays:
        np.testing.assert_array_equal(arrays[key], best_arrays[key])
    assert _summary(proc.stderr, "auto -C chosen").startswith(f"{grid[best]:g} ")
    assert _summary(proc.stderr, "auto -C runner-up").startswith(f"{grid[runner_up]:g} ")
    # an ordinary model: predict reads it as that of its C
    test = data_dir / "spambase.test.svm"
    for output in ("--raw", "--proba"):
        ours = run_cli("predict", "-m", model, test, output)
        theirs = run_cli("predict", "-m", tmp_path / f"single{best + 1}.npz", test, output)
        assert ours.returncode == theirs.returncode == 0
        assert ours.stdout == theirs.stdout


def _same_calibration(ours, theirs):
    """Two binary calibrations' statistics alike: the same histogram cells and label weights,
    the margin sums to the margins' 1e-12 (a member's margins are its single learner's to
    that), the same map."""
    assert (ours["method"], ours["cells"]) == (theirs["method"], theirs["cells"])
    assert (ours["positive"], ours["negative"]) == (theirs["positive"], theirs["negative"])
    np.testing.assert_allclose(ours["margin_sums"], theirs["margin_sums"], rtol=1e-9)
    for key in ours["params"]:
        np.testing.assert_allclose(ours["params"][key], theirs["params"][key], rtol=1e-9)


def test_auto_with_passes_chooses_on_the_holdout_loss(run_cli, data_dir, tmp_path):
    """--passes 2 with the default holdout (every 10th example): the bank's loss of each r is
    the holdout loss `train -r v --passes 2` reports for pass 2, and the model is the argmin's
    at its best pass."""
    data = data_dir / "spambase.train.svm"
    grid = (2.0 ** -8, 1.0, 64.0)
    model = tmp_path / "m.npz"
    proc = run_cli("train", "--algo", "arow-p", "-r", "auto", "--grid", "2^-8,1,64", data,
                   "--passes", "2", "--early_terminate", "5", "-f", model)
    assert proc.returncode == 0, proc.stderr
    holdout = []
    for r in grid:
        single = run_cli("train", "--algo", "arow-p", "-r", repr(r), data, "--passes", "2",
                         "--early_terminate", "5", "-f", tmp_path / f"r{r}.npz")
        assert single.returncode == 0, single.stderr
        per_pass = [float(x) for x in _summary(single.stderr,
                                               "holdout 0/1 loss per pass").split(", ")]
        holdout.append(per_pass[-1])
    meta, _ = load_model(model)
    best = int(np.argmin(holdout))
    assert holdout.count(holdout[best]) == 1, "a tie: choose other values for this test"
    assert _summary(proc.stderr, "auto -r chosen") == f"{grid[best]:g} (holdout 0/1 loss " \
                                                      f"{holdout[best]:.6f})"
    assert meta["hyperparameters"]["r"] == grid[best]
    assert meta["auto"]["chosen_on"] == "holdout"


@pytest.mark.parametrize("flags, expected", [
    (["--algo", "nherd-p", "-C", "auto", "--grid", "4"], "--grid '4' gives one value"),
    (["--algo", "nherd-p", "-C", "auto", "--grid", "1,x"], "--grid '1,x' is not a list"),
    (["--algo", "nherd-p", "-C", "auto", "--grid", "2^4..2^-4"],
     "--grid '2^4..2^-4' gives no value (a range runs from low to high)"),
    (["--algo", "nherd-p", "-C", "auto", "--grid", "2,2"], "--grid '2,2' gives one value"),
    (["--algo", "nherd-p", "-C", "auto", "--grid", "2^1..2^3:0"], "--grid '2^1..2^3:0' is not"),
    (["--algo", "cw", "--eta", "auto", "--grid", "0.6,2"], "2 is not a valid --eta"),
    (["--algo", "nherd-p", "-r", "auto"], "nherd-p does not take -r, so it cannot be auto"),
    (["--algo", "perceptron", "-C", "auto"], "perceptron does not take -C"),
    (["--algo", "nherd-p", "-C", "auto", "-a", "auto"], "auto chooses one hyperparameter"),
    (["--algo", "nherd-p", "--grid", "1,2"], "--grid lists the values 'auto' tries"),
    (["--algo", "nherd-p", "-C", "1", "--save-bank"], "--save-bank writes every model"),
    (["--algo", "nherd-p", "-C", "auto", "--audit"], "--audit shows one model's weights"),
    (["--algo", "pa2", "-C", "auto", "--grid", "2^2000,1"],
     "--grid '2^2000,1' is not a list of values"),
    (["--algo", "pa2", "-C", "auto", "--grid", "2^1..2^100000000"], "gives more than 1000 values"),
    (["--algo", "pa2", "-C", "auto", "--grid", "2^-100000000..2^0"], "gives more than 1000 values"),
    (["--algo", "voted-perceptron", "--max-support", "auto"],
     "--max-support auto has no default grid; give the values to try with --grid"),
    (["--algo", "auto", "-b", "30"], "--algo auto's banks of 44 models need "),
    # (the bytes: 2^30 slots of 3 cache lines, or of 2 per thread: group_sizes)
    (["--algo", "nherd-p", "-C", "auto", "-b", "30"], "-C auto's bank of 11 nherd-p models "
                                                      "needs "),
])
def test_bad_auto_is_a_one_line_error(run_cli, tmp_path, flags, expected):
    data = tmp_path / "d.svm"
    data.write_text("1 1:1\n-1 2:1\n")
    model = tmp_path / "m.npz"
    model.write_bytes(b"kept")
    line = one_line_error(run_cli("train", *flags, data, "-f", model))
    assert expected in line, line
    assert model.read_bytes() == b"kept"


def test_auto_with_test_only_and_a_value_not_a_number(run_cli, tmp_path):
    data = tmp_path / "d.svm"
    data.write_text("1 1:1\n-1 2:1\n")
    line = one_line_error(run_cli("train", "--algo", "pa2", "-C", "auto", "-t", data))
    assert "-t learns nothing" in line, line
    # as every bad option value (test_cli.py)
    proc = run_cli("train", "--algo", "pa2", "-C", "autoo", data)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "'-C': Input should be a valid number or auto" in proc.stderr


def test_auto_refuses_continuing_a_model(run_cli, tmp_path):
    binary = tmp_path / "b.svm"
    binary.write_text("1 1:1\n-1 2:1\n")
    model = tmp_path / "m.npz"
    assert run_cli("train", "--algo", "pa2", binary, "-f", model, "--quiet").returncode == 0
    line = one_line_error(run_cli("train", "-i", model, "-C", "auto", binary))
    assert "auto chooses a hyperparameter for a new model" in line, line


def test_algo_auto_keeps_a_plain_model_of_the_chosen_learner(run_cli, data_dir, tmp_path):
    """--algo auto on spambase: a bank of every learner of LEARNER_GRIDS over its default
    grid; the model written is the chosen member's bank file, which is `train --algo A -X v`
    itself (weights, and predict's output), and the summary names the chosen and the
    runner-up as the record's scores rank them."""
    data = data_dir / "spambase.train.svm"
    model = tmp_path / "m.npz"
    proc = run_cli("train", "--algo", "auto", data, "-f", model, "--save-bank")
    assert proc.returncode == 0, proc.stderr
    assert "algorithm = auto (banks of nherd-p (-C over 11 values), arow-p" in proc.stderr
    meta, arrays = load_model(model)
    auto = meta["auto"]
    tried = [(m["algo"], m["hyperparameter"], m["value"]) for m in auto["members"]]
    assert tried == [(algo, name, v) for algo, name in LEARNER_GRIDS
                     for v in default_grid(hyperparameter(algo, name))]
    defaults = [hyperparameter(a, n).default for a, n, _ in tried]
    ranking = Scores(np.array(auto["losses"]), np.array(auto["aucs"]), auto["spread"]) \
        .ranking([v for _, _, v in tried], defaults)
    algo, name, value = tried[ranking[0]]
    assert (meta["algo"], meta["hyperparameters"][name]) == (algo, value)
    flag = hyperparameter(algo, name).flag
    assert _summary(proc.stderr, "auto --algo chosen").startswith(f"{algo} {flag} {value:g} (")
    runner = tried[ranking[1]]
    assert _summary(proc.stderr, "auto --algo runner-up").startswith(f"{runner[0]} ")
    member_meta, member_arrays = load_model(tmp_path / f"m.bank{ranking[0] + 1}.npz")
    assert member_meta["algo"] == algo
    single = tmp_path / "single.npz"
    assert run_cli("train", "--algo", algo, flag, repr(value), data, "-f", single,
                   "--quiet").returncode == 0
    _, single_arrays = load_model(single)
    for key in single_arrays:
        np.testing.assert_allclose(arrays[key], single_arrays[key], rtol=0, atol=1e-12)
        np.testing.assert_array_equal(arrays[key], member_arrays[key])
    # the calibration too is the chosen learner's own, not one of the bank's leaders' margins
    # (it was: test log-loss 0.48 against the single model's 0.26 on spambase)
    _same_calibration(meta["calibration"], load_model(single)[0]["calibration"])
    _same_calibration(member_meta["calibration"], meta["calibration"])
    test = data_dir / "spambase.test.svm"
    for output in ("--raw", "--proba"):
        ours = run_cli("predict", "-m", model, test, output)
        theirs = run_cli("predict", "-m", single, test, output)
        assert ours.returncode == theirs.returncode == 0
        assert ours.stdout == theirs.stdout


@pytest.mark.parametrize("flags, expected", [
    (["--algo", "auto", "-C", "1"], "--algo auto chooses each learner's hyperparameter"),
    (["--algo", "auto", "--grid", "1,2"], "with --algo auto each learner tries its default"),
    (["--algo", "auto", "-t"], "--algo auto trains a bank of models"),
])
def test_bad_algo_auto_is_a_one_line_error(run_cli, tmp_path, flags, expected):
    data = tmp_path / "d.svm"
    data.write_text("1 1:1\n-1 2:1\n")
    line = one_line_error(run_cli("train", *flags, data))
    assert expected in line, line


def test_a_default_of_zero_breaks_ties_by_difference_and_a_failed_member_is_no_runner_up():
    """--epsilon's default is 0: on equal losses the value nearest it (0) wins, with no
    division by it; a member that failed is never named the runner-up."""
    h = next(h for h in spec("pa2").accepted("regression") if h.name == "epsilon")
    scores = Scores(np.zeros(3), np.full(3, np.nan))
    with np.errstate(all="raise"):
        assert scores.ranking((0.0, 0.5, 1.0), (h.default,) * 3).tolist() == [0, 1, 2]
    bank = PackedBank(tasks.BinaryTask(), one_grid("pa2", "C", (1.0, 2.0)), 4, {})
    bank.alive[1] = False
    assert "runner_up_label" not in bank.model_meta()["auto"]


def test_save_bank_says_which_members_failed_and_leaves_their_old_files(run_cli, tmp_path):
    rng = np.random.default_rng(0)
    data = tmp_path / "d.svm"
    data.write_text("".join(f"{rng.choice([-1, 1])} 1:{rng.normal() * 1e77:.6g} "
                            f"2:{rng.normal() * 1e77:.6g}\n" for _ in range(300)))
    model = tmp_path / "m.npz"
    (tmp_path / "m.bank11.npz").write_text("old")
    proc = run_cli("train", "--algo", "nherd-p", "-C", "auto", data, "-f", model, "--save-bank")
    assert proc.returncode == 0, proc.stderr
    failed = load_model(model)[0]["auto"]["losses"].count(None)
    assert 0 < failed < 11
    assert f"--save-bank: {failed} member(s) failed and were not written" in proc.stderr
    assert str(tmp_path / "m.bank11.npz") in proc.stderr
    assert (tmp_path / "m.bank11.npz").read_text() == "old"
