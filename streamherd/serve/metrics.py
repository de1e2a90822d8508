"""The server's metrics, in Prometheus' text format (prometheus-client): answers, examples
learned, the progressive loss, errors by kind, clients, snapshots and the time the model work
of a read takes."""
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

# the model work of one read: a line takes tens of microseconds, a pipelined read of 64 KiB
# a few milliseconds
LATENCY_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                   0.1, 0.25, 1.0)
ERROR_KINDS = ("malformed", "line_too_long", "partial_line", "idle", "refused", "save_failed")


class Metrics:
    """One registry per server (not the process's global one)."""

    def __init__(self, answerer):
        self.registry = registry = CollectorRegistry()
        self.answers = Counter("streamherd_answers", "Examples answered (one line each).",
                               registry=registry)
        self.learned = Counter("streamherd_examples_learned", "Labeled examples learned from.",
                               registry=registry)
        self.errors = Counter("streamherd_errors", "Faults handled, by kind.", ["kind"],
                              registry=registry)
        for kind in ERROR_KINDS:
            self.errors.labels(kind)
        self.clients = Gauge("streamherd_clients", "Clients connected.", registry=registry)
        self.connections = Counter("streamherd_connections", "Clients accepted.",
                                   registry=registry)
        self.snapshots = Counter("streamherd_snapshots", "Snapshots written.", registry=registry)
        self.latency = Histogram("streamherd_read_seconds", "Time of the model work of one "
                                 "read of a client's lines (parse, predict, learn).",
                                 buckets=LATENCY_BUCKETS, registry=registry)
        loss = Gauge("streamherd_progressive_loss", "Average progressive loss since the model "
                     "was loaded (with --no-learn: the loss of the labeled examples answered).",
                     registry=registry)
        loss.set_function(lambda: answerer.progressive_loss)

    def answered(self, tally, seconds):
        self.answers.inc(tally.examples)
        if tally.learned:
            self.learned.inc(tally.learned)
        if tally.errors:
            self.errors.labels("malformed").inc(tally.errors)
        self.latency.observe(seconds)

    def connected(self, clients, accepted=False):
        """The number of clients changed (to ``clients``; ``accepted``: by a new one)."""
        if accepted:
            self.connections.inc()
        self.clients.set(clients)

    def error(self, kind):
        self.errors.labels(kind).inc()

    def saved(self):
        self.snapshots.inc()

    def exposition(self):
        """(content type, body) of GET /metrics."""
        return CONTENT_TYPE_LATEST, generate_latest(self.registry)
