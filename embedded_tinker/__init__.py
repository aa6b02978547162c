"""Embedded Tinker-compatible service: the local backend the stock ``tinker`` SDK talks to.

The pipeline imports only ``embedded_tinker.launch.start_server``; everything else goes through
the SDK over HTTP. See docs/embedded-backend.md.
"""
