"""The learners' update rules as plain dense numpy, one transcription per family, written from the
papers independently of streamherd's kernels. The binary tests (test_gaussian_learners,
test_first_order_learners, test_voted_perceptron), the joint and one-versus-all tests and the
regression tests (test_multiclass_learners) all run these.

Each family's rule is written once, as the update on a dense vector x with label +1: the binary
update with label y is the one on y x, and the joint one the one on Delta = f(x, y) - f(x, y')
(y' the best wrong class). The regression forms reuse the same steps with the residual in
place of the hinge loss.

- perceptron: Rosenblatt's update on a mistake (a margin <= 0), scaled by the importance; the
  averaged perceptron's running sum counts 1 per example learned from; the voted perceptron
  (Freund & Schapire 1999) keeps every snapshot v_i (each update makes one) with its count c_i,
  which grows by the importance of each example it survives, and the running sum of c_i v_i
- passive-aggressive, PA / PA-I / PA-II (Crammer et al. 2006): tau = l / |x|^2, min(C s, l / |x|^2),
  l / (|x|^2 + 1 / (2 C s)); the hinge loss, or the epsilon-insensitive loss in regression
- NHERD (Crammer & Lee 2010): mu += l / (v + 1/c) Sigma x, c = C s; Sigma shrinks by the full
  form or one of its diagonal approximations (-e exact, -p projected, -d drop)
- AROW (Crammer, Kulesza & Dredze 2009): beta = 1 / (v + r / s), mu += l beta Sigma x,
  Sigma -= beta Sigma x x' Sigma (-p: the diagonal of the inverse, -d: the diagonal); NAROW
  (Orabona & Crammer 2010) is AROW with r_t = v / (b v - 1), and no update where v <= 1/b
- CW (Crammer, Dredze & Pereira 2008) and SCW-I / SCW-II (Wang, Zhao & Hoi 2012): alpha, sqrt(u)
  (the cancellation-free form; ``check_textbook_u`` checks it against the textbook u, which
  cancellation spoils in long noisy runs), beta; the diagonal forms keep every variance
  >= 1e-12 a (cw.py's documented floor)
- the second-order perceptron (Cesa-Bianchi, Conconi & Gentile 2005): margin v' (aI + S + xx')^-1 x
  (the diagonal form: over the diagonal of aI + S + xx'), a mistake adds s xx' to S and s x to v
"""
import math

import numpy as np
from scipy.stats import norm

DEFAULTS = {"C": 1.0, "r": 1.0, "eta": 0.9, "a": 1.0, "b": 1.0, "epsilon": 0.0}
GAUSSIAN = ("nherd", "arow", "narow", "cw", "scw1", "scw2")
VARIANCE_FLOOR = 1e-12


def family_of(name):
    """nherd-p -> nherd, avg-perceptron -> avg, scw1-full -> scw1."""
    return name.split("-")[0]


