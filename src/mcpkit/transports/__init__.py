"""Byte-stream transports: stdio (file descriptors) and in-memory pairs."""
