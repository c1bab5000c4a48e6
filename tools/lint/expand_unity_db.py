#!/usr/bin/env python3
"""Writes a compilation database in which each source of a unity batch has an entry of its own.

With unity builds (TRACKSCOPE_UNITY_BUILD, CMake's UNITY_BUILD), compile_commands.json names the generated
unity_N_cxx.cxx files, not the sources they include, so clang-tidy would find no flags for those sources. Each
source is given its batch's command with the batch's file name replaced by its own; every other entry is copied.

    tools/lint/expand_unity_db.py BUILD_DIR OUT_DIR     # writes OUT_DIR/compile_commands.json
"""

import json
import pathlib
import re
import sys

INCLUDE = re.compile(r'^#include "(?P<path>[^"]+)"\s*$', re.MULTILINE)


def expand(entries):
    out = []
    for entry in entries:
        unity = pathlib.Path(entry["file"])
        if unity.parent.name != "Unity" or not unity.name.startswith("unity_"):
            out.append(entry)
            continue
        text = unity.read_text(encoding="utf-8") if unity.is_file() else ""
        for match in INCLUDE.finditer(text):
            source = match.group("path")
            out.append({
                "directory": entry["directory"],
                "command": entry["command"].replace(str(unity), source),
                "file": source,
            })
    return out


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build, out_dir = pathlib.Path(argv[1]), pathlib.Path(argv[2])
    entries = json.loads((build / "compile_commands.json").read_text(encoding="utf-8"))
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / "compile_commands.json"
    temporary = target.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(expand(entries), indent=1), encoding="utf-8")
    temporary.replace(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
