"""Traces: recording every delivery, reading it back and replaying it (the viewers that show
a trace are tools, actors.app.tools)."""
