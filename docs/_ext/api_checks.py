"""Cross-reference resolution and API coverage for the structpred reference.

Docstrings are written for the module they live in: ``:class:`GapSampling``` in
``structpred.solvers.bcfw`` means ``structpred.solvers.driver.GapSampling``, and the reference
renders the class under ``structpred.solvers`` (where users import it).  ``missing-reference``
resolves such a name to the one documented object whose full name ends with it (preferring the
page's module), and accepts, as plain text, a name that exists in the library but is not rendered
(a private helper, an internal module).  Anything else stays a warning, which ``-W`` makes an
error: a reference to a name that does not exist, or a misspelt one, fails the build.

At the end of reading, every public name of the documented packages (their ``__all__``; for
:mod:`structpred.metrics`, its public functions) must have been rendered, or the build warns.
"""

from __future__ import annotations

import importlib
import inspect
import sys

from sphinx.util import logging
from sphinx.util.nodes import make_refnode

log = logging.getLogger(__name__)

#: packages whose public names must each appear in the reference
PACKAGES = ("structpred.estimators", "structpred.outputs", "structpred.surrogates", "structpred.solvers",
            "structpred.features", "structpred.metrics")

#: py-domain roles -> object types they may resolve to
ROLE_TYPES = {"class": ("class", "exception"), "exc": ("exception", "class"), "func": ("function", "method"),
              "meth": ("method", "function", "property", "classmethod", "staticmethod"),
              "attr": ("attribute", "property", "data"), "data": ("data", "attribute"), "obj": None,
              "mod": ("module",), "const": ("data", "attribute")}


def public_names(modname: str) -> list[str]:
    """A module's public names: ``__all__``, else the functions and classes it defines."""
    mod = importlib.import_module(modname)
    if hasattr(mod, "__all__"):
        return list(mod.__all__)
    return [n for n, obj in vars(mod).items() if not n.startswith("_")
            and (inspect.isfunction(obj) or inspect.isclass(obj)) and getattr(obj, "__module__", None) == modname]


def _exists(target: str, context: str | None, cls: str | None = None) -> bool:
    """``target`` names a module or an attribute path in the structpred package (looked up from
    the page's module first, then in every loaded structpred module)."""
    parts = target.split(".")
    if target.startswith("structpred"):
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for p in parts[cut:]:
                    obj = getattr(obj, p)
                return True
            except AttributeError:
                return False
        return False
    roots = [m for name, m in sorted(sys.modules.items()) if name.startswith("structpred") and m is not None]
    if context and context in sys.modules:
        roots.insert(0, sys.modules[context])
        if cls and hasattr(sys.modules[context], cls):
            roots.insert(0, getattr(sys.modules[context], cls))
    return any(_has_path(root, parts) for root in roots)


def _has_path(obj, parts) -> bool:
    """``obj.parts[0].parts[1]...`` exists; the last part may be an attribute that a class's
    ``__init__`` sets (``self.<name> = ...``)."""
    for i, p in enumerate(parts):
        if hasattr(obj, p):
            obj = getattr(obj, p)
            continue
        if i == len(parts) - 1 and inspect.isclass(obj):
            try:
                return f"self.{p} =" in inspect.getsource(obj)
            except (OSError, TypeError):
                return False
        return False
    return True


def resolve(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip(".~")
    role = node.get("reftype")
    domain = env.get_domain("py")
    types = ROLE_TYPES.get(role)
    context = node.get("py:module")
    cands = [name for name, obj in domain.objects.items()
             if (name == target or name.endswith("." + target)) and (types is None or obj.objtype in types)]
    cls = node.get("py:class")
    if len(cands) > 1:   # prefer the page's class, then its module
        for prefix in ([f"{context}.{cls}."] if context and cls else []) + ([f"{context}."] if context else []):
            local = [c for c in cands if c.startswith(prefix)]
            if local:
                cands = local
                break
    if len(cands) == 1:
        obj = domain.objects[cands[0]]
        return make_refnode(app.builder, node["refdoc"], obj.docname, obj.node_id, contnode, cands[0])
    if _exists(target, context, cls):
        return contnode
    return None


def check_coverage(app, env):
    documented = set(env.get_domain("py").objects)
    for modname in PACKAGES:
        for name in public_names(modname):
            if f"{modname}.{name}" not in documented:
                log.warning("%s.%s is public but not in the API reference (docs/api/)", modname, name,
                            type="structpred", subtype="api")


def setup(app):
    app.connect("missing-reference", resolve)
    app.connect("env-check-consistency", check_coverage)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
