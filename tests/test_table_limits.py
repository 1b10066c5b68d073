"""Time limits that grow with the connection table (natbench.duts.tablework, natbench.duts.steps.TimeLimits): the limit
of a command declaring a ``cost`` follows N and the rate measured on the DUT, above a floor; each comparison of the
rule is tested on both sides."""

from __future__ import annotations

import pytest

from natbench.duts.recipes import Command
from natbench.duts.recipes.cost import TableWork
from natbench.duts.steps import TimeLimits
from natbench.duts.tablework import MARGIN, MIN_MEASURED, TableScale

DELETE, LIST = TableWork.DELETE, TableWork.LIST


def scale(connections: int = 0, **measured: tuple[int, float]) -> TableScale:
    """A table of the point's ``connections`` with one delete measurement per keyword (its name is ignored)."""
    table = TableScale(connections=connections)
    for n, seconds in measured.values():
        table.observe(DELETE, n, seconds)
    return table


def test_before_any_rate_is_measured_the_floor_is_the_limit_and_the_error_says_so() -> None:
    limit = scale(25_000_000).limit(DELETE, floor=120.0)
    assert limit.seconds == 120.0 and limit.basis is None
    assert limit.words() == (
        "its limit 120 s for deleting 25,000,000 connections: the floor (no delete rate measured on this DUT yet)"
    )


def test_the_limit_is_the_margin_times_n_over_the_measured_rate_and_names_both() -> None:
    table = scale(25_000_000, a=(6_250_000, 34.72))  # 180,012 connections/s
    limit = table.limit(DELETE, floor=120.0)
    assert limit.seconds == pytest.approx(MARGIN * 25_000_000 * 34.72 / 6_250_000)  # 555.5 s
    assert limit.basis is not None and limit.basis.connections == 6_250_000
    words = limit.words()
    assert "for deleting 25,000,000 connections: 4 x N / 180,012 connections/s = 555.5 s, floor 120 s" in words
    assert "the delete rate measured on this DUT: 6,250,000 connections in 34.7 s" in words


def test_n_is_the_larger_of_the_points_connections_and_the_last_count() -> None:
    table = scale(1_000_000, a=(1_000_000, 1.0))  # 1M/s: 4 s per million
    table.counted = 2_000_000  # more in the table than the point's N (a capacity probe, a left-over)
    assert table.size == 2_000_000 and table.limit(DELETE, floor=1.0).seconds == pytest.approx(8.0)
    table.counted = 999_999  # fewer: the point's N
    assert table.size == 1_000_000 and table.limit(DELETE, floor=1.0).seconds == pytest.approx(4.0)
    table.counted = None
    assert table.size == 1_000_000


@pytest.mark.parametrize(
    ("n", "expected"),
    [(29_999_999, 120.0), (30_000_000, 120.0), (30_000_001, 4 * 30_000_001 / 1_000_000)],
    ids=["scaled-below-floor", "scaled-at-floor", "scaled-above-floor"],
)
def test_the_floor_holds_until_the_scaled_limit_passes_it(n: int, expected: float) -> None:
    table = scale(n, a=(1_000_000, 1.0))  # 4 x N / 1M/s: 120 s at N = 30M
    assert table.limit(DELETE, floor=120.0).seconds == pytest.approx(expected)


def test_the_rate_is_the_slowest_at_the_largest_table_measured() -> None:
    table = scale(
        25_000_000,
        small=(1_560_000, 5.4),  # 289k/s
        big=(6_250_000, 34.7),  # 180k/s
        big_slow=(6_250_000, 41.7),  # 150k/s: the one used
        small_slow=(1_000_000, 20.0),  # 50k/s, but at a smaller table: not used
    )
    basis = table.rate(DELETE)
    assert basis is not None and (basis.connections, basis.seconds) == (6_250_000, 41.7)
    assert table.rate(LIST) is None  # each work has its own rate


@pytest.mark.parametrize(("n", "kept"), [(MIN_MEASURED - 1, False), (MIN_MEASURED, True)])
def test_too_few_connections_say_nothing_of_the_rate(n: int, kept: bool) -> None:
    table = TableScale()
    table.observe(DELETE, n, 0.5)
    assert (table.rate(DELETE) is not None) is kept


@pytest.mark.parametrize(("seconds", "kept"), [(0.0, False), (1e-6, True)])
def test_a_measurement_without_time_says_nothing(seconds: float, kept: bool) -> None:
    table = TableScale()
    table.observe(DELETE, 10_000, seconds)
    assert (table.rate(DELETE) is not None) is kept


