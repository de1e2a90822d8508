"""What is built over any learner: one-versus-all multiclass (ova.py) and class probabilities
of the Gaussian models (proba.py)."""
