"""A workflow that puts a marker in every kind of payload the World stores or sends (the encryption scan).

Its input, a step's output, a step's error (with its stack), a hook's payload, a stream
value and a step input over 128 KiB all carry :data:`MARK`.
"""

from __future__ import annotations

import random
import string

from world_aws import FatalError, Workflows, create_hook, get_writable

app = Workflows()

MARK = "SEALED-MARKER-5b1e"
TOKEN = "sealed-approval"
BIG_INPUT_CHARS = 140 * 1024  # over the 128 KiB a message carries inline: S3


def big_text() -> str:
    """Over 128 KiB that zlib cannot shrink much, with the marker in the middle."""
    noise = random.Random(7)
    half = "".join(noise.choices(string.ascii_letters, k=BIG_INPUT_CHARS // 2))
    return half + MARK + half


@app.step
def shout(text: str) -> str:
    get_writable().write(f"streamed {MARK}")
    return f"output {MARK} of {text}"


@app.step
def measure(text: str) -> int:
    return len(text)


@app.step(max_retries=0)
def refuse(text: str) -> None:
    raise FatalError(f"refused {MARK} {text[:5]}")


@app.workflow
async def scan(text: str) -> dict[str, object]:
    out = await shout(text)
    size = await measure(big_text())
    try:
        await refuse(text)
        failed = ""
    except Exception as exc:  # the step's error stays in the log
        failed = str(exc)
    approval: str = await create_hook(token=TOKEN)
    return {"out": out, "size": size, "failed": failed, "approval": approval}
