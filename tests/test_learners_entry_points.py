"""The learners' entry points (learners/kernels/loops.py): one cached kernel per family and
covariance serves every task, each task compiled as a specialisation of its own (the arguments
of the other tasks omitted, so that its loop is compiled alone), and a learner whose LearnerSpec
declares no regression form refuses ``learn_regression`` before any kernel runs."""
import numpy as np
import pytest
from numba.core import types

from streamherd import learners

D = 8   # slots per class: tiny, for the full-covariance learners


def entry_point(name):
    """The entry point ``name`` runs, or None (a learner with kernels of its own)."""
    return learners.learner_class(name).entry_points.get(learners.spec(name).covariance)


KERNELS = sorted(name for name in learners.REGISTRY if entry_point(name))


def rows():
    indptr = np.array([0, 2, 4, 5], np.int64)
    indices = np.array([0, 1, 1, 2, 3], np.int32)
    return np.ones(3), indptr, indices, np.array([1.0, 0.5, 1.0, -0.5, 2.0])


def tasks_given(signature):
    """The tasks whose arguments a specialisation of an entry point was compiled for (a bank's,
    ``bank=``, after ``args``: of an entry point that serves a -C auto bank)."""
    return [task for task, arg in zip(("binary", "regression", "joint", None, "bank"), signature)
            if task is not None and not isinstance(arg, types.Omitted)]


@pytest.mark.parametrize("name", KERNELS)
def test_every_task_is_a_specialisation_of_the_one_kernel(name):
    importance, indptr, indices, values = rows()
    learner = learners.create(name, D)
    learner.learn(np.array([1.0, -1.0, 1.0]), importance, indptr, indices, values, np.empty(3))
    run = {"binary", "joint"}
    if learners.spec(name).regression is not None:
        learner = learners.create(name, D, task="regression")
        learner.learn_regression(np.array([0.5, -1.0, 2.0]), importance, indptr, indices, values,
                                 np.empty(3))
        run.add("regression")
    learner = learners.create(name, D, blocks=2)
    learner.learn_joint(np.array([0, 1, 0], np.int64), importance, indptr, indices, values, 0,
                        np.empty(3, np.int64))
    given = [tasks_given(signature) for signature in entry_point(name).signatures]
    assert all(len(tasks) == 1 for tasks in given), given
    assert {tasks[0] for tasks in given} - {"bank"} == run   # (a bank: other tests' kernels)


@pytest.mark.parametrize("name", [name for name in sorted(learners.REGISTRY)
                                  if learners.spec(name).regression is None])
def test_a_learner_without_a_regression_form_refuses_it(name):
    importance, indptr, indices, values = rows()
    learner = learners.create(name, D)
    with pytest.raises(TypeError, match="no squared-loss update"):
        learner.learn_regression(np.array([0.5, -1.0, 2.0]), importance, indptr, indices, values,
                                 np.empty(3))
    assert not learner.mean.any()


def test_numba_still_honours_the_private_nrt_option():
    """The entry points turn numba's reference counting off with its private ``_nrt`` option
    (numba is pinned below 0.69 for it): this fails when numba stops honouring it. A function
    passing its arrays to a call that may raise counts references to them; with ``_nrt=False``
    it does not."""
    from numba import njit

    @njit
    def doubled(a, i):
        if a[i] < 0.0:
            raise ValueError("negative")
        return 2.0 * a[i]

    def body(a, b):
        total = 0.0
        for i in range(len(a)):
            total += doubled(a, i) if b[i] > 0.5 else doubled(b, i)
        return total

    counted, uncounted = njit(body), njit(_nrt=False)(body)
    for kernel in (counted, uncounted):
        assert kernel(np.ones(4), np.ones(4)) == 8.0

    def increfs(kernel):
        return sum(ir.count("call void @NRT_incref") for ir in kernel.inspect_llvm().values())

    assert increfs(counted) > 0
    assert increfs(uncounted) == 0
    for name in KERNELS:
        assert entry_point(name).targetoptions["_nrt"] is False, name


INLINED = r"""
import re, sys
import numpy as np
from streamherd import learners

name, blocks = sys.argv[1], int(sys.argv[2])
learner = learners.create(name, 8, blocks=blocks)
indptr = np.array([0, 2, 4, 5], np.int64)
indices = np.array([0, 1, 1, 2, 3], np.int32)
values, importance = np.array([1.0, 0.5, 1.0, -0.5, 2.0]), np.ones(3)
if blocks > 1:
    learner.learn_joint(np.array([0, 1, 0], np.int64), importance, indptr, indices, values, 0,
                        np.empty(3, np.int64))
else:
    learner.learn(np.array([1.0, -1.0, 1.0]), importance, indptr, indices, values, np.empty(3))
for llvm in learner.entry_point.inspect_llvm().values():
    print(" ".join(re.findall(r"^define .*?@(\S+)\(", llvm, re.MULTILINE)))
"""


@pytest.mark.parametrize("name, blocks", [("pa2", 1), ("nherd-p", 1), ("arow-p", 2)])
def test_the_rules_are_inlined_into_the_entry_point(name, blocks, tmp_path):
    """kernels/loops.run_rules calls the family's rules as the functions they are, so numba
    inlines them: the compiled entry point defines itself and its Python wrapper, no function
    per rule (a rule called through an argument was a call per example, pa2 10% slower); a
    joint kernel one more, its class scores for the calibration's reads
    (loops.read_class_scores: a call, for a few rows). Compiled afresh in a process of its own
    (numba does not show the code of a cached kernel)."""
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", INLINED, name, str(blocks)], text=True,
                          capture_output=True, env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)))
    assert proc.returncode == 0, proc.stderr
    defined = proc.stdout.split()
    # but the entry point and its wrapper, both named by the family's module
    others = [name for name in defined if "8learners10algorithms" not in name]
    assert len(defined) - len(others) == 2, defined
    assert all("scores" in name for name in others) and len(others) == (blocks > 1), others
