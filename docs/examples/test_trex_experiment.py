"""A natbench experiment for a hardware testbed: TRex + an iptables NAT44 DUT over SSH.

Seed 000 Figure 2 as pytest tests: maximum connection establishment rate and
throughput of iptables against the DUT's CPU cores at 4M connections (ids 1c-4M ...).

    NATBENCH_TREX=trex.lab NATBENCH_DUT_HOST=dut.lab \
    NATBENCH_DUT_PRIV_MAC=... NATBENCH_DUT_PUB_MAC=... \
    python -m pytest docs/examples/test_trex_experiment.py \
        --nb-testbed docs/examples/trex-testbed.yaml --nb-results results/trex

Every test is skipped with the reason when the variables are not set, the TRex client
library is missing, or the server or the DUT cannot be reached.
"""

import pytest

pytestmark = pytest.mark.trex

CORES = [1, 2, 4, 8, 16]


@pytest.mark.natbench_sweep(cores=CORES, connections=["4M"])
def test_cps_scales_with_cores(nb_measure):
    """Maximum connection establishment rate (seed 000 Fig. 2 row "cps"), 10 repetitions."""
    m = nb_measure("cps", repetitions=10, lower=0, upper="4M", error=1000, timeout=2, acceptance=0)
    assert len(m.values) == 10, f"repetitions without a value: {m.failed}"
    # the search did not hit its ceiling: the DUT, not the bound, limited the result
    assert all(not r.extra.get("at_upper_limit") for r in m.results)


@pytest.mark.natbench_sweep(cores=CORES, connections=["4M"])
def test_throughput(nb_measure):
    """Bidirectional throughput after phase 1 (per direction; reports show all frames per second)."""
    m = nb_measure(
        "throughput",
        repetitions=10,
        lower=0,
        upper="7.44M",
        error=1000,
        duration=60,
        gap=10,
        timeout=2,
        fill_rate="200k",
        acceptance=0,
    )
    assert len(m.values) == 10, f"repetitions without a value: {m.failed}"


def test_teardown_rate_at_4m(nb_measure):
    """Connection tear-down rate at 4M connections (seed 000 Fig. 5), single core."""
    m = nb_measure("teardown", cores=1, connections="4M", repetitions=10, fill_rate="200k", gap=10, timeout=2)
    assert m.median > 0
