# codexec's sitecustomize, on PYTHONPATH beside the figures backend: puts the installed package
# directories ($CODEXEC_PYTHON_PACKAGES: a session's own, then the global environment) at the END
# of sys.path, after the standard library and site-packages, where PYTHONPATH would put them first
# (a planted `statistics.py` there would shadow the standard library: issue #30). Then it runs the
# interpreter's own sitecustomize, if it has one (Debian ships one), as Python would have.
import importlib.machinery
import importlib.util
import os
import sys


def _place_packages():
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in os.environ.get("CODEXEC_PYTHON_PACKAGES", "").split(":"):
        if entry and entry not in sys.path:
            sys.path.append(entry)
    others = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_place_packages()
del _place_packages