class DenseLearner:
    """One learner over ``size`` dense slots: its mean (and covariance, or the second-order
    perceptron's S and v), its running sum for the averaged forms, and the count of updates."""

    def __init__(self, name, size, options=None, check_textbook_u=False):
        self.name = name
        self.check_textbook_u = check_textbook_u
        self.family = family_of(name)
        self.full = name.endswith("-full")
        self.o = {**DEFAULTS, **(options or {})}
        self.mu = np.zeros(size)
        if self.family == "sop":
            self.S = np.zeros((size, size))
            self.v = np.zeros(size)
        elif self.family in GAUSSIAN:
            a = self.o["a"]
            self.Sigma = a * np.eye(size) if self.full else np.full(size, a)
        self.history = np.zeros(size)
        self.seen = 0
        self.updates = 0
        if self.family == "voted":
            self.snapshots, self.counts = [self.mu], [0.0]

    # ------------------------------------------------------------------ predictions

    def sop_A(self):
        return self.o["a"] * np.eye(len(self.mu)) + self.S

    def margin(self, x):
        """The margin a run reports for x before learning it (sop: with x x' added to A; the
        averaged forms: their average)."""
        if self.family == "sop":
            if self.full:
                return self.v @ np.linalg.solve(self.sop_A() + np.outer(x, x), x)
            return np.sum(self.v * x / (np.diag(self.sop_A()) + x * x))
        if self.family in ("avg", "voted"):
            return (self.history / self.seen) @ x if self.seen else 0.0
        return self.mu @ x

    def scores(self, x_blocks, averaged=False):
        """Scores of the classes whose f(x, z) are the rows of x_blocks."""
        if self.family == "sop" and not self.full:
            diag = np.diag(self.sop_A())
            return np.array([np.sum(self.v * f / (diag + f * f)) for f in x_blocks])
        if self.family == "sop":
            w = np.linalg.solve(self.sop_A(), self.v)
            return x_blocks @ w
        if averaged:
            return x_blocks @ (self.history / self.seen) if self.seen else np.zeros(len(x_blocks))
        return x_blocks @ self.mu

    # ------------------------------------------------------------------ learning

    def learn(self, x, s):
        """The family's update on x with label +1 and importance s; returns whether it
        updated (and counts it)."""
        fam = self.family
        if fam in ("perceptron", "avg", "voted"):   # avg, voted: the snapshots' w
            updated = self.mu @ x <= 0
            if updated:
                self.mu = self.mu + s * x
                if fam == "voted":   # a new snapshot, whose count starts at 0
                    self.snapshots.append(self.mu)
                    self.counts.append(0.0)
        elif fam in ("pa", "pa1", "pa2"):
            updated = self._pa_step(x, max(0.0, 1 - self.mu @ x), s)
        elif fam == "sop":
            updated = self.margin(x) <= 0
            if updated:
                self.S = self.S + s * np.outer(x, x)
                self.v = self.v + s * x
        elif fam == "nherd":
            m = self.mu @ x
            updated = not m > 1
            if updated:
                self._nherd_step(x, max(0.0, 1 - m), s)
        elif fam == "arow":
            m = self.mu @ x
            updated = m < 1
            if updated:
                self._arow_step(x, 1 - m, self.o["r"] / s)
        elif fam == "narow":
            updated = self._narow(x, s)
        else:
            updated = self._cw(x, s)
        self.updates += bool(updated)
        return updated

    def learn_target(self, x, target, s):
        """The regression form: the squared loss for AROW (recursive least squares) and NHERD,
        the epsilon-insensitive loss for PA; returns whether it updated (and counts it)."""
        residual = target - self.mu @ x
        if self.family in ("pa", "pa1", "pa2"):
            loss = max(0.0, abs(residual) - self.o["epsilon"])
            updated = self._pa_step(np.sign(residual) * x, loss, s)
        elif self.family == "arow":
            updated = self._arow_step(x, residual, self.o["r"] / s)
        elif self.family == "nherd":
            updated = self._nherd_step(x, residual, s)
        else:
            raise ValueError(f"{self.name} has no regression form")
        self.updates += bool(updated)
        return updated

    def count(self, s):
        """After an example of importance s: the averaged forms' running sum (the voted
        perceptron's counts grow by s, the averaged perceptron's by 1)."""
        if self.family not in ("avg", "voted"):
            return
        weight = s if self.family == "voted" else 1.0
        self.seen += weight
        self.history = self.history + weight * self.mu
        if self.family == "voted":
            self.counts[-1] += s

    # ------------------------------------------------------------------ each family's step

    def _pa_step(self, direction, loss, s):
        n2 = direction @ direction
        if not (loss > 0 and n2 > 0):
            return False
        c = self.o["C"] * s
        tau = {"pa": loss / n2, "pa1": min(c, loss / n2),
               "pa2": loss / (n2 + 1 / (2 * c))}[self.family]
        self.mu = self.mu + tau * direction
        return True

    def _sigma_x(self, x):
        Sx = self.Sigma @ x if self.full else self.Sigma * x
        return Sx, x @ Sx

    def _nherd_step(self, x, loss, s):
        Sx, v = self._sigma_x(x)
        c = self.o["C"] * s
        self.mu = self.mu + loss / (v + 1 / c) * Sx
        coef = (c * c * v + 2 * c) / (1 + c * v) ** 2
        if self.full:
            self.Sigma = self.Sigma - coef * np.outer(Sx, Sx)
        elif self.name == "nherd-e":
            self.Sigma = self.Sigma / (1 + c * x ** 2 * self.Sigma) ** 2
        elif self.name == "nherd-p":
            self.Sigma = 1 / (1 / self.Sigma + (2 * c + c * c * v) * x ** 2)
        else:
            self.Sigma = self.Sigma - (self.Sigma * x) ** 2 * coef
        return True

    def _arow_step(self, x, loss, r, Sx=None, v=None):
        """AROW's step with regularization r (NAROW's r_t), the loss scaling the mean's."""
        if Sx is None:
            Sx, v = self._sigma_x(x)
        beta = 1 / (v + r)
        self.mu = self.mu + loss * beta * Sx
        if self.full:
            self.Sigma = self.Sigma - beta * np.outer(Sx, Sx)
        elif self.name.endswith("-p"):
            self.Sigma = 1 / (1 / self.Sigma + x ** 2 / r)
        else:
            self.Sigma = self.Sigma - beta * (self.Sigma * x) ** 2
        return True

    def _narow(self, x, s):
        m = self.mu @ x
        Sx, v = self._sigma_x(x)
        b = self.o["b"]
        if m >= 1 or not v > 1 / b:   # no loss, or r_t = +inf
            return False
        return self._arow_step(x, 1 - m, v / (b * v - 1) / s, Sx, v)

    def _cw(self, x, s):
        """CW, SCW-I and SCW-II (the variance floor binds only in long noisy runs)."""
        o, fam = self.o, self.family
        m = self.mu @ x
        Sx, v = self._sigma_x(x)
        phi = norm.ppf(o["eta"])
        psi, xi = 1 + phi ** 2 / 2, 1 + phi ** 2
        if v == 0:
            return False
        alpha = max(0.0, (-m * psi + math.sqrt(m * m * phi ** 4 / 4 + v * phi ** 2 * xi))
                    / (v * xi))
        if fam == "cw":
            if not alpha > 0:
                return False
        else:
            if not phi * math.sqrt(v) - m > 0:
                return False
            c = o["C"] * s
            if fam == "scw1":
                alpha = min(c, alpha)
            else:
                n_ = v + 1 / (2 * c)
                gamma = phi * math.sqrt(phi ** 2 * m * m * v * v + 4 * n_ * v * (n_ + v * phi ** 2))
                alpha = max(0.0, (-(2 * m * n_ + phi ** 2 * m * v) + gamma)
                            / (2 * (n_ * n_ + n_ * v * phi ** 2)))
        # sqrt(u), u = (-alpha v phi + sqrt(alpha^2 v^2 phi^2 + 4v))^2 / 4, without cancellation
        sqrt_u = 2 * v / (alpha * v * phi + math.sqrt(alpha ** 2 * v ** 2 * phi ** 2 + 4 * v))
        if self.check_textbook_u:
            u = 0.25 * (-alpha * v * phi + math.sqrt(alpha ** 2 * v ** 2 * phi ** 2 + 4 * v)) ** 2
            assert math.isclose(sqrt_u, math.sqrt(u), rel_tol=1e-6)
        beta = alpha * phi / (sqrt_u + v * alpha * phi)
        self.mu = self.mu + alpha * Sx
        floor = VARIANCE_FLOOR * o["a"]
        if self.full:
            self.Sigma = self.Sigma - beta * np.outer(Sx, Sx)
        elif fam == "cw":
            self.Sigma = np.maximum(floor, 1 / (1 / self.Sigma + alpha * phi * x ** 2 / sqrt_u))
        else:
            self.Sigma = np.maximum(floor, self.Sigma - beta * (self.Sigma * x) ** 2)
        return True

    # ------------------------------------------------------------------ the state

    def arrays(self):
        """The arrays a streamherd learner of the same name saves."""
        if self.family == "sop":
            A = self.sop_A()
            if self.full:
                return {"mean": np.linalg.solve(A, self.v), "inverse": np.linalg.inv(A)}
            return {"mean": self.v / np.diag(A), "label_sum": self.v, "diagonal": np.diag(A)}
        out = {"mean": self.mu}
        if self.family in GAUSSIAN:
            out["covariance" if self.full else "variance"] = self.Sigma
        if self.family == "avg":
            out["average"] = self.history / self.seen if self.seen else self.mu
        if self.family == "voted":   # u = C w - sum_i c_i v_i (algorithms/voted.py)
            out["weighted_updates"] = self.seen * self.mu - self.history
        return out


