"""The rag service: document ingestion, retrieval and streamed grounded answers."""
