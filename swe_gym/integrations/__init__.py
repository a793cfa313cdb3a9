"""Adapters to other frameworks (NeMo RL, mini-swe-agent, Ray); each is imported by its own module path,
so its optional dependencies are needed only when it is used."""
