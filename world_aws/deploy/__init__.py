"""Deploying a project of one's own from the installed package: its Lambda bundle and ``sam deploy``.

``bundle`` builds the directory template.yaml's ``CodeUri`` names from the installed
``world_aws``, the Lambda handlers shipped beside it (``lambda-functions/``, the repository's
``functions/``), the pinned runtime dependencies and the user's app and requirements;
``project`` writes a new project (``world-aws init``); ``sam`` runs ``sam deploy`` on it.
Standard library only.
"""
