"""Generated from specs/ratelimit.openapi.yaml by `make generate`; do not edit."""
