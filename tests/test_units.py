"""Unit strings: parsed once, exactly, with one-sentence errors."""

import pytest

from l4sim.units import (
    QueueLimit,
    UnitError,
    format_rate,
    format_size,
    format_time,
    parse_queue_limit,
    parse_rate,
    parse_size,
    parse_time,
)


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("10Mbps", 10_000_000),
        ("1Gbps", 1_000_000_000),
        ("500kbps", 500_000),
        ("500Kbps", 500_000),
        ("100bps", 100),
        ("2.5Mbps", 2_500_000),
        ("10 Mbps", 10_000_000),
        ("1Tbps", 10**12),
    ],
)
def test_rates(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("20ms", 20_000_000),
        ("1s", 1_000_000_000),
        ("1.5s", 1_500_000_000),
        ("100us", 100_000),
        ("100µs", 100_000),
        ("5ns", 5),
        ("0s", 0),
        ("0.1us", 100),
    ],
)
def test_times(text, ns):
    assert parse_time(text) == ns


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [
        ("1500B", 1500),
        ("150KB", 150_000),
        ("150kB", 150_000),
        ("1MB", 1_000_000),
        ("1KiB", 1024),
        ("1.5MiB", 1_572_864),
        ("1GiB", 2**30),
    ],
)
def test_sizes(text, nbytes):
    assert parse_size(text) == nbytes


def test_queue_limits():
    assert parse_queue_limit("100p") == QueueLimit(packets=100)
    assert parse_queue_limit("150KB") == QueueLimit(bytes=150_000)
    assert str(parse_queue_limit("100p")) == "100p"
    assert str(parse_queue_limit("150KB")) == "150KB"


@pytest.mark.parametrize(
    ("parse", "value", "fragment"),
    [
        (parse_rate, "10", "has no unit"),
        (parse_rate, 10, "has no unit"),
        (parse_rate, 10.5, "has no unit"),
        (parse_rate, "-10Mbps", "negative"),
        (parse_rate, "10mbps", "unknown unit 'mbps'"),
        (parse_rate, "fast", "is not a rate"),
        (parse_rate, True, "is not a rate"),
        (parse_time, "20", "has no unit"),
        (parse_time, "-1s", "negative"),
        (parse_time, "1.5ns", "whole number of nanoseconds"),
        (parse_time, "20 minutes", "unknown unit"),
        (parse_size, "1500", "has no unit"),
        (parse_size, "1.5B", "whole number of bytes"),
        (parse_queue_limit, "100", "has no unit"),
        (parse_queue_limit, "1.5p", "whole number of packets"),
        (parse_queue_limit, "-5p", "negative"),
    ],
)
def test_rejections_are_one_sentence(parse, value, fragment):
    with pytest.raises(UnitError) as info:
        parse(value)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message
    assert repr(value) in message


def test_errors_name_what_is_allowed():
    with pytest.raises(UnitError, match=r"bps, kbps, Mbps, Gbps"):
        parse_rate("10")
    with pytest.raises(UnitError, match=r"ns, us, ms, s"):
        parse_time("10")
    with pytest.raises(UnitError, match=r"B, KB, MB, GB, KiB, MiB, GiB"):
        parse_size("10")
    with pytest.raises(UnitError, match=r"'100p' \(packets\)"):
        parse_queue_limit("10")


@pytest.mark.parametrize("bps", [0, 1, 999, 10_000_000, 1_500_000, 10**9, 123_456_789])
def test_rate_round_trip(bps):
    assert parse_rate(format_rate(bps)) == bps


@pytest.mark.parametrize("ns", [0, 5, 1_500, 20_000_000, 1_500_000_000, 60 * 10**9])
def test_time_round_trip(ns):
    assert parse_time(format_time(ns)) == ns


@pytest.mark.parametrize("nbytes", [1, 1500, 1536, 150_000, 2**20, 10**9])
def test_size_round_trip(nbytes):
    assert parse_size(format_size(nbytes)) == nbytes


def test_formats_are_short():
    assert format_rate(10_000_000) == "10Mbps"
    assert format_time(20_000_000) == "20ms"
    assert format_time(0) == "0s"
    assert format_size(150_000) == "150KB"
    assert format_size(2048) == "2KiB"
