"""Engines: where tokens come from."""
