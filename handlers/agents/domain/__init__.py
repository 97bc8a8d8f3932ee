"""The domain: agents and their files and manifest, API keys, execution records, reviews
(feedback, expected results, dataset examples) and the workflow catalog, over storage."""
