# Django's test runner is unittest's: its assertion methods are the idiom here.
# ruff: noqa: PT009, PT027
"""The shop's tests, run by Django's test runner (``python manage.py test``).

Most are TransactionTestCases: each view's transaction really commits or rolls
back, as in production, so what they check is what a worker would find, and
``tenure.testing.run_until_empty(app)`` runs the receipts in the test's own
thread, the way a worker would. (A TestCase wraps each test in a transaction
of its own, and a task enqueued in it, by a view or by the test, is written in
that transaction too: visible on Django's connection only, never to tenure's
connections nor to ``run_until_empty``. ``ATaskInATestCase`` shows what works
there.) tenure's tables are not emptied between tests: the tests look up the
tasks they made, by id, and cancel those that earlier tests left queued.
"""

from typing import Any

from django.core import mail
from django.db import transaction
from django.test import Client, TestCase, TransactionTestCase

from orders.models import Order
from orders.tasks import app, send_receipt
from tenure import DuplicateTask, Status, TaskNotFound
from tenure.contrib.django import transactional
from tenure.testing import eager, run_until_empty

RECEIPT = "orders.tasks.send_receipt"


def place(client: Client, item: str, quantity: int = 1) -> Any:
    order = {"item": item, "quantity": quantity, "email": "ada@example.com"}
    return client.post("/orders", order, content_type="application/json")


class PlacingOrders(TransactionTestCase):
    def receipts(self) -> int:
        return app.tasks.count(name=RECEIPT)

    def test_an_order_and_its_receipt_task_commit_together(self) -> None:
        response = place(self.client, "lamp", 2)

        self.assertEqual(response.status_code, 201)
        order = Order.objects.get(pk=response.json()["order"])
        task = app.tasks.get(response.json()["receipt_task"])
        self.assertEqual((task.name, task.status), (RECEIPT, Status.PENDING))
        self.assertEqual(task.data["args"], [order.pk])

    def test_a_declined_card_rolls_back_the_order_and_its_task(self) -> None:
        before = self.receipts()

        response = place(self.client, "declined-card")

        self.assertEqual(response.status_code, 402)
        self.assertFalse(Order.objects.exists())
        self.assertEqual(self.receipts(), before)

    def test_an_error_in_the_view_rolls_back_the_order_and_its_task(self) -> None:
        before = self.receipts()
        client = Client(raise_request_exception=False)

        with self.assertLogs("django.request", "ERROR"):
            response = place(client, "provider-down")

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
            # transactional(): the explicit form of what a plain enqueue does here.
            receipt = transactional(send_receipt.options(id=order.receipt_task_id))
            receipt.enqueue(order.pk)
            with self.assertRaises(DuplicateTask):
                receipt.enqueue(order.pk)
            order.quantity = 2
            order.save()  # the transaction is still usable

        self.assertEqual(Order.objects.get().quantity, 2)
        self.assertEqual(app.tasks.get(order.receipt_task_id).status, Status.PENDING)

    def test_the_order_page_shows_where_the_receipt_is(self) -> None:
        order = place(self.client, "lamp").json()["order"]

        page = self.client.get(f"/orders/{order}").json()

        self.assertEqual(page["receipt_task"], {"id": f"receipt-{order}", "status": "pending"})
        self.assertFalse(page["receipt_sent"])
        with self.assertRaises(TaskNotFound):
            app.tasks.get("receipt-0")


class SendingReceipts(TransactionTestCase):
    """The receipts, run here by ``run_until_empty`` as a worker would run them:
    arguments and result through JSON, the worker's middleware (which closes
    Django's old connections around each task), retries."""

    def setUp(self) -> None:
        # Receipts other tests left queued: their orders are gone with the flush.
        for task in app.tasks.list(status="pending", name=RECEIPT, limit=1000):
            app.tasks.cancel(task.id)

    def test_a_placed_order_gets_its_receipt_once(self) -> None:
        placed = place(self.client, "lamp").json()

        drained = run_until_empty(app)

        self.assertEqual((drained.done, drained.failed), (1, 0))
        receipt = app.handle(placed["receipt_task"])
        self.assertEqual(
            receipt.wait(timeout=0), f"receipt of order {placed['order']} sent to ada@example.com"
        )
        again = send_receipt.enqueue(placed["order"])  # no transaction here: committed at once
        run_until_empty(app)
        self.assertIn("sent already", again.wait(timeout=0))
        self.assertIsNotNone(Order.objects.get().receipt_sent_at)
        self.assertEqual([m.subject for m in mail.outbox], [f"Your order {placed['order']}"])

    def test_a_declined_order_leaves_no_receipt_to_send(self) -> None:
        place(self.client, "declined-card")

        self.assertEqual(len(run_until_empty(app)), 0)
        self.assertEqual(mail.outbox, [])

    def test_in_eager_mode_a_receipt_sent_again_is_sent_before_the_response(self) -> None:
        order = Order.objects.create(item="lamp", quantity=1, email="ada@example.com")

        with eager(app):
            response = self.client.post(f"/orders/{order.pk}/resend-receipt")

        task = app.tasks.get(response.json()["receipt_task"])
        self.assertEqual(task.status, Status.DONE)
        self.assertEqual(len(mail.outbox), 1)

    def test_eager_mode_leaves_a_task_of_the_views_transaction_to_the_commit(self) -> None:
        with eager(app):
            placed = place(self.client, "lamp").json()

        # Written in the request's transaction: not runnable before its commit.
        self.assertEqual(app.tasks.get(placed["receipt_task"]).status, Status.PENDING)
        self.assertEqual(run_until_empty(app).done, 1)
        self.assertEqual(len(mail.outbox), 1)


class ATaskInATestCase(TestCase):
    """In a TestCase the test's transaction holds every enqueue: test the
    task's function by calling it, and what views enqueue in a
    TransactionTestCase."""

    def test_the_task_function_can_be_called_directly(self) -> None:
        order = Order.objects.create(item="lamp", quantity=3, email="ada@example.com")

        self.assertIn("sent to ada@example.com", send_receipt(order.pk))

        self.assertEqual(mail.outbox[0].body, "Thank you for ordering 3 x lamp.")

    def test_an_enqueue_is_in_the_tests_transaction(self) -> None:
        order = Order.objects.create(item="lamp", quantity=3, email="ada@example.com")

        handle = send_receipt.enqueue(order.pk)

        # Only Django's connection sees it; the test's rollback takes it away.
        with self.assertRaises(TaskNotFound):
            app.tasks.get(handle.id)
