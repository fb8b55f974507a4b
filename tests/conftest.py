import pyro
import pytest
import torch


@pytest.fixture(autouse=True)
def _clean_pyro():
    """Every test starts with an empty param store and a fixed seed (tests state their own tolerances)."""
    pyro.clear_param_store()
    pyro.set_rng_seed(0)
    yield
    pyro.clear_param_store()


@pytest.fixture
def float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)
