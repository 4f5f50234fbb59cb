"""The shop's orders: the model, the views that place them, the task that sends
their receipts, and their tests."""
