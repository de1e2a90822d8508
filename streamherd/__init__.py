"""streamherd: online linear classifiers (CW, AROW, NHERD and their ancestors) over streamed text
lines.

For Python: ``load_svmlight`` / ``load_vw`` read data files into scipy matrices (loading.py);
streamherd.sklearn holds the scikit-learn estimators. Both import numba only when called.
"""

__version__ = "0.1.0"

__all__ = ["load_svmlight", "load_vw"]  # noqa: F822


def __getattr__(name):
    # imported on first use: ``python -m streamherd`` (the CLI) imports this package and must
    # not pay for scipy or numba
    if name in ("load_svmlight", "load_vw"):
        from streamherd import loading

        return getattr(loading, name)
    raise AttributeError(f"module 'streamherd' has no attribute {name!r}")
