"""The resources of the ``/users`` API: ``Users`` and ``Avatars``.

``app.create_app`` finds them with ``resources_in("examples.webrest_example.resources",
factory=...)``: a resource added to this package is served without changing the wiring.
``Monitoring`` lives outside, as it is served by an API of its own (another format, another
interceptor).
"""
