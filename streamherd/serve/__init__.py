"""``streamherd serve``: a model answering examples over TCP (Vowpal Wabbit's daemon protocol).

answers.py is the model work (the one OnlineModel, one writer); server.py the asyncio server
(clients, snapshots, signals, the HTTP face); metrics.py its Prometheus metrics; command.py the
command line (imported by cli.py without numpy or numba)."""
