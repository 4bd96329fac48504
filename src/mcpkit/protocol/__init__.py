"""The sans-I/O protocol core: framing, envelopes, revisions, lifecycle, connection.

Imports nothing but the standard library and orjson, so it can be driven and tested
without an event loop.
"""
