"""``manage.py tenure_worker`` and ``manage.py tenure``, one module each, as Django wants."""
