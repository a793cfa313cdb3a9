"""Adapters to other frameworks (mini-swe-agent, ...); each is imported by its own module path."""
