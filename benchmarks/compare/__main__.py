"""``python -m benchmarks.compare``: see :mod:`benchmarks.compare.runner`."""

from benchmarks.compare.runner import main

raise SystemExit(main())
