"""Streams: steps report progress while they work; a caller reads it as it comes.

``summarize`` counts the words of each document in its own step. Every step writes
what it is doing to the run's default stream (``get_writable()``), and the last one
closes it. Run it to completion:

    world-aws run examples.streaming:app summarize --arg '["the quick brown fox", "jumps over"]'

or follow the stream from outside while it runs:

    world-aws dev examples.streaming:app                     # in one terminal
    curl -s -X POST "$WORLD_AWS_API/runs" -H 'content-type: application/json' \\
        -d '{"workflow": "summarize", "args": [["a b", "c"]]}'
    world-aws stream RUN_ID --follow                         # one JSON value per line
    curl -s "$WORLD_AWS_API/runs/RUN_ID/streams/default?start_index=0&wait=10"

From Python: ``async for update in runtime.get_run(run_id).readable(): ...``. A step
that is retried writes its values again; readers still see each one once.
"""

from __future__ import annotations

from world_aws import Workflows, get_writable

app = Workflows()


@app.step
def count_words(doc: str) -> int:
    progress = get_writable()
    progress.write({"doc": doc, "status": "reading"})
    words = len(doc.split())
    progress.write({"doc": doc, "status": "counted", "words": words})
    return words


@app.step
async def report(total: int) -> str:
    progress = get_writable()
    await progress.write({"status": "done", "words": total})
    await progress.close()  # readers stop here
    return f"{total} words"


@app.workflow
async def summarize(docs: list[str]) -> dict[str, object]:
    counts = [await count_words(doc) for doc in docs]
    return {"counts": counts, "summary": await report(sum(counts))}
