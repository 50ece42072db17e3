"""The World contract: records, rules, protocols and the queue payload. No backend here."""
