"""tokenyard: an inference frontend for agent harnesses on self-hosted models."""

__version__ = "0.1.0"
