"""A UDP flow's media parts: its ``source`` (``cbr``, ``video``, ``trace``, ``periodic``),
its ``feedback`` (RFC 8888, or UDP Prague's own ACKs) and its congestion control ``cc``
(``none``, ``scream``, ``udp_prague``); config.rs's
``SourceConfig``, ``FeedbackConfig`` and ``DatagramCcConfig`` (``crates/l4sim-core/src/app/``).

A frame-size trace is a text file with one frame's payload size in bytes per line (blank
lines and ``#`` comments skipped), read through :mod:`l4sim.files` and handed to the core
as data; every problem is one sentence naming the file and the line.
"""

from __future__ import annotations

import os
import typing
from array import array
from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from l4sim import files
from l4sim.scenario.fields import (
    CoreKey,
    Count,
    PositiveTime,
    Rate,
    Size,
    Time,
    _Model,
    writes,
)

__all__ = [
    "MAX_FRAMES",
    "MAX_FRAME_BYTES",
    "MEDIA_MODELS",
    "SHORTHAND_KINDS",
    "Cbr",
    "FeedbackSpec",
    "FrameTraceError",
    "NoCc",
    "Periodic",
    "PragueAcks",
    "Scream",
    "Source",
    "TraceSource",
    "UdpPrague",
    "Video",
    "load_frame_trace",
]

#: Most frames in a trace (``app::trace::MAX_TRACE_FRAMES``).
MAX_FRAMES = 10_000_000
#: Largest frame in a trace: 64 MiB.
MAX_FRAME_BYTES = 64 * 2**20
#: Largest frame-size trace file.
MAX_TRACE_FILE_BYTES = 128 * 2**20


class FrameTraceError(ValueError):
    """A frame-size trace that cannot be used, in one sentence."""


def load_frame_trace(path: str) -> array[int]:
    """The frame sizes (bytes) of the trace file ``path`` (absolute), checked."""
    try:
        st = os.stat(path)
    except OSError:
        st = None
    return _load(path, st.st_mtime_ns if st else 0, st.st_size if st else 0)


@lru_cache(maxsize=16)
def _load(path: str, _mtime: int, _size: int) -> array[int]:
    out = array("I")
    with files.open_input(path, "frame trace", MAX_TRACE_FILE_BYTES, FrameTraceError) as fh:
        for i, raw in enumerate(fh, start=1):
            line = raw.split(b"#", 1)[0].strip()
            if not line:
                continue
            if not line.isdigit() or not 0 < int(line) <= MAX_FRAME_BYTES:
                shown = raw.rstrip(b"\r\n")[:20].decode("ascii", "replace")
                raise FrameTraceError(
                    f"frame trace {path!r} line {i} ({shown!r}) is not a frame size: give "
                    f"a whole number of bytes from 1 to {MAX_FRAME_BYTES} per line"
                )
            if len(out) == MAX_FRAMES:
                raise FrameTraceError(
                    f"frame trace {path!r} has more than the {MAX_FRAMES} frames allowed"
                )
            out.append(int(line))
    if not out:
        raise FrameTraceError(f"frame trace {path!r} is empty; it needs one frame size per line")
    return out


def _check_trace_file(spec: str) -> str:
    if not spec.strip():
        raise FrameTraceError("the frame trace path is empty; give a file")
    path = files.resolve(spec)
    load_frame_trace(path)  # read and checked now: errors name the key
    return path


Fps = Annotated[float, Field(gt=0.0, le=1000.0, allow_inf_nan=False)]
Pacing = Annotated[float, Field(ge=0.0, le=1000.0, allow_inf_nan=False)]


def _pacing_zero_or_above_one(v: float) -> float:
    if 0.0 < v < 1.0:
        raise ValueError(
            f"pacing {v} would send slower than the source produces; give 0 (each frame at "
            "once) or a factor of at least 1"
        )
    return v


PacingFactor = Annotated[Pacing, AfterValidator(_pacing_zero_or_above_one)]

_FRAME_KEYS: dict[str, CoreKey] = {"deadline": "deadline_ns"}


class Cbr(_Model):
    """Constant bit rate: ``packet_size`` packets at the flow's ``rate`` (the default)."""

    kind: Literal["cbr"] = "cbr"


