"""The playground: a page at ``/`` to try the rag service in a browser (upload files with
their progress, list and delete documents, ask a question and watch the answer stream in with
its sources, search), served from this package's files, outside the API's contract, with no
request to any other host. ``page`` is what is served, ``mount`` attaches it to the app."""

from handlers.rag.playground.mount import PlaygroundFilter, mount_playground
from handlers.rag.playground.page import PlaygroundPage

__all__ = ["PlaygroundFilter", "PlaygroundPage", "mount_playground"]
