"""The figures (matplotlib, the optional ``[plot]`` extra), one panel per noise level:
learning curves as AROW Fig. 2(b), the accuracy scatter of two algorithms as NHERD Fig. 5, and
the win-fraction matrix as a heat map (NHERD Fig. 4 drawn as a matrix)."""
import os

import numpy as np

from streamherd.errors import StreamherdError
from streamherd.experiment import stats
from streamherd.outputs import replaced_on_success

PLOT_FORMATS = ("png", "svg")
MISSING = "plots skipped: matplotlib is not installed; pip install 'streamherd[plot]'"


def matplotlib_pyplot():
    """pyplot on the file-only Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _panels(plt, count, width=4.2, height=3.8):
    figure, axes = plt.subplots(1, count, figsize=(width * count, height), squeeze=False)
    return figure, axes[0]


def _save(plt, figure, folder, name, fmt, tight_layout=True):
    """Write the figure; without ``tight_layout`` (it mishandles a shared colour bar) the
    saved box is fitted to the drawing instead."""
    path = os.path.join(folder, f"{name}.{fmt}")
    if tight_layout:
        figure.tight_layout()
    try:
        with replaced_on_success(path, "wb", what="plot") as f:
            figure.savefig(f, format=fmt, dpi=110,
                           bbox_inches=None if tight_layout else "tight")
    except OSError as e:
        raise StreamherdError(f"cannot write {path}: {e.strerror or e}") from None
    finally:
        plt.close(figure)
    return os.path.basename(path)


def learning_curves(plt, results, task, noise_levels, folder, fmt):
    """Cumulative mistakes (against the clean labels) over the first pass of the final
    training of fold 0 of ``task``, per algorithm."""
    figure, axes = _panels(plt, len(noise_levels))
    for axis, noise in zip(axes, noise_levels):
        for result in results:
            job = result.job
            if (job.task.name == task and job.fold == 0 and job.noise == noise
                    and result.curve is not None):
                examples, mistakes = result.curve
                axis.plot(examples, mistakes, label=job.algo)
        axis.set_title(f"{task}, noise {noise:g}")
        axis.set_xlabel("training examples (first pass)")
        axis.set_ylabel("cumulative mistakes (clean labels)")
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    return _save(plt, figure, folder, "learning_curves", fmt)


def accuracy_scatter(plt, levels, tasks_by_name, algos, first, second, folder, fmt):
    """Test accuracy of ``first`` (y) against ``second`` (x) on every task; a marker above the
    diagonal is a task ``first`` wins. Colours: datasets."""
    i, j = algos.index(first), algos.index(second)
    datasets = sorted({tasks_by_name[name].dataset for name in levels[0].tasks})
    colours = plt.get_cmap("tab20")
    figure, axes = _panels(plt, len(levels))
    for axis, level in zip(axes, levels):
        accuracy = 1.0 - level.errors
        of_dataset = np.array([datasets.index(tasks_by_name[n].dataset) for n in level.tasks])
        for d, dataset in enumerate(datasets):
            mine = of_dataset == d
            axis.scatter(accuracy[mine, j], accuracy[mine, i], s=14, color=colours(d % 20),
                         label=dataset)
        low = np.nanmin(accuracy[:, [i, j]]) if np.isfinite(accuracy[:, [i, j]]).any() else 0.0
        low = max(0.0, min(low, 0.98) - 0.02)
        axis.plot([low, 1], [low, 1], color="grey", linewidth=0.8)
        axis.set_xlim(low, 1.005)   # room for the markers of perfect tasks
        axis.set_ylim(low, 1.005)
        axis.set_xlabel(f"{second} accuracy")
        axis.set_ylabel(f"{first} accuracy")
        axis.set_title(f"noise {level.noise:g}")
    # panels laid out in the left part, the legend of datasets to their right
    figure.tight_layout(rect=(0, 0, 0.86, 1))
    handles, labels = axes[-1].get_legend_handles_labels()
    figure.legend(handles, labels, fontsize="x-small", loc="center left",
                  bbox_to_anchor=(0.86, 0.5))
    return _save(plt, figure, folder, f"scatter_{first}_vs_{second}", fmt, tight_layout=False)


def win_heatmaps(plt, levels, algos, folder, fmt):
    """W[row, column] per noise level, annotated."""
    figure, axes = _panels(plt, len(levels), width=0.55 * len(algos) + 2.4,
                           height=0.5 * len(algos) + 1.6)
    for axis, level in zip(axes, levels):
        wins = stats.win_fractions(level.errors)
        np.fill_diagonal(wins, np.nan)   # an algorithm against itself: left blank
        image = axis.imshow(wins, vmin=0, vmax=1, cmap="RdBu")
        axis.set_xticks(range(len(algos)), algos, rotation=60, ha="right", fontsize="small")
        axis.set_yticks(range(len(algos)), algos, fontsize="small")
        for a in range(len(algos)):
            for b in range(len(algos)):
                if a != b:
                    extreme = abs(wins[a, b] - 0.5) > 0.3   # dark cell: white text
                    axis.text(b, a, f"{wins[a, b]:.2f}", ha="center", va="center",
                              fontsize="x-small", color="white" if extreme else "black")
        axis.set_title(f"row beats column, noise {level.noise:g}", fontsize="small")
    figure.colorbar(image, ax=list(axes), shrink=0.7)
    return _save(plt, figure, folder, "win_fractions", fmt, tight_layout=False)


def make_plots(results, levels, tasks, algos, noise_levels, folder, fmt, curve_task, scatter):
    """Every figure; returns [(caption, file name)], or None when matplotlib is missing."""
    plt = matplotlib_pyplot()
    if plt is None:
        return None
    written = [(f"Cumulative mistakes on {curve_task} (AROW Fig. 2b)",
                learning_curves(plt, results, curve_task, noise_levels, folder, fmt))]
    if scatter is not None:
        first, second = scatter
        written.append((f"Test accuracy, {first} against {second} (NHERD Fig. 5)",
                        accuracy_scatter(plt, levels, {t.name: t for t in tasks}, algos,
                                         first, second, folder, fmt)))
    written.append(("Win fractions (NHERD Fig. 4)",
                    win_heatmaps(plt, levels, algos, folder, fmt)))
    return written
