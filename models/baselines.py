"""The protocols a scenario or a benchmark can run, by name: MetaRoCE and its four baselines
(docs/spec/transport.md section 10, MR-GBN; docs/benchmarks.md).

``rocev2``: IBTA RC go-back-N, 1.05 ms ACK timeout (MR-GBN-001..024). ``rocev2-adaptive``: the
same with the vendor NICs' short adaptive timeout (MR-GBN-030/031). ``rocev2-dcqcn``: RC with
DCQCN (MR-GBN-040..043), meant for a PFC fabric with RED marking. ``irn``: IRN-style selective
repeat without PFC (MR-GBN-050..055).
"""
from __future__ import annotations

import inspect

#: name -> (module, class, fixed keyword arguments)
PROTOCOLS = {
    "metaroce": ("metaroce.models.endpoint", "Endpoint", {}),
    "rocev2": ("metaroce.models.rocev2", "RoceEndpoint", {}),
    "rocev2-adaptive": ("metaroce.models.rocev2", "RoceEndpoint", {"adaptive_rto": True}),
    "rocev2-dcqcn": ("metaroce.models.dcqcn", "DcqcnRoceEndpoint", {}),
    "irn": ("metaroce.models.irn", "IrnEndpoint", {}),
}
BASELINES = ("rocev2", "rocev2-adaptive", "rocev2-dcqcn", "irn")


def endpoint_class(name):
    """The endpoint class and the fixed keyword arguments of protocol ``name``."""
    import importlib
    try:
        mod, cls, fixed = PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"unknown protocol {name!r} (known: {', '.join(PROTOCOLS)})") from None
    return getattr(importlib.import_module(mod), cls), dict(fixed)


def make_endpoint(name, addr, **cfg):
    """An endpoint of protocol ``name`` at ``addr``; ``cfg`` may not override a fixed argument."""
    cls, fixed = endpoint_class(name)
    return cls(addr, **dict(cfg, **fixed))


def accepted_params(name):
    """The keyword arguments protocol ``name`` takes (its class's and, through ``**config``,
    its bases'), without the fixed ones."""
    cls, fixed = endpoint_class(name)
    out = set()
    for c in cls.__mro__:
        if "__init__" not in vars(c):
            continue
        sig = inspect.signature(c.__init__)
        out |= {k for k, p in sig.parameters.items()
                if p.kind is p.KEYWORD_ONLY or (p.kind is p.POSITIONAL_OR_KEYWORD and k not in ("self", "addr"))}
        if not any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
            break
    return out - set(fixed) - set(getattr(cls, "UNUSED_PARAMS", ()))
