"""Model families as data (see catalog.py); the lowest floor: imports only the stdlib."""
