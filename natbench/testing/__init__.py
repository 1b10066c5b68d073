"""Test helpers shipped with natbench: fakes for unit tests of the core (:mod:`natbench.testing.fakes`) and
synthetic run directories (:mod:`natbench.testing.rundir`). Nothing outside tests uses them."""

from natbench.testing.fakes import FakeDut, FakeModel, FakeTester, MemoryFakeDut, fake_pair, with_model

__all__ = ["FakeDut", "FakeModel", "FakeTester", "MemoryFakeDut", "fake_pair", "with_model"]