def binary_run(name, X, y, s, options=None, check_textbook_u=False):
    """(progressive margins, the learner after the run) of one binary run, example by example:
    the margin before learning, then the update with label y; an unlabeled row (NaN) or one of
    importance <= 0 is predicted but neither learned nor counted in an average."""
    learner = DenseLearner(name, X.shape[1], options, check_textbook_u)
    margins = np.empty(len(X))
    for i, x in enumerate(X):
        margins[i] = learner.margin(x)
        if math.isnan(y[i]) or s[i] <= 0:
            continue
        learner.learn(y[i] * x, s[i])
        learner.count(s[i])
    return margins, learner


def joint_run(name, X, cls, s, k, options=None, fixed=False):
    """(progressive predictions, the learner after the run) of the joint multiclass reduction
    over k classes, example by example: the prediction is the best class among those known (the
    averaged forms' average scores; -1 before any class is known; every class is known from the
    start when ``fixed``), then the family's update with label +1 on
    Delta = f(x, y) - f(x, y'), f(x, z) x in block z of k*d slots, y' the best wrong class among
    those known. An unlabeled row (class -1) is predicted only; a row of importance <= 0 makes
    its class known but is not learned."""
    n, d = X.shape
    learner = DenseLearner(name, k * d, options)
    known = k if fixed else 0
    predicted = np.full(n, -1)

    def f(x, z):
        out = np.zeros(k * d)
        out[z * d:(z + 1) * d] = x
        return out

    averaged = learner.family in ("avg", "voted")
    for i in range(n):
        x, y = X[i], cls[i]
        visible = max(known, y + 1)
        blocks = np.array([f(x, z) for z in range(visible)]).reshape(visible, k * d)
        if known:
            predicted[i] = int(np.argmax(learner.scores(blocks[:known], averaged)))
        if y < 0:
            continue
        known = visible
        if s[i] <= 0:
            continue
        if known > 1:
            scores = learner.scores(blocks)
            scores[y] = -np.inf
            rival = int(np.argmax(scores))
            learner.learn(f(x, y) - f(x, rival), s[i])
        learner.count(s[i])
    return predicted, learner


def regression_run(name, X, y, s, options=None):
    """(progressive predictions, final arrays) of one regression run, example by example."""
    learner = DenseLearner(name, X.shape[1], options)
    predictions = np.empty(len(X))
    for i, x in enumerate(X):
        predictions[i] = learner.mu @ x
        if math.isnan(y[i]) or s[i] <= 0:
            continue
        learner.learn_target(x, y[i], s[i])
    return predictions, learner.arrays()
