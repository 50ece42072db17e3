"""Runtime scenario tests: workflows run end to end through a World's real queues."""
