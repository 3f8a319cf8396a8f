"""Jinja2 templates of the generated OpenCL programs, shipped as package data."""
