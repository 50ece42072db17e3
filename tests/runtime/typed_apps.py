"""Workflows and steps whose signatures name a dataclass, a pydantic model and an Enum (never registered)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from pydantic import BaseModel

from world_aws import Workflows

app = Workflows()


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


@dataclass(frozen=True)
class Order:
    order_id: str
    cents: int


class Label(BaseModel):
    to: str
    size: Size


@app.step
def label_for(order: Order, size: Size) -> Label:
    return Label(to=f"customer of {order.order_id}", size=size)


@app.workflow
async def ship(order: Order, size: Size = Size.SMALL) -> list[Label]:
    return [await label_for(order, size)]
