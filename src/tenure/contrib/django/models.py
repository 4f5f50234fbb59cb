"""No models: tenure's tables are its own, made by its migrations. This module
exists because Django sends ``post_migrate`` only to apps that have one, and on
that signal ``manage.py migrate`` brings tenure's schema up to date too (see
:func:`tenure.contrib.django.binding.migrate_schema`)."""
