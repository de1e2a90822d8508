"""``streamherd dist-train`` on Dask: iterative parameter mixing over shards.

shards.py cuts the inputs into shards (a file, or a byte range of a large uncompressed file);
round.py trains one shard for one epoch from the current model (a pure function, a Dask task);
mixing.py mixes the shards' models; driver.py runs the rounds on a Dask cluster; command.py is
the command line (its flags, imported by cli.py without dask)."""
