"""Maintenance: the work one elected process does for everyone sharing a store."""
