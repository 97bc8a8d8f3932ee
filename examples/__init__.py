"""Example applications built on webrest."""
