"""Hand-written service logic, one package per service (rag, ratelimit, agents).

Each service implements its generated handler Protocol (``generated/<svc>/handlers.py``);
mypy strict checks the conformance. The packages land with the services' issues.
"""
