"""The shop's tasks, declared on the shop's tenure App.

``settings.TENURE = {"APP": "orders.tasks:app"}`` names this App, and
``tenure.contrib.django`` binds it to ``DATABASES["default"]``: the tasks live
in the shop's database, beside the orders. Workers run them with
``python manage.py tenure_worker``, which sets Django up first, so the ORM
works in tasks as in views.
"""

from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

import tenure
from orders.models import Order

app = tenure.App()  # no URL: the store is the one settings.TENURE names


@app.task(topic="receipts", retries=3, timeout=60)
def send_receipt(order_id: int, *, again: bool = False) -> str:
    """Email the receipt of an order, once (unless ``again``).

    A task may run more than once (a worker that dies after sending, before
    reporting, leaves it to another): the order's ``receipt_sent_at``, read
    under a row lock, keeps a retry from sending twice what was recorded.
    """
    with transaction.atomic():
        order = Order.objects.select_for_update().get(pk=order_id)
        if order.receipt_sent_at is not None and not again:
            return f"receipt of order {order_id} was sent already"
        send_mail(
            subject=f"Your order {order_id}",
            message=f"Thank you for ordering {order.quantity} x {order.item}.",
            from_email=None,
            recipient_list=[order.email],
        )
        order.receipt_sent_at = timezone.now()
        order.save(update_fields=["receipt_sent_at"])
    return f"receipt of order {order_id} sent to {order.email}"
