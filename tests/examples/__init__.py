"""The runnable examples in examples/: each one run to completion as a user would."""
