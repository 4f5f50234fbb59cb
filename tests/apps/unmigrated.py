"""A tenure App whose schema is a DBA's to apply (``migrate=False``): neither
opening its store nor Django's ``migrate`` changes it."""

from __future__ import annotations

import tenure

app = tenure.App(migrate=False)
