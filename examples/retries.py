"""Retries: a flaky step, a step that asks to be retried later, and a fatal failure with a fallback.

    world-aws run examples.retries:app settle_invoice --arg '"inv-7"'

Every step attempt is recorded: ``world-aws run`` prints the timeline, where the
``attempt`` column shows each retry.
"""

from __future__ import annotations

from world_aws import FatalError, RetryableError, StepFailedError, Workflows, get_step_metadata

app = Workflows()


@app.step(max_retries=3)  # up to 4 attempts
def fetch_invoice(invoice: str) -> dict[str, object]:
    attempt = get_step_metadata().attempt  # 1-based
    if attempt < 3:
        # Any exception retries the step (after a short backoff) until the attempts run out.
        raise ConnectionError(f"billing service unavailable (attempt {attempt})")
    return {"invoice": invoice, "cents": 4200, "fetched_on_attempt": attempt}


@app.step(max_retries=2)
def reserve_credit(invoice: str, cents: int) -> str:
    if get_step_metadata().attempt == 1:
        # The service told us when to come back: the retry waits at least 1 s.
        raise RetryableError("credit service is rate limiting", retry_after=1)
    return f"credit-{invoice}-{cents}"


@app.step(max_retries=5)
def charge_card(card: str, cents: int) -> str:
    if card.startswith("expired"):
        # Retrying cannot help: FatalError fails the step at once, whatever max_retries says.
        raise FatalError(f"card {card} has expired")
    return f"charged {cents} to {card}"


@app.step
def mail_invoice(invoice: str) -> str:
    return f"mailed {invoice} for payment by bank transfer"


@app.workflow
async def settle_invoice(invoice: str, card: str = "expired-4242") -> dict[str, object]:
    details = await fetch_invoice(invoice)
    cents = int(str(details["cents"]))
    credit = await reserve_credit(invoice, cents)
    try:
        payment = await charge_card(card, cents)
    except StepFailedError as failure:
        # The step failed for good; the workflow decides what happens next.
        payment = f"{await mail_invoice(invoice)} ({failure.error_type}: {failure.error_message})"
    return {"details": details, "credit": credit, "payment": payment}