def test_a_delete_measures_the_connections_counted_before_it_and_leaves_the_table_empty() -> None:
    table = TableScale(connections=5_000_000)
    table.done(DELETE, 3.0)  # not counted since it was last emptied: nothing to measure
    assert table.rate(DELETE) is None and table.counted == 0
    table.done(DELETE, 0.01)  # counted 0: an empty table's delete is no rate either
    assert table.rate(DELETE) is None
    table.counted = 2_000_000
    table.done(DELETE, 8.0)
    basis = table.rate(DELETE)
    assert basis is not None and basis.rate == 250_000 and table.counted == 0


def test_a_listing_measures_what_it_listed() -> None:
    table = TableScale(connections=5_000_000)
    table.done(LIST, 2.0)  # a listing that gave no count: nothing
    assert table.rate(LIST) is None
    table.done(LIST, 2.0, listed=1_000_000)
    basis = table.rate(LIST)
    assert basis is not None and basis.rate == 500_000
    assert table.limit(LIST, floor=1.0).seconds == pytest.approx(MARGIN * 5_000_000 / 500_000)


def test_time_limits_scale_only_commands_declaring_a_cost_and_a_declared_timeout_is_their_floor() -> None:
    table = scale(10_000_000, a=(1_000_000, 2.0))  # 500k/s: 80 s for 10M
    limits = TimeLimits(table=table, floor=120.0)
    assert limits.command(Command(run="conntrack -F", cost="delete")) == 120.0  # 80 s scaled: the executor's floor
    assert limits.command(Command(run="conntrack -F", cost="delete", timeout=30)) == pytest.approx(80.0)
    assert limits.command(Command(run="conntrack -F", cost="delete", timeout=300)) == 300.0
    assert limits.command(Command(run="conntrack -C")) is None  # no cost: the executor's command timeout
    assert limits.command(Command(run="conntrack -C", timeout=7)) == 7
    assert TimeLimits().command(Command(run="conntrack -F", cost="delete")) is None  # no table known: as before
    table.connections = 100_000_000
    assert limits.command(Command(run="conntrack -F", cost="delete")) == pytest.approx(800.0)  # follows N


def test_a_batch_of_commands_with_a_cost_adds_their_scaled_limits() -> None:
    table = scale(10_000_000, a=(1_000_000, 2.0))
    limits = TimeLimits(table=table, floor=10.0, batch_share=5.0)
    cmds = [Command(run="true", timeout=1), Command(run="conntrack -F", cost="delete"), Command(run="true")]
    assert limits.batch(cmds) == pytest.approx(1 + 80 + 5)


@pytest.mark.parametrize(
    ("n", "expected"),
    [(2_999_999, 120.0), (3_000_000, 120.0), (50_000_000, 2000.0)],
    ids=["stated-below-floor", "stated-at-floor", "stated-above-floor"],
)
def test_before_a_measurement_the_recipes_stated_rate_sets_the_limit_without_margin(n: int, expected: float) -> None:
    table = TableScale(connections=n, stated={DELETE: 25_000})  # N / 25k: 120 s at N = 3M
    limit = table.limit(DELETE, floor=120.0)
    assert limit.seconds == pytest.approx(expected)
    assert limit.words().endswith(
        "floor 120 s; the slowest delete rate the recipe allows for (none measured on this DUT yet)"
    )
    table.observe(DELETE, 1_000_000, 1.0)  # once measured, the measurement and the margin
    assert table.limit(DELETE, floor=120.0).seconds == pytest.approx(max(120.0, 4 * n / 1_000_000))
    assert table.limit(LIST, floor=120.0).basis is None  # each work has its own: listing states none here
    assert table.limit(LIST, floor=120.0).seconds == 120.0


def test_a_recipe_states_its_rates_in_connections_per_second_and_the_dut_takes_them() -> None:
    from natbench.duts.executors import LocalExecutor
    from natbench.duts.recipe_dut import RecipeDut
    from natbench.duts.recipes import load_recipe, parse_recipe
    from natbench.errors import RecipeError

    base = "recipe: r\nstateful: false\nsteps:\n  setup: ['true']\n  teardown: ['true']\n"
    recipe = parse_recipe(base + "rates: {delete: 25k, list: 2^14}\n", "r.yaml")
    assert recipe.rates is not None and (recipe.rates.delete, recipe.rates.list) == (25_000, 16_384)
    assert RecipeDut("d", recipe, LocalExecutor()).table.stated == {DELETE: 25_000, LIST: 16_384}
    assert RecipeDut("d", parse_recipe(base, "r.yaml"), LocalExecutor()).table.stated == {}
    for bad in ("0", "-1", "fast", "true", "{sort: 1}"):
        with pytest.raises(RecipeError, match=r"r\.yaml:6: rates\."):
            parse_recipe(base + f"rates: {{delete: {bad}}}\n", "r.yaml")
    shipped = load_recipe("iptables-nat44")
    assert shipped.rates is not None and shipped.rates.delete == 25_000
