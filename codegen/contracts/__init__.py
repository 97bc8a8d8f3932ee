"""The contract gate: breaking changes of ``specs/`` against its released snapshots.

``python -m codegen.contracts check`` (``make check-breaking``) compares every contract (each
``specs/*.openapi.yaml``, and ``specs/proto`` as one contract) with its latest release under
``specs/releases/`` and fails on a breaking change the contract's version does not allow;
``python -m codegen.contracts release`` (``make release-specs``) records a release. The
classification uses the field's tools, installed by ``make contract-tools`` from
``tools/contracts/package-lock.json``: api-smart-diff for OpenAPI, ``buf breaking`` for proto.
"""
