"""numba as a streamherd command uses it: its runtime functions cached as object code like
streamherd's own kernels, and cached kernels loaded with what running them needs, no more.

At every start-up numba builds its runtime's reference-counting functions (NRT_incref,
NRT_decref, ...) as LLVM IR and runs LLVM's optimizer and code generator on them, even when
every kernel then comes from the cache, paging in LLVM code that nothing else in a streamherd
run touches. ``install`` makes numba load that library from object code compiled once, as it
loads cached kernels. The cache file is keyed by the exact IR, the numba and llvmlite versions,
the optimisation level and the CPU numba compiles for; anything unexpected (another numba, an
unreadable or stale file, a read-only directory) falls back to numba's own compilation.

Loading a cached kernel, numba first "refreshes" its compiler: it imports and registers the
implementations of everything it can compile (typed containers, random generators, datetime,
linear algebra...), of use only to a compilation. streamherd's kernels use none of what that
registers at run time (no typed containers, no hash(), no numba random), so for them
``install`` loads the cache entry with the runtime initialised and nothing else, and refreshes
only when there is no entry (numba then compiles, and refreshes again itself).
Before that, at a function's first call, numba runs its extensions' entry points
("numba_extensions"): it reads the entry points of every installed distribution, so that an
extension's types are known before the arguments are typed. streamherd's kernels take arrays,
numbers and tuples of them, and their cached code is what numba compiled: for them the
entry points are run by the refresh of a cache miss instead (numba runs them in every
refresh), before anything is compiled.
Typing an array argument, numba checks that it is no masked array, importing numpy.ma for
that; an array of exactly numpy's ndarray type is none, so streamherd types it as numba does
without that import (any other array, or once numpy.ma is imported: numba's own typing).
Functions from other modules load as numba always loads them.

A cached kernel's entry holds its object code and its LLVM module as bitcode, which numba
parses at every load although only a compilation that links the kernel into new code reads
it; the load itself needs only the names of the symbols the module defines (numba's execution
engine tracks them). ``install`` keeps the bitcode unparsed until it is linked, and takes the
names from a small file beside the runtime's cache file (symbols-*.nrt, shipped with it), keyed
by the bitcode's digest and written when the entry is saved, or else the first time that
bitcode is parsed (no file, or a damaged one: parsed, as numba does).
"""
import contextlib
import hashlib
import os
import pickle
import sys
import tempfile

_state = {"loaded_from_cache": False}


def install():
    """Before numba's target loads: its runtime through the cache, streamherd's kernels loaded
    without the compiler's registries or the extensions' entry points, arrays typed without
    numpy.ma, cache folders checked once (check_cache_folders_once), and every save into
    numba's cache locked."""
    check_cache_folders_once()
    _install_runtime_cache()
    _install_light_kernel_loading()
    _install_linking_module_on_demand()
    _install_light_first_call()
    _install_array_typing()
    lock_cache_saves()


def check_cache_folders_once():
    """numba checks that a cached function's cache folder is writable by creating and deleting
    a file in it, for every function as it is defined (every @njit(cache=True) of every module
    imported) and before each save; after this, a folder found writable once is taken as such
    for as long as it exists (a save into a folder that became read-only fails as it would
    have: the check raised the same OSError). Called before the modules that define kernels
    are imported."""
    from numba.core import caching

    locator_class = getattr(caching, "_CacheLocator", None)
    check = getattr(locator_class, "ensure_cache_path", None)
    if check is None or getattr(check, "streamherd_once", False):
        return
    writable = set()

    def ensure_cache_path(locator):
        path = locator.get_cache_path()
        if path in writable and os.path.isdir(path):
            return
        check(locator)
        writable.add(path)

    ensure_cache_path.streamherd_once = True
    locator_class.ensure_cache_path = ensure_cache_path


def start_target():
    """Create numba's CPU target and initialise its runtime (through the cache once install
    ran): what loading streamherd's first kernel would do first. Its compiler registries are
    left to the first cache miss (light_load_overload)."""
    from numba.core.registry import cpu_target
    from numba.core.runtime import rtsys

    rtsys.initialize(cpu_target.target_context)


def lock_cache_saves():
    """numba saves a cache entry by reading its function's index file, adding the entry (and
    naming its data file after the entries it read), writing the index back, then the data:
    two processes saving entries of one function at once (two commands right after an install,
    dist-train's workers, the precompile's processes) would lose an entry, or write two
    entries' code into one data file, so that the index names one signature's file for the
    other's code. Each save holds an exclusive lock on the cache folder itself (flock on the
    directory: no lock file of its own). Where there is no flock, or the folder cannot be
    opened, the save goes on as numba's."""
    from numba.core import caching

    try:
        import fcntl
    except ImportError:   # not on Windows
        return
    save = getattr(caching.IndexDataCacheFile, "save", None)
    if save is None or getattr(save, "streamherd_locked", False):
        return

    def locked_save(cache_file, key, data):
        try:
            folder = os.open(cache_file._cache_path, os.O_RDONLY)
        except (AttributeError, OSError):
            return save(cache_file, key, data)
        try:
            fcntl.flock(folder, fcntl.LOCK_EX)
            return save(cache_file, key, data)
        finally:
            os.close(folder)   # (the lock goes with it)

    locked_save.streamherd_locked = True
    caching.IndexDataCacheFile.save = locked_save


