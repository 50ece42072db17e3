"""Runnable example workflow apps (``world-aws run examples.<module>:app <workflow>``)."""
