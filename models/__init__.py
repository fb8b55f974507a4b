"""Pyro world models: the specification every inference engine answers to."""
