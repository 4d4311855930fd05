"""Prompt templates: data files read at run time with `load_template`."""
