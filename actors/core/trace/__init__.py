"""Traces: recording every delivery, reading it back, replaying it, and showing it."""
