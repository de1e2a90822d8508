"""One module per paper: its equations (with the paper's numbers) in the docstring, its step
rules, one thin cached entry point per (task, covariance) over kernels/loops.py, and its classes
(a registry line in learners/__init__.py names one per ``--algo`` variant)."""
