"""The orders table (as ``manage.py makemigrations`` wrote it)."""

# ruff: noqa: RUF012 - Django's migration classes declare their lists as class attributes
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies: list[tuple[str, str]] = []

    operations = [
        migrations.CreateModel(
            name="Order",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("item", models.CharField(max_length=100)),
                ("quantity", models.PositiveIntegerField()),
                ("email", models.EmailField(max_length=254)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("receipt_sent_at", models.DateTimeField(blank=True, null=True)),
            ],
        ),
    ]
