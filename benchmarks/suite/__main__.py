"""``python -m benchmarks.suite`` (what ``make bench`` runs): see :mod:`benchmarks.suite.runner`."""

from benchmarks.suite.runner import main

raise SystemExit(main())
