"""A step that fails its first attempt, then a sleep (``WORKFLOW_APP=napping_app:app``).

The step's second attempt arrives by message on the step queue, and its last completer's
continuation publishes the sleep's wake-up to the workflow queue.
"""

from world_aws import RetryableError, Workflows, get_step_metadata, sleep

app = Workflows()


@app.step(name="napping_app.fetch", max_retries=1)
def fetch(label: str) -> str:
    if get_step_metadata().attempt == 1:
        raise RetryableError("not yet", retry_after=0)
    return f"fetched {label}"


@app.workflow(name="napping_app.nap")
async def nap(label: str) -> str:
    value = await fetch(label)
    await sleep(60)
    return value
