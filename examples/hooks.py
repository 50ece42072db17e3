"""Hooks: a run that waits for payloads from outside, with a durable timeout and a fallback.

``collect_reviews`` creates the hook ``review:<doc>`` and collects up to ``want``
reviews, each one a resume of that token. If they do not all arrive within
``timeout`` seconds, it publishes with the reviews it has (with none: "published
without review"). ``world-aws run`` resumes nobody, so there the run ends by the
fallback after the timeout (3 s by default):

    world-aws run examples.hooks:app collect_reviews --arg '"doc-1"'

With ``world-aws dev``, resume it yourself (here with a 10-minute timeout):

    world-aws dev examples.hooks:app                 # in one terminal
    curl -s -X POST "$WORLD_AWS_API/runs" -H 'content-type: application/json' \\
        -d '{"workflow": "collect_reviews", "args": ["doc-2", 2, 600]}'
    world-aws resume review:doc-2 --payload '{"by": "ada", "verdict": "ship it"}'
    world-aws resume review:doc-2 --payload '{"by": "bob", "verdict": "fix the typo"}'
"""

from __future__ import annotations

import asyncio

from world_aws import Workflows, create_hook

app = Workflows()


@app.step
def publish(doc: str, reviews: list[object], status: str) -> str:
    return f"{doc} {status} ({len(reviews)} review(s))"


@app.workflow
async def collect_reviews(doc: str, want: int = 2, timeout: float = 3.0) -> dict[str, object]:
    hook = create_hook(token=f"review:{doc}", metadata={"want": want})
    reviews: list[object] = []

    async def receive() -> None:
        async for review in hook:  # one payload per resume, in the order they were received
            reviews.append(review)
            if len(reviews) == want:
                return

    try:
        # The timeout is a durable timer: a wait in the run's log, woken by a delayed message.
        await asyncio.wait_for(receive(), timeout=timeout)
        status = "published"
    except TimeoutError:
        # The fallback: publish with what arrived in time.
        status = "published with partial review" if reviews else "published without review"
    return {"doc": doc, "status": status, "reviews": reviews, "notice": await publish(doc, reviews, status)}
