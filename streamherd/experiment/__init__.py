"""``streamherd experiment``: the seed papers' tournament (Crammer & Lee 2010, Fig. 4 and 5;
Crammer, Kulesza & Dredze 2009, Table 1 and Fig. 2) over datasets, algorithms, hyperparameters,
label-noise levels and folds.

Modules: ``data`` (files into in-memory chunks, tasks), ``splits`` (folds, validation split, label
noise, pass orders), ``adapter`` (every call into the learners), ``runner`` (the grid, in worker
processes), ``stats`` (mean ranks, win fractions, McNemar), ``report`` (CSV, terminal and
markdown tables) and ``plots`` (matplotlib, optional).
"""
