"""The per-example loops, written once: binary (and regression), joint multiclass.

A learner is its update rule (algorithms/): a ``margin`` rule, which reads the state on a row and
returns (margin, confidence) (the confidence v = x' Sigma x of the diagonal Gaussian rules, else
0; the row ``ahead`` is prefetched in the same pass, see prefetch.py), and a ``step`` rule,
  step(state, params, indices, values, start, end, m, v, y, s) -> (updated, ok)
the update on the row with signed margin m = y margin (the margin itself for regression), label
y (+1 on a joint Delta row) and importance weight s > 0. ``state`` is a tuple of the learner's
arrays (its first is the weight vector the joint scores read and the prefetch asks for),
``params`` a tuple of its numbers.

Entry points: one thin cached entry point per (family, covariance) in the algorithm's module
(``run`` for a family without a covariance, else ``run_diag`` and ``run_full``) serves every
task, in one line:
  @entry_point()
  def run_full(binary=None, regression=None, joint=None, args=None):
      return run_rules(margin, step, regression_step, binary, regression, joint, args)
with the family's rules (njit dispatchers; ``regression_step`` None for a family without a
squared-loss form). An entry point that serves a ``-C auto`` bank as well takes ``bank=None``
and passes it on (kernels/bank.py). A diagonal Gaussian family gives its step's parts instead
(covariance.planned_step), from which run_planned_rules makes its steps:
  @entry_point()
  def run_diag(binary=None, regression=None, joint=None, args=None, bank=None):
      return run_planned_rules(plan, regression_plan, variance, KEEP, rule_of, binary,
                               regression, joint, args, bank)
A call passes ``args``, what every loop takes, and the other arguments of its task's loop as
``binary``, ``regression`` or ``joint``, omitting the others (Learner.learn, learn_regression,
learn_joint; a bank passes ``bank`` alone). ``run_rules`` picks the task's loop when numba
types the call, from which argument is given (an overload, inlined, which calls the rules by
name so that numba inlines them too): each task compiles into a specialisation of the entry
point holding its loop alone, as a function per task would. In one function with the three
loops LLVM spilled more registers in each, and the binary kernels of pa2, arow-p and cw were
slower. The price of the one-line body is compile time when the cache misses: numba types an
inlined overload twice. A generic loop that received its rules from Python, or an entry point
made by a factory closing over them, would never hit numba's on-disk cache across processes
(the functions the overloads make, closed over the rules, are compiled into the cached entry
point, not cached themselves).

Reference counts: the entry points compile without numba's reference counting (``_nrt=False``,
see ``entry_point``): they allocate nothing, and every array they touch is an argument, which
the caller keeps alive for the call. With it, an inlined step that takes arrays gets
NRT_incref/decref calls around it, per labeled example, unless numba's pruning removes them,
which depends on the shape of the compiled code: a raise path out of the step defeats it (so
arow, narow, pa, perceptron and sop compiled with ``error_model="numpy"``), and so did the
arguments passed in tuples (nherd-p's and arow-p's binary loops kept two pairs). ``inspect_llvm()``
of an entry point shows no ``NRT_incref``. The error model stays each family's (numpy's: a
division by zero gives inf or nan, which the steps' checks report, instead of raising).

Numerical safety (sparse.py): every example's margin is checked before its step, so a step
receives a finite m; the step checks the numbers its update is made of and the entries it
wrote, and returns ok False on a failure; the loop then returns the example's index
(``Learner.checked`` raises UnstableUpdate), else -1.
"""
import numpy as np
from numba import njit, types
from numba.core.errors import TypingError
from numba.extending import overload

from streamherd.learners.kernels.bank import diag_bank_kernel, mean_bank_kernel
from streamherd.learners.kernels.covariance import diag_margin_confidence_ahead, planned_rule
from streamherd.learners.kernels.multiclass import (class_scores, joint_prepare,
                                                    prefetch_state_blocks, visible_classes)
from streamherd.learners.kernels.prefetch import NO_ROW, row_ahead
from streamherd.learners.kernels.sparse import dot_ahead, finite


def entry_point(error_model="python"):
    """The decorator of a family's entry points: cached, releasing the GIL, compiled without
    reference counting (see the module docstring)."""
    return njit(cache=True, nogil=True, error_model=error_model, _nrt=False)


@njit(cache=True, inline="always")
def mean_margin(state, indices, values, start, end, ahead):
    """(mu.x, 0): the margin of the mean state[0]."""
    return dot_ahead(state[0], indices, values, start, end, ahead), 0.0


@njit(cache=True, inline="always")
def diag_margin(state, indices, values, start, end, ahead):
    """(mu.x, x' diag(sigma) x) for state = (mu, sigma, ...), in one pass."""
    return diag_margin_confidence_ahead(state[0], state[1], indices, values, start, end, ahead)


