"""Where Django looks for the management commands of ``tenure.contrib.django``."""
