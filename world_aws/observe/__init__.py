"""Logs, metric names and trace spans shared by the client and the worker.

Import rule: it imports ``contract`` and OpenTelemetry only.
"""
