"""Optional integrations with other libraries, each behind an extra of its own.

A module here may import a library tenure itself does not depend on, so nothing
in tenure imports this package: ``import tenure`` stays as light as it was, and
an integration is loaded only by the application that asks for it
(``from tenure.contrib.otel import instrument`` needs ``tenure[otel]``).
"""