@njit(cache=True, inline="always")
def mean_scores(state, layout, K, indices, values, start, end, out):
    """The joint class scores of the mean state[0]."""
    class_scores(state[0], layout, K, indices, values, start, end, out)


@njit(cache=True, inline="always")
def binary_loop(margin, step, signed, y, importance, indptr, indices, values, state, params,
                margins_out):
    """Predict-then-update over one chunk, y = +1/-1 (NaN: unlabeled); returns (updates, index
    of a bad example or -1). ``signed`` (a constant of the entry point): the step receives the
    signed margin y mu.x (classification), else mu.x itself (``--loss squared``, y real)."""
    updates = 0
    for i in range(len(y)):
        start, end = indptr[i], indptr[i + 1]
        m, v = margin(state, indices, values, start, end, row_ahead(indptr, i))
        margins_out[i] = m
        if not finite(m):
            return updates, i
        if np.isnan(y[i]) or importance[i] <= 0.0:
            continue
        updated, ok = step(state, params, indices, values, start, end, y[i] * m if signed else m,
                           v, y[i], importance[i])
        updates += updated
        if not ok:
            return updates, i
    return updates, -1


@njit
def read_class_scores(scores, state, layout, indptr, indices, values, rows, at, read_scores, i,
                      r):
    """joint_loop's reads before row i (rows[r] onwards while at[r] is i): every class's score
    into their rows of read_scores, by ``scores``; returns the next read. A call, not inlined:
    a second copy of the family's class scores in every joint kernel took a quarter of its
    compile time (benchmarks/README.md, "Design measurements"), for the few rows the
    calibration's sample reads."""
    while r < len(rows) and at[r] == i:
        scores(state, layout, read_scores.shape[1], indices, values, indptr[rows[r]],
               indptr[rows[r] + 1], read_scores[r])
        r += 1
    return r


@njit(cache=True, inline="always")
def joint_loop(scores, margin, step, cls, importance, indptr, indices, values, state, params,
               layout, known, predicted_out, work):
    """Joint multiclass (multiclass.py): ``scores`` fills the class scores, then the binary step
    on Delta with y = +1; returns (updates, index of a bad example or -1, known). Before row
    i, every class's score of the rows read there (joint_workspace's reads: rows[r] before row
    at[r]) into their row of read_scores, by ``scores`` (Learner.class_scores' rule)."""
    updates = 0
    rows, at, read_scores = work[4], work[5], work[6]
    r = 0
    for i in range(len(cls)):
        if r < len(rows) and at[r] == i:
            r = read_class_scores(scores, state, layout, indptr, indices, values, rows, at,
                                  read_scores, i, r)
        start, end = indptr[i], indptr[i + 1]
        prefetch_state_blocks(state, layout, known, indptr, indices, i, work[3])
        scores(state, layout, visible_classes(known, cls[i]), indices, values, start, end,
               work[0])
        predicted_out[i], known, n = joint_prepare(work[0], known, cls, importance, indices,
                                                   values, start, end, layout, i, work)
        if n < 0:
            return updates, i, known
        if n == 0:
            continue
        m, v = margin(state, work[1], work[2], 0, n, NO_ROW)
        if not finite(m):
            return updates, i, known
        updated, ok = step(state, params, work[1], work[2], 0, n, m, v, 1.0, importance[i])
        updates += updated
        if not ok:
            return updates, i, known
    return updates, -1, known


def run_rules(margin, step, regression_step, binary, regression, joint, args, scores=None,
              bank=None):
    """The body of an entry point (module docstring): the loop of the task whose argument is
    given, with the family's rules, over one chunk. args = (importance, indptr, indices, values,
    state, params); binary or regression = (y, margins_out); joint = (cls, layout, known,
    predicted_out, work); ``scores``: the joint class scores (default mean_scores). Returns
    (updates, index of a bad example or -1, known; 0 for binary and regression); ``bank``
    (a family without a covariance, margin mean_margin): its bank's loop (kernels/bank.py),
    which returns the number of live members left.

    numba compiles it (the overload below) inside an entry point; Python never runs it."""
    raise TypeError("run_rules is the body of a numba entry point (learners/kernels/loops.py)")


def run_planned_rules(plan, regression_plan, variance, kept, rule_of, binary, regression, joint,
                      args, bank):
    """The body of a diagonal Gaussian family's entry point: run_rules with the steps made of
    its rules (covariance.planned_step: ``plan``, ``regression_plan`` or None, ``variance``,
    ``rule_of``) and the margin diag_margin; or, ``bank`` given, its bank's loop over one chunk
    (kernels/bank.py; ``kept`` the numbers of its step that changes nothing), which returns the
    number of live members left. numba compiles it (the overload below)."""
    raise TypeError("run_planned_rules is the body of a numba entry point "
                    "(learners/kernels/loops.py)")


