"""Answer generation: generators behind one interface, and the prompts given to them."""
