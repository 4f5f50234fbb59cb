"""No models: tenure's tables are its own, made by this app's migrations (see
:mod:`tenure.contrib.django.operations`). This module exists because Django sends
``pre_migrate`` and ``post_migrate`` only to apps that have one: on the first,
a partial reversal of tenure's migrations is refused; on the second, the App's
store is opened, or migrated when it lives outside Django's databases (see
:func:`tenure.contrib.django.binding.after_migrate`)."""
