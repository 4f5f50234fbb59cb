"""A sign-up service: an example of a project that tests its tenure tasks."""
