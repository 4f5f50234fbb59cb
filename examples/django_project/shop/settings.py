"""Settings of the example shop: orders whose receipts are sent by tenure tasks
that live in the shop's own database.

The database is PostgreSQL by default (``PGHOST``, ``PGPORT``, ``PGUSER``,
``PGPASSWORD``; database ``EXAMPLE_DB_NAME``, default ``tenure_django_example``),
or SQLite with ``EXAMPLE_DATABASE=sqlite`` (file ``EXAMPLE_SQLITE_PATH``). Every
view runs in one transaction (``ATOMIC_REQUESTS``), so an order and the task
that sends its receipt are committed together or not at all.
"""

import os
from pathlib import Path

import django

BASE_DIR = Path(__file__).resolve().parent.parent

# An example's key: set DJANGO_SECRET_KEY anywhere that is not a laptop.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-only-not-a-secret")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "testserver"]

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "tenure.contrib.django",
    "orders",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
]

ROOT_URLCONF = "shop.urls"
WSGI_APPLICATION = "shop.wsgi.application"

if os.environ.get("EXAMPLE_DATABASE", "postgresql") == "sqlite":
    SQLITE_PATH = Path(os.environ.get("EXAMPLE_SQLITE_PATH", BASE_DIR / "db.sqlite3"))
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": SQLITE_PATH,
            # A file, not memory: tenure's workers share the test database too.
            "TEST": {"NAME": SQLITE_PATH.with_name(f"test_{SQLITE_PATH.name}")},
            # Workers write to the same file: take the write lock when a
            # transaction begins, and wait for it rather than fail.
            "OPTIONS": {"timeout": 20}
            | ({"transaction_mode": "IMMEDIATE"} if django.VERSION >= (5, 1) else {}),
            "ATOMIC_REQUESTS": True,
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",  # psycopg 3
            "NAME": os.environ.get("EXAMPLE_DB_NAME", "tenure_django_example"),
            "USER": os.environ.get("PGUSER", "postgres"),
            "PASSWORD": os.environ.get("PGPASSWORD", ""),
            "HOST": os.environ.get("PGHOST", "127.0.0.1"),
            "PORT": os.environ.get("PGPORT", "5432"),
            "ATOMIC_REQUESTS": True,
        }
    }

# The tasks live in DATABASES["default"]: no URL of their own. And so an enqueue
# inside an atomic block (every view, under ATOMIC_REQUESTS) is written in that
# transaction: "TRANSACTIONAL": True is the default.
TENURE = {"APP": "orders.tasks:app"}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"

EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
DEFAULT_FROM_EMAIL = "shop@example.com"