def cache_saves_locked():
    """Whether saves into numba's cache hold the lock (lock_cache_saves took effect)."""
    from numba.core import caching

    return getattr(getattr(caching.IndexDataCacheFile, "save", None), "streamherd_locked", False)


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


def _streamherds(function):
    """Whether ``function`` (a jitted function's Python function) is one of streamherd's."""
    return (getattr(function, "__module__", None) or "").startswith("streamherd.")


def _install_light_first_call():
    from numba.core import dispatcher

    hook = getattr(dispatcher.Dispatcher, "_compilation_chain_init_hook", None)
    if hook is None or getattr(hook, "streamherd_light", False):
        return

    def light_first_call(jitted):
        if not _streamherds(getattr(jitted, "py_func", None)):
            hook(jitted)

    light_first_call.streamherd_light = True
    dispatcher.Dispatcher._compilation_chain_init_hook = light_first_call


def _install_array_typing():
    import numpy as np
    from numba.core import types
    from numba.core.typing import typeof as numba_typeof
    from numba.np import numpy_support

    registry = getattr(numba_typeof, "typeof_impl", None)
    if registry is None or not hasattr(numpy_support, "map_layout"):
        return
    numbas = registry.dispatch(np.ndarray)
    if getattr(numbas, "streamherd_light", False):
        return

    def typeof_ndarray(val, c):
        if type(val) is not np.ndarray or "numpy.ma" in sys.modules:
            return numbas(val, c)
        try:
            dtype = numpy_support.from_dtype(val.dtype)
        except Exception:   # an unsupported dtype: numba's own error
            return numbas(val, c)
        return types.Array(dtype, val.ndim, numpy_support.map_layout(val),
                           readonly=not val.flags.writeable)

    typeof_ndarray.streamherd_light = True
    registry.register(np.ndarray)(typeof_ndarray)


def _install_light_kernel_loading():
    from numba.core import caching

    load_overload = getattr(caching.Cache, "load_overload", None)
    if load_overload is None or getattr(load_overload, "streamherd_light", False):
        return
    if not hasattr(caching.Cache, "_load_overload"):
        return

    def light_load_overload(cache, sig, target_context):
        if not _streamherds(getattr(cache, "_py_func", None)):
            return load_overload(cache, sig, target_context)
        from numba.core.runtime import rtsys

        # The one thing cached object code links to beyond numba's C helpers (which the
        # target context registered when it was created): the runtime's functions.
        rtsys.initialize(target_context)
        loaded = cache._load_overload(sig, target_context)
        if loaded is None:   # a miss: as numba, ready to compile
            # numba's array functions import scipy's BLAS only to learn whether it is there,
            # for np.correlate and np.convolve, which no streamherd kernel calls; jitted code
            # that needs BLAS (np.dot) still gets it, as numba imports it when compiling such
            # code
            with hidden_modules("scipy.linalg.cython_blas"):
                target_context.refresh()
        return loaded

    light_load_overload.streamherd_light = True
    caching.Cache.load_overload = light_load_overload


def _install_linking_module_on_demand():
    from numba.core import codegen

    library_class = getattr(codegen, "JITCodeLibrary", None)
    unserialize = getattr(library_class, "_unserialize", None)
    for_linking = getattr(library_class, "_get_module_for_linking", None)
    numbas_serialize = getattr(library_class, "serialize_using_object_code", None)
    if unserialize is None or for_linking is None or numbas_serialize is None or \
            getattr(for_linking, "streamherd_on_demand", False):
        return
    # what unserialize_on_demand does in numba's place (numba internals: another numba may
    # lack them, and then loads as it always does)
    if not all(hasattr(library_class, name) for name in (
            "enable_object_caching", "_set_compiled_object", "_finalize_final_module")) or \
            not hasattr(getattr(codegen, "JitEngine", None), "_load_defined_symbols"):
        return
    numbas_unserialize = unserialize.__func__

    def unserialize_on_demand(cls, code_generator, state):
        name, kind, data = state
        digest = defined = None
        if kind == "object" and issubclass(cls, library_class):
            digest = hashlib.sha256(data[1]).hexdigest()
            defined = _read_defined_symbols(digest)
        if defined is None:
            library = numbas_unserialize(cls, code_generator, state)
            if digest is not None and library._shared_module is not None:
                _write_defined_symbols(digest, library._shared_module)
            return library
        object_code, linking_bitcode = data
        library = code_generator.create_library(name)
        library.enable_object_caching()
        library._set_compiled_object(object_code)
        library.streamherd_linking_bitcode = linking_bitcode
        library._finalize_final_module()
        code_generator._engine._defined_symbols |= defined
        return library

    def module_for_linking(library):
        bitcode = getattr(library, "streamherd_linking_bitcode", None)
        if bitcode is not None and library._shared_module is None:
            import llvmlite.binding as llvm

            library._shared_module = llvm.parse_bitcode(bitcode)
        library.streamherd_linking_bitcode = None
        return for_linking(library)

    def serialize_with_symbols(library):
        state = numbas_serialize(library)   # (also to pickle a compiled function: written once)
        _write_defined_symbols(hashlib.sha256(state[2][1]).hexdigest(),
                               library._get_module_for_linking(), again=False)
        return state

    module_for_linking.streamherd_on_demand = True
    library_class._unserialize = classmethod(unserialize_on_demand)
    library_class._get_module_for_linking = module_for_linking
    library_class.serialize_using_object_code = serialize_with_symbols


