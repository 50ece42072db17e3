# Not named tests/examples: under pytest that package would shadow the repository's examples/.
"""The runnable examples in examples/: each one run to completion as a user would."""