def _given(argument_type):
    """Whether an argument of the call being typed was given (not omitted, not None; an omitted
    argument of run_rules itself comes as Python's None)."""
    return argument_type is not None and not isinstance(argument_type,
                                                         (types.NoneType, types.Omitted))


def _rule(argument_type):
    """The rule (an njit dispatcher) an argument of the call being typed names, or None."""
    return argument_type.dispatcher if _given(argument_type) else None


def task_loop(margin, step, regression_step, scores, binary, regression, joint):
    """The loop of the task whose argument is given, with the rules (njit dispatchers), as an
    inline function of (binary, regression, joint, args) that calls them as the functions they
    are, closed over, not through its arguments: numba inlines an ``inline="always"`` function
    named so (as in a loop written out in the entry point), where a call through an argument is
    a call (pa2's binary kernel was slower)."""
    if _given(joint):
        @njit(inline="always")
        def run_joint_task(binary, regression, joint, args):
            return run_joint(scores, margin, step, joint, args)
        return run_joint_task
    if _given(regression):
        if regression_step is None:
            raise TypingError("this family has no squared-loss step (its LearnerSpec declares "
                              "no regression, and Learner.learn_regression refuses it)")

        @njit(inline="always")
        def run_regression_task(binary, regression, joint, args):
            return run_binary(margin, regression_step, False, regression, args)
        return run_regression_task

    @njit(inline="always")
    def run_binary_task(binary, regression, joint, args):
        return run_binary(margin, step, True, binary, args)
    return run_binary_task


@overload(run_rules, inline="always")
def _run_rules_of_task(margin, step, regression_step, binary, regression, joint, args,
                       scores=None, bank=None):
    """The implementation of run_rules for the task given (numba calls it with the argument
    types when it types an entry point): bank.mean_bank_kernel's call, or task_loop's."""
    if _given(bank):
        if margin.dispatcher is not mean_margin:
            raise TypingError("run_rules runs the bank of a family whose margin is mean_margin")
        run_bank = mean_bank_kernel(step.dispatcher)

        def run_bank_task(margin, step, regression_step, binary, regression, joint, args,
                          scores=None, bank=None):
            return run_bank(bank)
        return run_bank_task
    run = task_loop(margin.dispatcher, step.dispatcher, _rule(regression_step),
                    _rule(scores) or mean_scores, binary, regression, joint)

    def run_task(margin, step, regression_step, binary, regression, joint, args, scores=None,
                 bank=None):
        return run(binary, regression, joint, args)
    return run_task


@overload(run_planned_rules, inline="always")
def _run_planned_rules_of_task(plan, regression_plan, variance, kept, rule_of, binary,
                               regression, joint, args, bank):
    """The implementation of run_planned_rules for the task given: bank.diag_bank_kernel's
    call, or task_loop's with the steps of the family's plans (covariance.planned_rule)."""
    plan_rule, variance_rule, rule_rule = plan.dispatcher, variance.dispatcher, rule_of.dispatcher
    if _given(bank):
        run_bank = diag_bank_kernel(plan_rule, rule_rule, variance_rule)

        def run_bank_task(plan, regression_plan, variance, kept, rule_of, binary, regression,
                          joint, args, bank):
            return run_bank(kept, bank)
        return run_bank_task
    regression_step = _rule(regression_plan)
    if regression_step is not None:
        regression_step = planned_rule(regression_step, rule_rule, variance_rule)
    run = task_loop(diag_margin, planned_rule(plan_rule, rule_rule, variance_rule),
                    regression_step, mean_scores, binary, regression, joint)

    def run_task(plan, regression_plan, variance, kept, rule_of, binary, regression, joint, args,
                 bank):
        return run(binary, regression, joint, args)
    return run_task


@njit(cache=True, inline="always")
def run_binary(margin, step, signed, labels, args):
    """The binary (``signed``) or regression loop over one chunk; labels = (y, margins_out).
    Returns (updates, index of a bad example or -1, 0)."""
    importance, indptr, indices, values, state, params = args
    y, margins_out = labels
    updates, bad = binary_loop(margin, step, signed, y, importance, indptr, indices, values,
                               state, params, margins_out)
    return updates, bad, 0


@njit(cache=True, inline="always")
def run_joint(scores, margin, step, joint, args):
    """The joint loop over one chunk; joint = (cls, layout, known, predicted_out, work). Returns
    (updates, index of a bad example or -1, known)."""
    importance, indptr, indices, values, state, params = args
    cls, layout, known, predicted_out, work = joint
    return joint_loop(scores, margin, step, cls, importance, indptr, indices, values, state,
                      params, layout, known, predicted_out, work)
