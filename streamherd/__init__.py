"""streamherd: online linear classifiers (CW, AROW, NHERD and their ancestors) over streamed text lines."""

__version__ = "0.1.0"
