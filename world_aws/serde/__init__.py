"""Serialization of user values: the codec, its tags, errors and payload limits.

Import rule: it imports ``errors`` and ``contract`` only.
"""
