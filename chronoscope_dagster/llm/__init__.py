"""Chat models: one interface, many backends, a response cache, the model registry."""
