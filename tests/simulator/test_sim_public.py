"""The public namespace of asyncwifi.testing, pinned (a name removed is a breaking change)."""

from __future__ import annotations

import asyncwifi.testing


def test_exported_names() -> None:
    assert asyncwifi.testing.__all__ == [
        "Faults",
        "Simulator",
        "SimulatorProcess",
        "make_webhook_payload",
    ]
    for name in asyncwifi.testing.__all__:
        assert getattr(asyncwifi.testing, name) is not None


def test_secrets_stay_out_of_reprs() -> None:
    sim = asyncwifi.testing.Simulator(events=10, contacts=3, organizations=2)
    assert sim.client_secret not in repr(sim)
    for credentials in sim.organizations:
        assert credentials.client_secret not in repr(sim.organizations)
        assert credentials.client_secret not in repr(sim.tenant(credentials.organization))
    proc = asyncwifi.testing.SimulatorProcess(client_secret="s3cr3t-value")
    assert "s3cr3t-value" not in repr(proc)
