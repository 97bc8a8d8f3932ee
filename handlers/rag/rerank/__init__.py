"""The optional reranking stage of retrieval (issue 25, item 2): a cross-encoder that scores
the fused search results against the query, run locally (:mod:`.cross_encoder`) or by a
remote ``/rerank`` endpoint (:mod:`.remote`), chosen by :mod:`.settings` and built by
:mod:`.factory`; :mod:`.pipeline` applies it to fused results.

Importing this package (and :mod:`.settings`) does not import torch: only the local
cross-encoder's module does.
"""
