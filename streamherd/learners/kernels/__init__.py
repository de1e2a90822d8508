"""What every learner's kernels share, written once: the per-example loops (loops.py), the
sparse-row operations (sparse.py), the covariance arithmetic (covariance.py), the joint
multiclass construction (multiclass.py) and the software prefetch (prefetch.py)."""
