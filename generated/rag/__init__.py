"""Generated from specs/rag.openapi.yaml by `make generate`; do not edit."""
