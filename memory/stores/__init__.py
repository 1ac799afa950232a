"""Vector stores behind the `VectorStore` protocol."""
