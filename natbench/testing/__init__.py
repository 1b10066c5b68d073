"""Test helpers shipped with natbench: fakes for unit tests of the core (:mod:`natbench.testing.fakes`), synthetic
run directories (:mod:`natbench.testing.rundir`), and DUTs modelled from the RFC text
(:mod:`natbench.testing.dutmodels`) behind the tester and DUT protocols on a simulated clock
(:mod:`natbench.testing.modelled`), which the tests and bench/ drive through natbench's own procedures. Nothing
outside tests and bench/ uses them."""

from natbench.testing.fakes import FakeDut, FakeModel, FakeTester, MemoryFakeDut, fake_pair, with_model

__all__ = ["FakeDut", "FakeModel", "FakeTester", "MemoryFakeDut", "fake_pair", "with_model"]
