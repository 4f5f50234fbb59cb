"""The shop's views: an order and the task that sends its receipt are written in
one transaction, so both exist or neither does.

They are a JSON API for other programs, so they are exempt from Django's CSRF
check, which protects browser forms (a real shop would authenticate callers).
``ATOMIC_REQUESTS`` wraps each view in a transaction that Django commits when
the view returns a response and rolls back when it raises (or when the view
asks, with ``transaction.set_rollback(True)``). Inside an atomic block a plain
``send_receipt.enqueue(...)`` is written on Django's connection, in that
transaction (``settings.TENURE['TRANSACTIONAL']``, on by default); outside one
(``resend_receipt``) it is committed at once.

``transactional(send_receipt).enqueue(...)`` says the same explicitly: it is
what to write where that setting is off. The tests use it once
(orders/tests.py).
"""

import json
from typing import Any

from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from orders.models import Order
from orders.tasks import app, send_receipt
from tenure import TaskNotFound

MAX_QUANTITY = 10
"""What the warehouse holds of any item."""


class CardDeclined(Exception):
    """The payment provider refused the card."""


class OutOfStock(Exception):
    """The warehouse holds fewer than the order asks for."""


def charge(order: Order) -> None:
    """Stand-in for a payment provider: refuses one card, and is down for another."""
    if order.item == "declined-card":
        raise CardDeclined("the card was declined")
    if order.item == "provider-down":
        raise ConnectionError("the payment provider cannot be reached")


def reserve_stock(order: Order) -> None:
    if order.quantity > MAX_QUANTITY:
        raise OutOfStock(f"only {MAX_QUANTITY} of {order.item} left")


def _order_fields(line: Any) -> dict[str, Any]:
    """An order's fields from one JSON object; ValueError if they are not there."""
    try:
        fields = {"item": str(line["item"]), "quantity": int(line["quantity"])}
        fields["email"] = str(line.get("email", "customer@example.com"))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"an order needs an item and a quantity: {exc}") from None
    if fields["quantity"] < 1:
        raise ValueError("the quantity must be 1 or more")
    return fields


def _json(request: HttpRequest) -> Any:
    try:
        return json.loads(request.body)
    except ValueError:
        raise ValueError("the body must be JSON") from None


@csrf_exempt
@require_POST
def place_order(request: HttpRequest) -> JsonResponse:
    """``POST /orders {"item": "lamp", "quantity": 2, "email": ...}``."""
    try:
        order = Order.objects.create(**_order_fields(_json(request)))
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    # Written in this request's transaction: committed with the order, or not at all.
    receipt = send_receipt.options(id=order.receipt_task_id).enqueue(order.pk)
    try:
        charge(order)
    except CardDeclined as exc:
        transaction.set_rollback(True)  # neither the order nor its receipt task
        return JsonResponse({"error": str(exc)}, status=402)
    # Any other error propagates: Django answers 500 and rolls both back.
    return JsonResponse({"order": order.pk, "receipt_task": receipt.id}, status=201)


@csrf_exempt
@require_POST
def import_orders(request: HttpRequest) -> JsonResponse:
    """``POST /orders/import {"orders": [{...}, ...]}``: each line in a savepoint
    of the request's transaction; a refused line takes its own receipt task
    with it, and leaves the others."""
    try:
        lines = [_order_fields(line) for line in _json(request)["orders"]]
    except (ValueError, KeyError, TypeError) as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    placed, refused = [], []
    for fields in lines:
        try:
            with transaction.atomic():  # a savepoint
                order = Order.objects.create(**fields)
                send_receipt.options(id=order.receipt_task_id).enqueue(order.pk)
                reserve_stock(order)
        except OutOfStock as exc:
            refused.append({"item": fields["item"], "error": str(exc)})
        else:
            placed.append(order.pk)
    return JsonResponse({"placed": placed, "refused": refused}, status=201)


@transaction.non_atomic_requests
@csrf_exempt
@require_POST
def resend_receipt(request: HttpRequest, pk: int) -> JsonResponse:
    """``POST /orders/<pk>/resend-receipt``: outside any transaction (Django's
    autocommit), so the task is committed as soon as it is enqueued."""
    order = get_object_or_404(Order, pk=pk)
    receipt = send_receipt.enqueue(order.pk, again=True)
    return JsonResponse({"order": order.pk, "receipt_task": receipt.id}, status=202)


@require_GET
def order_detail(request: HttpRequest, pk: int) -> JsonResponse:
    """``GET /orders/<pk>``: the order, and where its receipt task is."""
    order = get_object_or_404(Order, pk=pk)
    try:
        status = app.tasks.get(order.receipt_task_id).status.value
    except TaskNotFound:
        status = None
    return JsonResponse(
        {
            "order": order.pk,
            "item": order.item,
            "quantity": order.quantity,
            "receipt_sent": order.receipt_sent_at is not None,
            "receipt_task": {"id": order.receipt_task_id, "status": status},
        }
    )
