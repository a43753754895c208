"""``[[captures]]``: pcap files of link directions (``crates/l4sim-core/src/capture.rs``,
docs/captures.md). A capture is not part of the core's configuration: :func:`l4sim.run`
opens the files in the run's output directory and hands them to the simulation."""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath
from typing import Annotated, Literal

from pydantic import Field, field_validator

from l4sim.scenario.fields import _Model

MAX_SNAPLEN = 262_144
"""libpcap's largest snap length (``MAXIMUM_SNAPLEN``), as ``capture.rs``."""

RESULT_FILES = ("summary.json", "flows.parquet", "queues.parquet", "scenario.toml")
"""The files ``l4sim run`` writes itself (``l4sim.engine.results.FILES``): no capture may take
their name."""


class Capture(_Model):
    """A pcap capture of the packets leaving one link direction's qdisc (what tcpdump on
    the egress interface sees): synthesised IPv4 or IPv6 + TCP/UDP headers, simulated
    time."""

    link: str = Field(
        description='The link direction, "a->b" with node names: the packets a sends to b '
        '(e.g. "r0->r1", the bottleneck of a dumbbell).'
    )
    file: str = Field(
        description="The pcap file: a relative path inside the run's output directory "
        "(no absolute path, no `..`), e.g. `bottleneck.pcap` or `pcap/acks.pcap`."
    )
    snaplen: Annotated[int, Field(ge=1, le=MAX_SNAPLEN)] = Field(
        128,
        description="Bytes kept of each packet (the headers and zeros standing for the "
        "payload); the original length is kept in full.",
    )
    ip: Literal[4, 6] = Field(
        4,
        description="The IP version of the synthesised headers: 4 (node i is 10.0.0.i+1) or "
        "6 (node i is 2001:db8::i+1, RFC 3849; the ECN field in the traffic class; the "
        "packet is 20 bytes longer than the simulated one, whose size counts a 20-byte IP "
        "header). Emulated runs write the kernel's packets as they are.",
    )
    flows: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)] | None = Field(
        None,
        description="Only these flows, by index (as in summary.json, after `count`); "
        "all flows when left out.",
    )

    @field_validator("file")
    @classmethod
    def _inside_out_dir(cls, v: str) -> str:
        posix, windows = PurePosixPath(v), PureWindowsPath(v)
        if not v.strip():
            raise ValueError("is empty; give a file name such as 'bottleneck.pcap'")
        if posix.is_absolute() or windows.is_absolute() or windows.drive:
            raise ValueError(
                "is an absolute path; give a path relative to the run's output directory, "
                "which a run never writes outside of"
            )
        if ".." in posix.parts or ".." in windows.parts:
            raise ValueError(
                "contains '..'; give a path inside the run's output directory, which a run "
                "never writes outside of"
            )
        if posix.name in RESULT_FILES and len(posix.parts) == 1:
            raise ValueError(f"would replace the run's own {posix.name}; choose another name")
        return v
