import pyro
import pytest
import torch

_THREADS = torch.get_num_threads()  # the session's count, before any test changes it
_MKLDNN = torch.backends.mkldnn.enabled


@pytest.fixture(autouse=True)
def _clean_pyro():
    """Every test starts with an empty param store and a fixed seed (tests state their own tolerances)."""
    pyro.clear_param_store()
    pyro.set_rng_seed(0)
    yield
    pyro.clear_param_store()


@pytest.fixture(autouse=True)
def _restore_torch_threads():
    """Analyses and study simulations set torch to one thread for their run (``torch.set_num_threads(1)``); after
    each test the session's own count is set again (a module fixture may run such an analysis before any test's own
    fixture starts), so no test runs under another's setting. (On some CPUs oneDNN aborts the process in a ResNet's
    convolution backward run at one thread after a CNN's: the physics DQN tests after the design smoke runs did.)"""
    yield
    if torch.get_num_threads() != _THREADS:
        torch.set_num_threads(_THREADS)
    torch.backends.mkldnn.enabled = _MKLDNN  # (a test that compares runs exactly may turn oneDNN off)


@pytest.fixture
def float64():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)
