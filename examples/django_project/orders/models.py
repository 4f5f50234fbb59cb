"""An order of the shop, and when its receipt was sent."""

from django.db import models


class Order(models.Model):
    item = models.CharField(max_length=100)
    quantity = models.PositiveIntegerField()
    email = models.EmailField()
    created_at = models.DateTimeField(auto_now_add=True)
    receipt_sent_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"order {self.pk}: {self.quantity} x {self.item}"

    @property
    def receipt_task_id(self) -> str:
        """The id of the task that sends this order's receipt: chosen, not drawn,
        so that the receipt is enqueued once however often the code runs."""
        return f"receipt-{self.pk}"
