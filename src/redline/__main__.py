"""``python -m redline`` and the ``redline`` console script: :func:`redline.cli.main.main`.

The command line's modules are imported here with Python's cycle collector paused, then frozen
out of its later passes. The import makes some 30,000 objects the collector tracks (classes,
functions, the methods dataclasses generate) and next to no garbage; collecting while they were
made walked them again and again: 5-8 ms of the import's 110 ms (measured in-process, 4 runs
each). ``bench/bench_throughput.py`` times the start as part of a scan. Only the command line
comes here: importing :mod:`redline` or :mod:`redline.cli.main` as a library leaves the collector
as it is.
"""

import gc

gc.disable()
from redline.cli.main import main  # noqa: E402  (after the collector is paused: that is the point)

gc.freeze()  # everything loaded so far lives as long as the process
gc.enable()

__all__ = ["main"]

if __name__ == "__main__":
    main()