class Video(_Model):
    """A video encoder model: ``fps`` frames a second following the flow's ``rate`` as its
    target, after a first-order ``lag``; sizes vary by a Laplacian of scale ``noise``
    (cisco/syncodecs' 0.15); a key frame, ``key_ratio`` times larger, first and every
    ``key_interval`` frames (0: only first); packets paced at ``pacing`` x the target
    (libwebrtc's 2.5; 0: each frame in one burst)."""

    kind: Literal["video"] = "video"
    fps: Fps = 30.0
    lag: Time = "0s"  # type: ignore[assignment]
    noise: Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)] = 0.15
    key_interval: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0
    key_ratio: Annotated[float, Field(ge=1.0, le=100.0, allow_inf_nan=False)] = 4.0
    pacing: PacingFactor = 2.5
    deadline: PositiveTime = "150ms"  # type: ignore[assignment]

    _core_keys: ClassVar[dict[str, CoreKey]] = {"lag": "lag_ns", **_FRAME_KEYS}


class TraceSource(_Model):
    """Frame sizes from ``file`` (one size in bytes per line, relative to the scenario
    file), ``fps`` frames a second, looping; paced at ``pacing`` x the trace's mean rate."""

    kind: Literal["trace"] = "trace"
    file: Annotated[str, AfterValidator(_check_trace_file)] = Field(
        description="The frame-size file: one frame's payload bytes per line (`#` comments "
        "and blank lines skipped), relative to the scenario file."
    )
    fps: Fps = 30.0
    pacing: PacingFactor = 2.5
    deadline: PositiveTime = "150ms"  # type: ignore[assignment]

    _core_keys: ClassVar[dict[str, CoreKey]] = _FRAME_KEYS
    _core_skip: ClassVar[frozenset[str]] = frozenset({"kind", "file"})
    _core_derived: ClassVar[frozenset[str]] = frozenset({"frame_bytes"})

    def core_fields(self) -> dict[str, Any]:
        """The trace's frame sizes are handed to the core as data (read once, cached)."""
        return {**super().core_fields(), "frame_bytes": load_frame_trace(self.file).tolist()}


class Periodic(_Model):
    """A ``size``-byte message (payload) every ``interval``, each sent at once."""

    kind: Literal["periodic"] = "periodic"
    interval: PositiveTime
    size: Size = "100B"  # type: ignore[assignment]
    deadline: PositiveTime = "150ms"  # type: ignore[assignment]

    _core_keys: ClassVar[dict[str, CoreKey]] = {
        "interval": "interval_ns",
        "size": "message_bytes",
        **_FRAME_KEYS,
    }


def _kind_shorthand(v: Any) -> Any:
    """``source = "video"`` is ``source = { kind = "video" }``."""
    return {"kind": v} if isinstance(v, str) else v


Source = Annotated[
    Cbr | Video | TraceSource | Periodic,
    Field(discriminator="kind"),
    BeforeValidator(_kind_shorthand),
]


class FeedbackSpec(_Model):
    """RFC 8888 congestion-control feedback from the receiver every ``interval`` (SCReAM's
    receiver's 20 ms by default)."""

    kind: Literal["rfc8888"] = "rfc8888"
    interval: PositiveTime = "20ms"  # type: ignore[assignment]

    _core_keys: ClassVar[dict[str, CoreKey]] = {"interval": "interval_ns"}


class PragueAcks(_Model):
    """UDP Prague's own ACKs (L4STeam/udp_prague's receiver): one per data packet, at once,
    with cumulative received / CE / lost counters and the packet's timestamp echoed."""

    kind: Literal["prague"] = "prague"


Feedback = Annotated[
    FeedbackSpec | PragueAcks, Field(discriminator="kind"), BeforeValidator(_kind_shorthand)
]


class NoCc(_Model):
    """No congestion control: the source's rate, whatever the feedback says."""

    kind: Literal["none"] = "none"


