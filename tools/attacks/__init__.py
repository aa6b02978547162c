"""Bounded attack scripts against the embedded service (loopback only): each one measures what an attacker on
the same machine can do to it and prints the numbers. docs/embedded-backend.md, "Safe on a shared desktop"."""
