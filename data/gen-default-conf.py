#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Make the installed /etc/daxfile/daxfile.conf from examples/daxfile.conf.

The installed default manages nothing: managed_roots is empty, so a freshly
installed hook leaves every domain alone until the administrator names a
directory. Every other setting is commented out (its value in the example
is the built-in default). Fails when the example has no single
managed_roots line, so that a change there cannot slip through.

usage: gen-default-conf.py EXAMPLE OUTPUT
"""

import re
import sys

SETTING = re.compile(r"^([a-z_]+)=(.*)$")


def convert(lines):
    out = []
    roots = 0
    for line in lines:
        m = SETTING.match(line)
        if not m:
            out.append(line)
        elif m.group(1) == "managed_roots":
            roots += 1
            out.append(f"# e.g. managed_roots={m.group(2)}")
            out.append("managed_roots=")
        else:
            out.append("#" + line)
    if roots != 1:
        raise SystemExit(f"gen-default-conf: expected one managed_roots= "
                         f"line in the example, found {roots}")
    return out


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: gen-default-conf.py EXAMPLE OUTPUT")
    with open(sys.argv[1], encoding="utf-8") as f:
        lines = f.read().splitlines()
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write("\n".join(convert(lines)) + "\n")


if __name__ == "__main__":
    main()
