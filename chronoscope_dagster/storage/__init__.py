"""Where each stage's inputs and outputs lie in a home, and the reads and writes of them that
the assets and checks hand to the domain core as tables, paths and SQL, one module a stage.
Built on ``warehouse`` (the home's layout); the core imports neither."""
