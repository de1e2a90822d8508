"""How a command that runs kernels starts: numba imported without what streamherd never uses,
its compiler target loaded while the cycle collector is off, then every start-up object frozen
out of the collector's sight.
"""
import contextlib
import gc
import importlib
import os
import sys


def begin():
    """Start-up (imports, and numba loading its compiler target) creates about a million
    long-lived objects and little garbage: the cycle collector would walk them again and again.
    And streamherd does no BLAS work (its kernels are numba loops), so the OpenBLAS thread pools
    that numpy and scipy start would only take CPU from the parser threads (unless the user
    asks for them)."""
    gc.disable()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def import_numba():
    """numba's import also imports pyyaml, to read a .numba_config.yaml in the current folder,
    and scipy, only to check its version. Both are hidden while numba imports (pyyaml only when
    there is no such file); what needs scipy later imports it."""
    if "numba" in sys.modules:
        return
    config_file = os.path.exists(".numba_config.yaml")
    with hidden_modules("scipy", *(() if config_file else ("yaml",))):
        import numba  # noqa: F401


@contextlib.contextmanager
def hidden_modules(*names):
    """While inside, importing one of ``names`` that is not imported yet fails at once (None
    in sys.modules makes "import" raise ImportError); afterwards it imports normally."""
    hidden = [name for name in names if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None
    try:
        yield
    finally:
        for name in hidden:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


def end():
    """Load numba's compiler target while the collector is off, then move everything alive
    to the permanent generation (gc.freeze: never walked again) and turn the collector on.

    While the target loads, numba imports scipy.linalg.cython_blas only to learn whether BLAS
    is there (numba.np.arraymath), for np.correlate and np.convolve, which no streamherd kernel
    calls. Hiding the module for that moment skips the import; jitted code that needs BLAS
    (np.dot) still gets it, as numba imports it again when compiling such code.
    numba_runtime.install: numba's runtime functions come from an object-code cache instead of
    LLVM, and streamherd's cached kernels load without numba's compiler registries."""
    import numpy as np

    from streamherd import numba_runtime
    from streamherd.io.block import count_newlines

    numba_runtime.install()

    with hidden_modules("scipy.linalg.cython_blas"):
        count_newlines(np.zeros(1, np.uint8), 1)
    gc.freeze()
    gc.enable()


def imported(name):
    """The module ``name`` (one that runs kernels), imported the way start-up is fastest:
    numba first (import_numba), then the module, then end."""
    import_numba()
    module = importlib.import_module(name)
    end()
    return module
