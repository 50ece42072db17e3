"""Records to DynamoDB items and back: the table's keys, item layout, payload fields, sizes.

Import rule: it imports ``errors`` and ``contract`` only (and boto3's types): it knows the
layout, not the write or read policy.
"""
