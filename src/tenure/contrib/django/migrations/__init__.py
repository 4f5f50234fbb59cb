"""tenure's schema as Django migrations, one for each of tenure's SQL migrations
(two, where the same change has a file in each dialect): see
:mod:`tenure.contrib.django.operations`."""
