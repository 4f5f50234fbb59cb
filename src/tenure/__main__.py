"""``python -m tenure`` is the ``tenure`` command."""

from __future__ import annotations

import sys

from tenure.cli import main

sys.exit(main())
