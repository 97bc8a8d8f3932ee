"""From an uploaded file to embedded chunks: text extraction, token-aware chunking, embedding."""