class Scream(_Model):
    """SCReAM v2 (draft-ietf-ccwg-rfc8298bis-screamv2, Ericsson's reference code): a
    window of bytes in flight cut on CE marks (``mode = "l4s"``: by the marked fraction;
    ``"classic"``: by a fixed factor), loss and queue delay above half ``qdelay_target``;
    the encoder's target is the window over the RTT, within ``min_rate`` .. ``max_rate``,
    starting at ``start_rate`` (default: the flow's ``rate``). Defaults: the reference's
    BW test tool (``scream_sender.cpp``). ``rules``: the reference's current code
    (``latest``) or the commit its ``test-record.md`` ran (``2024-10-31``). Needs a frame
    source and ``feedback``."""

    kind: Literal["scream"] = "scream"
    mode: Literal["l4s", "classic"] = "l4s"
    min_rate: Rate = "1Mbps"  # type: ignore[assignment]
    max_rate: Rate = "500Mbps"  # type: ignore[assignment]
    start_rate: Rate | None = None
    qdelay_target: PositiveTime = "60ms"  # type: ignore[assignment]
    rules: Literal["latest", "2024-10-31"] = "latest"

    _core_keys: ClassVar[dict[str, CoreKey]] = {
        "min_rate": "min_rate_bps",
        "max_rate": "max_rate_bps",
        "start_rate": "start_rate_bps",
        "qdelay_target": "qdelay_target_ns",
    }

    @model_validator(mode="after")
    def _min_below_max(self) -> Scream:
        if self.min_rate > self.max_rate:
            raise ValueError(
                f"min_rate ({self.min_rate} bit/s) is above max_rate ({self.max_rate} bit/s); "
                "give a min_rate at most max_rate"
            )
        return self


class UdpPrague(_Model):
    """UDP Prague (L4STeam/udp_prague ``prague_cc.cpp``): bulk over a ``cbr`` source (the
    flow's ``rate`` caps it), frame mode over a ``video`` source (each frame paced over
    ``frame_budget``). Unset options take the reference's defaults."""

    kind: Literal["udp_prague"] = "udp_prague"
    init_rate: Rate | None = None
    init_window: Count | None = None
    min_rate: Rate | None = None
    max_rate: Rate | None = None
    frame_budget: PositiveTime | None = None

    #: The reference's rates (``prague_cc.h``: 12 500 B/s, 12.5 GB/s), for the check below.
    _DEFAULT_MIN: ClassVar[int] = 100_000
    _DEFAULT_MAX: ClassVar[int] = 100_000_000_000

    @model_validator(mode="after")
    def _rates_in_order(self) -> UdpPrague:
        lo = self.min_rate if self.min_rate is not None else self._DEFAULT_MIN
        hi = self.max_rate if self.max_rate is not None else self._DEFAULT_MAX
        init = self.init_rate if self.init_rate is not None else self._DEFAULT_MIN
        if not lo <= init <= hi:
            raise ValueError(
                f"udp_prague needs min_rate <= init_rate <= max_rate, not {lo} <= {init} <= "
                f"{hi} bit/s (unset: 100 kbit/s, 100 kbit/s, 100 Gbit/s)"
            )
        return self

    _core_keys: ClassVar[dict[str, CoreKey]] = {
        "init_rate": "init_rate_bps",
        "init_window": "init_window_pkts",
        "min_rate": "min_rate_bps",
        "max_rate": "max_rate_bps",
        "frame_budget": "frame_budget_ns",
    }


Cc = Annotated[
    NoCc | Scream | UdpPrague, Field(discriminator="kind"), BeforeValidator(_kind_shorthand)
]


def _kinds(union: Any) -> tuple[str, ...]:
    models = typing.get_args(typing.get_args(union)[0])
    return tuple(m.model_fields["kind"].default for m in models)


#: The kinds each media key (``source``, ``feedback``, ``cc``) also accepts as a plain
#: string (``source = "video"``; ``l4sim.schema`` says so in JSON Schema terms).
SHORTHAND_KINDS: tuple[tuple[str, ...], ...] = (_kinds(Source), _kinds(Feedback), _kinds(Cc))


#: The tables whose keys the core describes under their kind (``l4sim.schema``).
MEDIA_MODELS: tuple[type[_Model], ...] = (
    Video,
    TraceSource,
    Periodic,
    FeedbackSpec,
    PragueAcks,
    Scream,
    UdpPrague,
)


def with_kind(model: _Model) -> dict[str, Any]:
    """A source, feedback or cc table as config.rs has it: its kind and fields."""
    return {"kind": model.kind, **model.core_fields()}  # type: ignore[attr-defined]


@writes("source")
def source_core(source: Any) -> dict[str, Any]:
    return {} if source.kind == "cbr" else {"source": with_kind(source)}


@writes("feedback")
def feedback_core(feedback: Any) -> dict[str, Any]:
    return {"feedback": with_kind(feedback)}


@writes("cc")
def cc_core(cc: Any) -> dict[str, Any]:
    return {} if cc.kind == "none" else {"cc": with_kind(cc)}
