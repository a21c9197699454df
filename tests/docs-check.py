#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Parse every reStructuredText file under Documentation/ with docutils and
print TAP: one test per file, failing on any warning or error (malformed
tables, broken references, bad section markup). Sphinx-only directives
(toctree) are accepted without being checked."""
import io
import pathlib
import sys

import docutils.core
from docutils.parsers.rst import Directive, directives


class Ignored(Directive):
    has_content = True
    optional_arguments = 99
    final_argument_whitespace = True
    option_spec = {"maxdepth": directives.unchanged,
                   "caption": directives.unchanged,
                   "hidden": directives.flag}

    def run(self):
        return []


directives.register_directive("toctree", Ignored)

top = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
files = sorted((top / "Documentation").rglob("*.rst"))
print(f"1..{len(files)}")
failed = 0
for i, f in enumerate(files, 1):
    err = io.StringIO()
    docutils.core.publish_doctree(
        f.read_text(), source_path=str(f),
        settings_overrides={"warning_stream": err, "report_level": 2,
                            "syntax_highlight": "none",
                            "halt_level": 5})
    rel = f.relative_to(top)
    if err.getvalue():
        failed += 1
        print(f"not ok {i} - {rel}")
        for line in err.getvalue().splitlines():
            print(f"# {line}")
    else:
        print(f"ok {i} - {rel}")
sys.exit(1 if failed else 0)
