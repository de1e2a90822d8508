"""How a command that runs kernels starts: numba imported without what streamherd never uses,
its compiler target loaded while the cycle collector is off, then every start-up object frozen
out of the collector's sight.
"""
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
    """numba's import also imports pyyaml, to read a .numba_config.yaml in the current folder;
    scipy, only to check its version; and colorama, to colour its error messages, which it does
    only with a colour scheme chosen (NUMBA_COLOR_SCHEME, or such a file). They are hidden while
    numba imports (pyyaml and colorama only when there is no such file, colorama only when no
    scheme is chosen); what needs scipy later imports it."""
    if "numba" in sys.modules:
        return
    from streamherd import numba_runtime

    config_file = os.path.exists(".numba_config.yaml")
    colours = config_file or os.environ.get("NUMBA_COLOR_SCHEME", "no_color") != "no_color"
    with numba_runtime.hidden_modules("scipy", *(() if config_file else ("yaml",)),
                                      *(() if colours else ("colorama",))):
        import numba  # noqa: F401
    numba_runtime.check_cache_folders_once()   # before the kernels' modules define them


def end():
    """Create numba's compiler target and initialise its runtime while the collector is off,
    then move everything alive to the permanent generation (gc.freeze: never walked again) and
    turn the collector on.

    numba_runtime.install: numba's runtime functions come from an object-code cache instead of
    LLVM, and streamherd's cached kernels load without numba's compiler registries, its
    extensions' entry points or numpy.ma."""
    from streamherd import numba_runtime

    numba_runtime.install()
    numba_runtime.start_target()
    gc.freeze()
    gc.enable()


def imported(name):
    """The module ``name`` (one that runs kernels), imported the way start-up is fastest:
    numba first (import_numba), then the module, then end."""
    import_numba()
    module = importlib.import_module(name)
    end()
    return module
