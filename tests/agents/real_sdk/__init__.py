"""The agents server driven by the product's own Python client, ``eigenpal==0.5.12``,
unmodified: proof that a user of that SDK can point it at this server and everything works."""
