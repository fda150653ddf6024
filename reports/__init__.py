"""Renders traces and verdicts for people; never decides anything."""
