"""The model: ``OnlineModel`` (online.py), the one object every face holds, and its file
(container.py: the ``.npz`` members, checked whole on loading, written atomically)."""
from streamherd import numba_runtime
from streamherd.herding import KIND as HERDING_KIND
from streamherd.model.container import (FORMAT_VERSION, MODEL_MARKER, initial_values,
                                        load_model, model_meta, open_model, require_arrays,
                                        save_model)
from streamherd.model.herding import HerdingModel
from streamherd.model.online import ModelFlags, OnlineModel, Step, UpdateFailed

# every process holding a model (each face: the commands, the scikit-learn and river
# estimators, dist-train's workers, the experiment's runs) saves its kernels into numba's cache
# under the cache's lock, as the commands do (numba_runtime.lock_cache_saves): two Python
# processes compiling at once could otherwise file one signature's code under another's
numba_runtime.lock_cache_saves()


def for_predicting(path, skip_bad=False):
    """The model saved at ``path``, whatever its kind, as ``predict`` holds it: an
    OnlineModel, or a conditional herding model (model/herding.py)."""
    if model_meta(path).get("kind") == HERDING_KIND:
        return HerdingModel(path)
    return OnlineModel.from_file(path, skip_bad)

__all__ = ["FORMAT_VERSION", "HERDING_KIND", "MODEL_MARKER", "initial_values", "load_model",
           "model_meta", "open_model", "require_arrays", "save_model", "ModelFlags",
           "OnlineModel", "HerdingModel", "Step", "UpdateFailed", "for_predicting"]
