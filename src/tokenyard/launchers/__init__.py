"""`tokenyard claude | codex | openclaw`: run a real agent harness against tokenyard
with everything set (base URL, model ids, context window, offline start-up)."""