def _defined_symbols(module):
    """The names of what an LLVM module defines, as numba's execution engine collects them."""
    return {value.name for values in (module.functions, module.global_variables)
            for value in values if not value.is_declaration}


def _symbols_path(digest):
    try:
        folder = _cache_folder()
    except Exception:   # no folder to keep the names in: the module is parsed, as numba does
        return None
    return None if folder is None else os.path.join(folder, f"symbols-{digest[:32]}.nrt")


def _read_defined_symbols(digest):
    path = _symbols_path(digest)
    names = None if path is None else _read(path, digest)
    return names if isinstance(names, frozenset) else None


def _write_defined_symbols(digest, module, again=True):
    """The names ``module`` defines into its file; ``again``: also over an existing file."""
    path = _symbols_path(digest)
    if path is not None and (again or not os.path.exists(path)):
        _write(path, digest, frozenset(_defined_symbols(module)))


def _install_runtime_cache():
    from numba.core.runtime import nrtdynmod

    compile_uncached = getattr(nrtdynmod, "compile_nrt_functions", None)
    if compile_uncached is None or getattr(compile_uncached, "streamherd_cached", False):
        return
    if not hasattr(nrtdynmod, "create_nrt_module"):
        return

    def compile_nrt_functions(ctx):
        try:
            return _cached_library(ctx, nrtdynmod.create_nrt_module)
        except Exception:  # numba internals changed: its own path is always right
            return compile_uncached(ctx)

    compile_nrt_functions.streamherd_cached = True
    nrtdynmod.compile_nrt_functions = compile_nrt_functions


def loaded_from_cache():
    """Whether this process took numba's runtime library from the cache file."""
    return _state["loaded_from_cache"]


def _cached_library(ctx, create_nrt_module):
    import llvmlite
    import numba
    from numba.core import config

    ir_module, library = create_nrt_module(ctx)
    codegen = ctx.codegen()
    key = hashlib.sha256(repr((numba.__version__, llvmlite.__version__, sys.version_info[:2],
                               config.OPT, codegen.magic_tuple(), str(ir_module))
                              ).encode()).hexdigest()
    path = _cache_path(key)
    if path is not None:
        state = _read(path, key)
        if state is not None:
            cached = codegen.unserialize_library(state)
            _state["loaded_from_cache"] = True
            return cached
    library.enable_object_caching()
    library.add_ir_module(ir_module)
    library.finalize()
    # Object code holding addresses of this process could not be reused (numba's own cache
    # refuses such functions too).
    if path is not None and not library.has_dynamic_globals:
        _write(path, key, library.serialize_using_object_code())
    return library


def _cache_path(key):
    folder = _cache_folder()
    return None if folder is None else os.path.join(folder, f"numba_runtime-{key[:16]}.nrt")


def _cache_folder():
    """Beside streamherd's kernel cache files: the directory numba's locators choose for this
    module (NUMBA_CACHE_DIR, else __pycache__ if writable, else the user-wide cache)."""
    if "folder" in _state:
        return _state["folder"]
    from numba.core import caching

    folder = None
    for locator_class in caching.CacheImpl._locator_classes:
        locator = locator_class.from_function(install, __file__)
        if locator is not None:
            locator.ensure_cache_path()
            folder = locator.get_cache_path()
            break
    _state["folder"] = folder
    return folder


def _read(path, key):
    try:
        with open(path, "rb") as f:
            stored_key, state = pickle.load(f)
    except Exception:  # missing, or not a file this module wrote: compile and rewrite it
        return None
    return state if stored_key == key else None


def _write(path, key, state):
    """Atomically (another process may be reading or writing the same file)."""
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    except OSError:  # read-only: every run compiles, as numba does
        return
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump((key, state), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
