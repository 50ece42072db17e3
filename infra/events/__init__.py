"""Sample Lambda SQS events (``*.json``) for handler tests, made by ``make_events.py``."""
