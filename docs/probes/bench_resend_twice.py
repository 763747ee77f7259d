"""Any ``metaroce bench`` with MetaRoCE's ``resend_twice`` on (MR-REL-012): what the option
would change in benches that have no flag for it. Written while it was off by default; since
MR-REL-013 it is on by default (off only with ``announce`` off), so this forces it on there too.

    .venv/bin/python docs/probes/bench_resend_twice.py incast --protocols metaroce --json --jobs 1

Every ``Endpoint`` the run creates gets ``resend_twice=True`` (worker processes are forked, so
they inherit it); the arguments are those of ``metaroce bench``.
"""
import sys

from metaroce import cli
from metaroce.models import endpoint


def main():
    init = endpoint.Endpoint.__init__

    def with_option(self, *a, **kw):
        kw["resend_twice"] = True
        init(self, *a, **kw)
    endpoint.Endpoint.__init__ = with_option
    sys.exit(cli.main(["bench"] + sys.argv[1:]))


if __name__ == "__main__":
    main()
