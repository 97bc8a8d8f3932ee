"""Running executions: the queue (the executions tables), leases, dispatch, the worker
pool and reaper, and the jobs that run agent and workflow executions with the runner and the
workflow engine."""
