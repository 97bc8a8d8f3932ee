"""Code generated from specs/ by `make generate`; never edited by hand."""
