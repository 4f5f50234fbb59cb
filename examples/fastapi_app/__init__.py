"""A FastAPI app that enqueues tenure tasks: the recipe of docs/how-to/fastapi.md,
runnable (see ``main`` for how to start it and its worker)."""
