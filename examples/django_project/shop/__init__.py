"""The example shop's Django project: settings, URLs and the WSGI entry."""
