"""Generated from specs/agents.openapi.yaml by `make generate`; do not edit."""
