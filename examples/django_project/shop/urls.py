"""The shop's URLs: orders, placed one by one or imported in bulk."""

from django.urls import path
from orders import views

urlpatterns = [
    path("orders", views.place_order, name="place-order"),
    path("orders/import", views.import_orders, name="import-orders"),
    path("orders/<int:pk>", views.order_detail, name="order"),
    path("orders/<int:pk>/resend-receipt", views.resend_receipt, name="resend-receipt"),
]
