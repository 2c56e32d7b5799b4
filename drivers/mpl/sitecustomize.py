# codexec's sitecustomize, on PYTHONPATH beside the figures backend: puts the installed package
# directories ($CODEXEC_PYTHON_PACKAGES: a session's own, then the global environment) after the
# standard library and before the system's site- and dist-packages. PYTHONPATH would put them
# first, where a planted `statistics.py` would shadow the standard library; at the end, an older
# system copy of a dependency (Debian's numpy) would win over the one pip installed with them, and
# the installed package would fail to import. Then it runs the interpreter's own sitecustomize, if
# it has one (Debian ships one), as Python would have.
import importlib.machinery
import importlib.util
import os
import sys


def first_site(path):
    """Where the system's site- and dist-packages begin on `path` (its end if none are there)."""
    import site

    sites = {os.path.abspath(p) for p in site.getsitepackages()}
    return next((i for i, e in enumerate(path) if os.path.abspath(e or ".") in sites), len(path))


def _place_packages():
    here = os.path.dirname(os.path.abspath(__file__))
    entries = [e for e in os.environ.get("CODEXEC_PYTHON_PACKAGES", "").split(":") if e and e not in sys.path]
    at = first_site(sys.path)
    sys.path[at:at] = entries
    others = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_place_packages()
del _place_packages
