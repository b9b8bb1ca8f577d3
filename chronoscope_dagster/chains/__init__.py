"""Question templates, the chain families, and the benchmark built from them."""
