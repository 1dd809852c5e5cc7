"""Demo Celery tasks, run as tools through the ``celery.task`` tool kind (see demo tools)."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from celery import shared_task


@shared_task(name="demo.word_stats")  # type: ignore[untyped-decorator]
def word_stats(text: str, top: int = 3) -> dict[str, Any]:
    """Count the words of ``text`` and name the ``top`` most frequent."""
    words = [word.strip(".,;:!?\"'()").lower() for word in text.split()]
    counts = Counter(word for word in words if word)
    return {"words": sum(counts.values()), "distinct": len(counts), "top": [w for w, _ in counts.most_common(top)]}


@shared_task(name="demo.divide")  # type: ignore[untyped-decorator]
def divide(a: float, b: float) -> float:
    """``a / b``; dividing by zero raises (the tool gives an isError result, not the traceback)."""
    return a / b


@shared_task(name="demo.sleep")  # type: ignore[untyped-decorator]
def sleep(seconds: float) -> dict[str, float]:
    """Sleep ``seconds`` (at most 30), then say how long it slept."""
    seconds = max(0.0, min(float(seconds), 30.0))
    time.sleep(seconds)
    return {"slept": seconds}
