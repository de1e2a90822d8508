"""The mixing rules of dist-train (streamherd/distributed/mixing.py) against numpy
transcriptions of their formulas; a tree of pairwise mixes equals the flat mix; ``sum`` of
recursive-least-squares shards from one prior is the posterior of all the data."""
import numpy as np
import pytest

from streamherd.distributed import mixing
from streamherd.distributed.mixing import Counters, Rule, ShardResult, mix_states
from streamherd.errors import StreamherdError


def _results(rng, shards, dim, mistakes=None):
    return [ShardResult({"mean": rng.normal(size=dim), "variance": rng.uniform(0.1, 2, dim),
                         "extra": rng.normal(size=dim)}, {}, {"task": "binary"},
                        Counters(mistakes=0 if mistakes is None else mistakes[i]))
            for i in range(shards)]


def _start(rng, dim):
    return {"mean": rng.normal(size=dim), "variance": rng.uniform(0.5, 2, dim),
            "extra": rng.normal(size=dim)}


def _expected(rule, start, results, w):
    """The mixing rules' formulas, element by element, weights w (normalized)."""
    mu = np.array([r.state["mean"] for r in results])
    var = np.array([r.state["variance"] for r in results])
    extra = np.array([r.state["extra"] for r in results])
    w = w / w.sum()
    if rule == "mean":
        return {"mean": w @ mu, "variance": w @ var, "extra": w @ extra}
    if rule == "jubatus":
        return {"mean": w @ mu, "variance": var.min(axis=0), "extra": w @ extra}
    if rule == "prec":
        sigma = 1 / (w @ (1 / var))
        return {"mean": sigma * (w @ (mu / var)), "variance": sigma, "extra": w @ extra}
    p0, m0 = 1 / start["variance"], start["mean"]
    sigma = 1 / (p0 + (1 / var - p0).sum(axis=0))
    return {"mean": sigma * (p0 * m0 + (mu / var - p0 * m0).sum(axis=0)), "variance": sigma,
            "extra": start["extra"] + (extra - start["extra"]).sum(axis=0)}


@pytest.mark.parametrize("rule", mixing.RULES)
@pytest.mark.parametrize("weights", mixing.WEIGHTS)
def test_rules_follow_their_formulas_and_a_tree_equals_the_flat_mix(rule, weights):
    rng = np.random.default_rng(len(rule) + len(weights))
    mistakes = [3, 0, 7, 1, 4]
    results = _results(rng, 5, 50, mistakes)
    start = _start(rng, 50)
    w = np.array(mistakes, float) if weights == "mistakes" and rule != "sum" else np.ones(5)
    flat = mix_states(Rule(rule, start), results, "uniform" if rule == "sum" else weights)
    expected = _expected(rule, start, results, w)
    assert flat.keys() == expected.keys()
    for name in expected:
        np.testing.assert_allclose(flat[name], expected[name], rtol=1e-12)
    r = Rule(rule, start)
    lifted = [r.lift(res.state, wi) for res, wi in zip(results, w if rule != "sum" else np.ones(5))]
    tree = r.finish((lifted[0] + lifted[1]) + (lifted[2] + (lifted[3] + lifted[4])))
    for name in expected:
        np.testing.assert_allclose(tree[name], flat[name], rtol=1e-12)


def test_no_mistakes_anywhere_weighs_uniformly():
    results = _results(np.random.default_rng(1), 3, 4, [0, 0, 0])
    assert mixing.shard_weights(results, "mistakes").tolist() == [1, 1, 1]


def _rls(prior_mean, prior_cov, x, y):
    """Recursive least squares (Bayesian linear regression, unit noise), one row at a time."""
    mean, cov = prior_mean.copy(), prior_cov.copy()
    for xi, yi in zip(x, y):
        gain = cov @ xi / (1 + xi @ cov @ xi)
        mean = mean + gain * (yi - xi @ mean)
        cov = cov - np.outer(gain, xi @ cov)
    return mean, cov


