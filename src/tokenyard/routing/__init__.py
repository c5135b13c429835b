"""Routing: which worker serves a request (prefix overlap against load)."""
