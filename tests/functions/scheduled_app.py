"""An app with one hourly schedule, for the scheduler function's test (``WORKFLOW_APP=scheduled_app:app``)."""

from world_aws import Workflows

app = Workflows()


@app.step(name="scheduled_app.count")
def count(label: str) -> str:
    return f"counted {label}"


@app.workflow(name="scheduled_app.hourly")
async def hourly(label: str) -> str:
    return await count(label)


app.schedule(hourly, "rate(1 hour)", name="hourly", args=("rows",))
