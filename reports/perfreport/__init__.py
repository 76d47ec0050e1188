"""Turns routing_benchmark JSON into Markdown reports with SVG plots."""
