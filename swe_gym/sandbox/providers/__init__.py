"""Built-in sandbox providers; each is imported only when asked for by name."""
