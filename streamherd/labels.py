"""Binary labels: any two label values, mapped to y = +1 (label > 0) and -1 (otherwise)."""
import numpy as np

from streamherd.errors import StreamherdError


def label_text(value):
    """How a numeric label is printed: integral values without a decimal point."""
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class BinaryLabels:
    """Discovers the two label values of a stream and converts labels to +1/-1.

    ``1/0`` and ``+1/-1`` both work. A third distinct value, or two values on the same side
    of zero, is an error that names its line. Predictions are printed with the data's own
    values (a model trained on 1/0 predicts 1/0).
    """

    def __init__(self, negative=None, positive=None):
        self.negative = negative
        self.positive = positive

    @classmethod
    def from_meta(cls, meta):
        labels = meta.get("labels") or {}
        return cls(labels.get("negative"), labels.get("positive"))

    def to_meta(self):
        return {"negative": self.negative, "positive": self.positive}

    def observe(self, chunk):
        """y in {+1, -1} for the chunk (NaN where a line has no label); learns the label values."""
        labels = chunk.labels
        labeled = labels[~np.isnan(labels)]
        if labeled.size:
            for value in np.unique(labeled):
                self._add(float(value), chunk)
        return np.where(labels > 0, 1.0, np.where(np.isnan(labels), np.nan, -1.0))

    def _add(self, value, chunk):
        side = "positive" if value > 0 else "negative"
        known = getattr(self, side)
        if known is None:
            setattr(self, side, value)
            return
        if known == value:
            return
        line = int(chunk.line_numbers[np.argmax(chunk.labels == value)])
        where = f"{chunk.source}:{line}: label {label_text(value)}"
        if self.negative is None or self.positive is None:
            raise StreamherdError(
                f"{where} is {side} like the earlier label {label_text(known)}; binary labels are "
                f"+1/-1 or 1/0 (labels > 0 are the positive class): relabel the data")
        raise StreamherdError(
            f"{where} is a third label value after {label_text(self.negative)} and "
            f"{label_text(self.positive)}; binary learners take two labels (+1/-1 or 1/0)")

    def text(self, positive):
        """The label text for the positive (True) or negative (False) class."""
        if positive:
            return label_text(self.positive if self.positive is not None else 1.0)
        if self.negative is not None:
            return label_text(self.negative)
        return "-1"
