"""Vector stores behind one interface (:class:`handlers.rag.stores.base.VectorStore`)."""
