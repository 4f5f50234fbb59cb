# Django's test runner is unittest's: its assertion methods are the idiom here.
# ruff: noqa: PT009, PT027
"""The shop's tests, run by Django's test runner (``python manage.py test``).

They are TransactionTestCases: each view's transaction really commits or rolls
back, as in production, so what they check is what a worker would find. (A
TestCase would wrap each test in a transaction of its own, and a task written
in it would be visible on Django's connection only.) tenure's tables are not
emptied between tests: the tests look up the tasks they made, by id.
"""

import threading
from typing import Any

from django.core import mail
from django.db import transaction
from django.test import Client, TransactionTestCase

from orders.models import Order
from orders.tasks import app, send_receipt
from tenure import DuplicateTask, Status, TaskNotFound
from tenure.contrib.django import transactional

RECEIPT = "orders.tasks.send_receipt"


class PlacingOrders(TransactionTestCase):
    def place(self, item: str, quantity: int = 1, client: Client | None = None) -> Any:
        order = {"item": item, "quantity": quantity, "email": "ada@example.com"}
        return (client or self.client).post("/orders", order, content_type="application/json")

    def receipts(self) -> int:
        return app.tasks.count(name=RECEIPT)

    def test_an_order_and_its_receipt_task_commit_together(self) -> None:
        response = self.place("lamp", 2)

        self.assertEqual(response.status_code, 201)
        order = Order.objects.get(pk=response.json()["order"])
        task = app.tasks.get(response.json()["receipt_task"])
        self.assertEqual((task.name, task.status), (RECEIPT, Status.PENDING))
        self.assertEqual(task.data["args"], [order.pk])

    def test_a_declined_card_rolls_back_the_order_and_its_task(self) -> None:
        before = self.receipts()

        response = self.place("declined-card")

        self.assertEqual(response.status_code, 402)
        self.assertFalse(Order.objects.exists())
        self.assertEqual(self.receipts(), before)

    def test_an_error_in_the_view_rolls_back_the_order_and_its_task(self) -> None:
        before = self.receipts()
        client = Client(raise_request_exception=False)

        with self.assertLogs("django.request", "ERROR"):
            response = self.place("provider-down", client=client)

        self.assertEqual(response.status_code, 500)
        self.assertFalse(Order.objects.exists())
        self.assertEqual(self.receipts(), before)

    def test_a_refused_import_line_takes_only_its_own_task_with_it(self) -> None:
        lines = [{"item": "lamp", "quantity": 1}, {"item": "piano", "quantity": 99}]
        before = self.receipts()

        response = self.client.post(
            "/orders/import", {"orders": lines}, content_type="application/json"
        )

        self.assertEqual(response.status_code, 201)
        [placed] = response.json()["placed"]
        self.assertEqual(list(Order.objects.values_list("pk", flat=True)), [placed])
        self.assertEqual(app.tasks.get(f"receipt-{placed}").data["args"], [placed])
        self.assertEqual(response.json()["refused"][0]["item"], "piano")
        self.assertEqual(self.receipts(), before + 1)

    def test_outside_a_transaction_the_task_commits_at_once(self) -> None:
        order = Order.objects.create(item="lamp", quantity=1, email="ada@example.com")

        response = self.client.post(f"/orders/{order.pk}/resend-receipt")

        self.assertEqual(response.status_code, 202)
        task = app.tasks.get(response.json()["receipt_task"])
        self.assertEqual(task.data["kwargs"], {"again": True})

    def test_a_receipt_is_enqueued_once_and_a_refusal_spares_the_transaction(self) -> None:
        with transaction.atomic():
            order = Order.objects.create(item="lamp", quantity=1, email="ada@example.com")
            receipt = transactional(send_receipt.options(id=order.receipt_task_id))
            receipt.enqueue(order.pk)
            with self.assertRaises(DuplicateTask):
                receipt.enqueue(order.pk)
            order.quantity = 2
            order.save()  # the transaction is still usable

        self.assertEqual(Order.objects.get().quantity, 2)
        self.assertEqual(app.tasks.get(order.receipt_task_id).status, Status.PENDING)

    def test_the_order_page_shows_where_the_receipt_is(self) -> None:
        order = self.place("lamp").json()["order"]

        page = self.client.get(f"/orders/{order}").json()

        self.assertEqual(page["receipt_task"], {"id": f"receipt-{order}", "status": "pending"})
        self.assertFalse(page["receipt_sent"])
        with self.assertRaises(TaskNotFound):
            app.tasks.get("receipt-0")


class SendingReceipts(TransactionTestCase):
    def setUp(self) -> None:
        # Receipts other tests left pending: their orders are gone with the flush.
        for task in app.tasks.list(status="pending", name=RECEIPT, limit=1000):
            app.tasks.cancel(task.id)

    def test_a_worker_sends_the_receipt_once(self) -> None:
        worker = app.worker(concurrency=1, poll_interval=0.05, scheduler=False)
        running = threading.Thread(target=worker.run)
        running.start()
        try:
            worker.started.wait(10)
            response = self.client.post(
                "/orders", {"item": "lamp", "quantity": 1}, content_type="application/json"
            )
            handle = app.handle(response.json()["receipt_task"])
            self.assertIn("sent to", handle.wait(timeout=10))
            again = send_receipt.enqueue(response.json()["order"])
            self.assertIn("sent already", again.wait(timeout=10))
        finally:
            worker.stop()
            running.join(10)

        order = Order.objects.get()
        self.assertIsNotNone(order.receipt_sent_at)
        self.assertEqual([message.subject for message in mail.outbox], [f"Your order {order.pk}"])

    def test_the_task_function_can_be_called_directly(self) -> None:
        order = Order.objects.create(item="lamp", quantity=3, email="ada@example.com")

        self.assertIn("sent to ada@example.com", send_receipt(order.pk))

        self.assertEqual(mail.outbox[0].body, "Thank you for ordering 3 x lamp.")