@pytest.mark.parametrize("shards", [2, 3, 5])
def test_sum_of_least_squares_shards_is_the_posterior_of_all_the_data(shards):
    rng = np.random.default_rng(shards)
    d = 4
    x, y = rng.normal(size=(60, d)), rng.normal(size=60)
    prior_mean, prior_cov = rng.normal(size=d), np.diag(rng.uniform(0.5, 2, d))
    parts = np.array_split(np.arange(60), shards)
    results = []
    for part in parts:
        mean, cov = _rls(prior_mean, prior_cov, x[part], y[part])
        results.append(ShardResult({"mean": mean, "covariance": cov}, {}, {}, Counters()))
    mixed = mix_states(Rule("sum", {"mean": prior_mean, "covariance": prior_cov}), results)
    precision = np.linalg.inv(prior_cov) + x.T @ x
    posterior_cov = np.linalg.inv(precision)
    posterior_mean = posterior_cov @ (np.linalg.inv(prior_cov) @ prior_mean + x.T @ y)
    np.testing.assert_allclose(mixed["covariance"], posterior_cov, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(mixed["mean"], posterior_mean, rtol=1e-9)
    full = _rls(prior_mean, prior_cov, x, y)
    np.testing.assert_allclose(mixed["mean"], full[0], rtol=1e-8)


def test_prec_of_full_covariances_inverts_matrices():
    rng = np.random.default_rng(5)
    d = 3
    states = []
    for _ in range(3):
        a = rng.normal(size=(d, d))
        states.append({"mean": rng.normal(size=d), "covariance": a @ a.T + np.eye(d)})
    results = [ShardResult(s, {}, {}, Counters()) for s in states]
    mixed = mix_states(Rule("prec", states[0]), results)
    precisions = [np.linalg.inv(s["covariance"]) for s in states]
    sigma = np.linalg.inv(sum(precisions) / 3)
    np.testing.assert_allclose(mixed["covariance"], sigma, rtol=1e-10)
    np.testing.assert_allclose(mixed["mean"], sigma @ (sum(p @ s["mean"] for p, s in
                                                          zip(precisions, states)) / 3),
                               rtol=1e-10)


def test_rules_a_learner_cannot_take_are_refused():
    with pytest.raises(StreamherdError, match="use --mix mean"):
        Rule("prec", {"mean": np.zeros(3), "average": np.zeros(3)})
    with pytest.raises(StreamherdError, match="full covariance"):
        Rule("jubatus", {"mean": np.zeros(2), "covariance": np.eye(2)})
    with pytest.raises(StreamherdError, match="--force"):
        mixing.check_rule("sum", "binary", 4, force=False)
    mixing.check_rule("sum", "binary", 4, force=True)
    mixing.check_rule("sum", "binary", 2, force=False)
    mixing.check_rule("sum", "regression", 8, force=False)


def test_counters_add_and_labels_merge():
    start = {"examples_seen": 10, "ova": [{"examples_seen": 1}, {"examples_seen": 2}]}
    metas = [{"examples_seen": 15, "ova": [{"examples_seen": 4}, {"examples_seen": 2}]},
             {"examples_seen": 13, "ova": [{"examples_seen": 1}, {"examples_seen": 9}]}]
    assert mixing.mix_learner_meta(start, metas) == \
        {"examples_seen": 18, "ova": [{"examples_seen": 4}, {"examples_seen": 9}]}
    binary = [{"task": "binary", "labels": {"negative": 0.0, "positive": None}},
              {"task": "binary", "labels": {"negative": None, "positive": 1.0}}]
    assert mixing.mix_task_meta(binary, ["a", "b"])["labels"] == \
        {"negative": 0.0, "positive": 1.0}
    clash = [*binary, {"task": "binary", "labels": {"negative": -1.0, "positive": 1.0}}]
    with pytest.raises(StreamherdError, match="c: label -1 is negative like label 0 of a"):
        mixing.mix_task_meta(clash, ["a", "b", "c"])
    classes = [{"task": "multiclass", "classes": ["a", "b"]},
               {"task": "multiclass", "classes": ["b", "a"]}]
    with pytest.raises(StreamherdError, match="y learned other classes than x"):
        mixing.mix_task_meta(classes, ["x", "y"])


def _numpy_averaged_perceptron(w, X, y):
    """The averaged perceptron on rows X (dense), labels y in {-1, +1}, from weights ``w``: the
    final weights and the sum of the weight vectors after each example (Freund & Schapire)."""
    w, total = w.copy(), np.zeros_like(w)
    for x, label in zip(X, y):
        if label * (w @ x) <= 0:
            w += label * x
        total += w
    return w, total


def _learned(start_state, start_meta, X, y):
    """A ShardResult of the real avg-perceptron learner over X from the given model."""
    from scipy.sparse import csr_matrix

    from streamherd import learners

    learner = learners.create("avg-perceptron", X.shape[1], {}, start_state, start_meta,
                              task="binary")
    rows = csr_matrix(X)
    learner.learn(y.astype(np.float64), np.ones(len(y)), rows.indptr.astype(np.int64),
                  rows.indices.astype(np.int32), rows.data.astype(np.float64),
                  np.empty(len(y)))
    return ShardResult({k: v.copy() for k, v in learner.state().items()}, learner.meta(),
                       {"task": "binary"}, Counters(examples=len(y)))


@pytest.mark.parametrize("shards", [2, 3])
def test_the_averaged_perceptrons_average_is_over_every_shards_examples(shards):
    """Two rounds of shards from one model: the mixed average is the average of the weight
    vectors after each example of every shard and every round before (a numpy transcription),
    not the shards' averages averaged; a tree of pairwise mixes gives the same."""
    rng = np.random.default_rng(7)
    dim = 12
    X = rng.normal(size=(60 * shards, dim)) * (rng.uniform(size=(60 * shards, dim)) < 0.5)
    y = np.sign(X @ rng.normal(size=dim) + 0.3 * rng.normal(size=len(X)))
    y[y == 0] = 1
    blocks = [(X[i::shards], y[i::shards]) for i in range(shards)]
    state = {"mean": np.zeros(dim), "average": np.zeros(dim)}
    meta, seen, sums = {"examples_seen": 0}, 0, np.zeros(dim)
    for half in (slice(0, 30), slice(30, 60)):
        results = [_learned(state, meta, bx[half], by[half]) for bx, by in blocks]
        for (bx, by) in blocks:
            _, total = _numpy_averaged_perceptron(state["mean"], bx[half], by[half])
            sums += total
            seen += len(by[half])
        rule = Rule("mean", state)
        flat = mixing.mix_running_averages(state, meta, results, mix_states(rule, results))
        tree = mixing.mix_running_averages(
            state, meta, results, rule.finish(sum((rule.lift(r.state, 1.0) for r in results[1:]),
                                                  rule.lift(results[0].state, 1.0))))
        np.testing.assert_allclose(flat["average"], sums / seen, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(tree["average"], flat["average"], rtol=1e-12, atol=1e-12)
        meta = mixing.mix_learner_meta(meta, [r.learner_meta for r in results])
        assert meta["examples_seen"] == seen
        state = flat


def _unchanged(start, learner_meta=None, examples=0):
    """The result of a shard that learned nothing: the round's start, as it came."""
    return ShardResult({k: v.copy() for k, v in start.items()}, dict(learner_meta or {}),
                       {"task": "binary", "labels": {"negative": None, "positive": None}},
                       Counters(examples=examples))


@pytest.mark.parametrize("rule,weights", [("mean", "uniform"), ("prec", "mistakes"),
                                          ("jubatus", "uniform"), ("sum", "uniform")])
def test_a_shard_that_learned_nothing_is_left_out_of_the_mix(rule, weights):
    """An empty shard (or one of unlabeled lines) beside one that learned gives that shard's
    model bit for bit (driver.mixed), and beside two that learned, their mix of two."""
    from streamherd.distributed.driver import mixed

    rng = np.random.default_rng(5)
    start = _start(rng, 8)
    learned = [ShardResult(r.state, {}, {"task": "binary", "labels": {"negative": -1.0,
                                                                      "positive": 1.0}},
                           Counters(examples=10, labeled=10, weighted=10.0, mistakes=3 + i))
               for i, r in enumerate(_results(rng, 2, 8))]
    meta = {"learner": {}, "examples": 0}
    names = ["a", "b", "c"]
    one, _ = mixed((meta, start), [learned[0], _unchanged(start, examples=4)], rule, weights,
                   names)
    assert all(np.array_equal(one[1][k], learned[0].state[k]) for k in start)
    two, counters = mixed((meta, start), [learned[0], _unchanged(start), learned[1]], rule,
                          weights, names)
    expected = mix_states(Rule(rule, start), learned, weights)
    assert all(np.array_equal(two[1][k], expected[k]) for k in start)
    assert counters.examples == 20 and two[0]["examples"] == 20
    # no shard learned: the model stays as it was
    none, _ = mixed((meta, start), [_unchanged(start), _unchanged(start)], rule, weights, names)
    assert none[1] is start


def test_an_empty_shard_leaves_the_running_average_as_one_shards():
    """The averaged perceptron beside an empty shard: the average (and examples_seen) of the
    shard that learned, bit for bit, and with two that learned, the numpy transcription's
    average over both."""
    from streamherd.distributed.driver import mixed

    rng = np.random.default_rng(9)
    dim = 10
    X = rng.normal(size=(80, dim))
    y = np.sign(X @ rng.normal(size=dim))
    y[y == 0] = 1
    state = {"mean": np.zeros(dim), "average": np.zeros(dim)}
    meta = {"learner": {"examples_seen": 0}, "examples": 0}
    learned = []
    for block in (slice(0, 40), slice(40, 80)):
        result = _learned(state, meta["learner"], X[block], y[block])
        learned.append(ShardResult(result.state, result.learner_meta,
                                   {"task": "binary", "labels": {"negative": -1.0,
                                                                 "positive": 1.0}},
                                   Counters(examples=40, labeled=40, weighted=40.0)))
    empty = _unchanged(state, meta["learner"])
    alone, _ = mixed((meta, state), [empty, learned[0]], "mean", "uniform", ["e", "a"])
    assert all(np.array_equal(alone[1][k], learned[0].state[k]) for k in state)
    assert alone[0]["learner"]["examples_seen"] == 40
    pair, _ = mixed((meta, state), [learned[0], empty, learned[1]], "mean", "uniform",
                    ["a", "e", "b"])
    total = sum(_numpy_averaged_perceptron(state["mean"], X[b], y[b])[1]
                for b in (slice(0, 40), slice(40, 80)))
    np.testing.assert_allclose(pair[1]["average"], total / 80, rtol=1e-12, atol=1e-12)
    assert pair[0]["learner"]["examples_seen"] == 80
