"""world-aws: durable async Python workflows on AWS serverless."""
