"""A link direction's slotting (``slot`` / ``slot_reverse`` on a link): netem's ``slot``
(``tc-netem(8)``), which holds the packets that reach the far end of the link until the next
slot opens and releases them in one burst, at most ``packets`` / ``bytes`` per slot
(docs/links.md). The core's ``net/slot.rs`` holds the rules and their sources."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from l4sim.scenario.fields import Size, Time, _at_most, _Model
from l4sim.units import format_time

MAX_SLOT_NS = 10 * 10**9
"""Longest gap between slots (config.rs ``net::slot::MAX_SLOT_NS``): a sane bound, as every
retransmission timer of the flows through the link would fire first."""

MAX_SLOT_BUDGET = 2**31 - 1
"""Largest per-slot budget: netem keeps packets and bytes left in signed 32-bit counters."""

_NETEM = "netem's signed 32-bit budget"

SlotBytes = Annotated[Size, _at_most(1, MAX_SLOT_BUDGET, _NETEM)]


class Slot(_Model):
    """Slots open a drawn gap apart: uniform in [``min``, ``max``) (``max`` defaults to
    ``min``, as ``slot MIN_DELAY [MAX_DELAY]``), or with ``distribution = "normal"`` a mean
    ``delay`` and standard deviation ``jitter`` (``slot distribution normal DELAY JITTER``).
    Each slot releases the packets waiting, at most ``packets`` of them and ``bytes`` bytes
    (the packet that crosses ``bytes`` still leaves, as in netem); no limit by default."""

    min: Time | None = Field(None, description="Uniform form: the shortest gap between slots.")
    max: Time | None = Field(None, description="Uniform form: the longest gap (default: min).")
    distribution: Literal["normal"] | None = Field(
        None, description="'normal' for the distribution form (with delay and jitter)."
    )
    delay: Time | None = Field(None, description="Normal form: the mean gap between slots.")
    jitter: Time | None = Field(None, description="Normal form: the gap's standard deviation.")
    packets: Annotated[int, Field(gt=0), _at_most(1, MAX_SLOT_BUDGET, _NETEM)] | None = Field(
        None, description="Most packets released per slot."
    )
    bytes: SlotBytes | None = Field(None, description="Most bytes released per slot.")

    @model_validator(mode="after")
    def _form(self) -> Slot:
        uniform = self.min is not None or self.max is not None
        normal = self.distribution is not None or self.delay is not None or self.jitter is not None
        if uniform and normal:
            raise ValueError(
                "give slot min and max, or distribution with delay and jitter, not both"
            )
        if normal:
            if self.distribution is None:
                raise ValueError('slot delay and jitter need distribution = "normal"')
            if not (self.delay or self.jitter):
                raise ValueError("a normal slot needs a positive delay or jitter")
            for key in ("delay", "jitter"):
                value = getattr(self, key) or 0
                if value > MAX_SLOT_NS:
                    raise ValueError(
                        f"slot {key} {format_time(value)} is more than 10s (a sane bound)"
                    )
            return self
        if self.min is None:
            raise ValueError("slot needs min (and optionally max), or distribution and delay")
        top = self.min if self.max is None else self.max
        if self.min > top:
            raise ValueError(
                f"slot min {format_time(self.min)} is more than its max {format_time(top)}"
            )
        if top == 0:
            raise ValueError("slot max must be positive (a zero gap is no slotting)")
        if top > MAX_SLOT_NS:
            raise ValueError(f"slot max {format_time(top)} is more than 10s (a sane bound)")
        return self

    def to_core(self) -> dict[str, Any]:
        """config.rs's ``SlotConfig``."""
        out: dict[str, Any]
        if self.distribution is not None:
            out = {"dist": "normal", "delay_ns": self.delay or 0, "jitter_ns": self.jitter or 0}
        else:
            assert self.min is not None
            top = self.min if self.max is None else self.max
            out = {"dist": "uniform", "min_ns": self.min, "max_ns": top}
        if self.packets is not None:
            out["packets"] = self.packets
        if self.bytes is not None:
            out["bytes"] = self.bytes
        return out
