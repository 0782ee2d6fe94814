#!/usr/bin/env python3
"""Checks that the three maps of the source tree agree: ops/check-layers' layer table, the
README's layout table (layer | folder | what) and docs/architecture.md (the picture's `layer N`
lines and the table of what each folder holds). Each disagreement is printed; exit 1 if any.

Usage: layer_map_test.py REPO_ROOT
"""
import pathlib
import re
import subprocess
import sys

FOLDER = re.compile(r"^[a-z_]+(?:/[a-z_<>]+)*/$")


def script_map(root: pathlib.Path):
    """folder -> layer ("-" beside the stack), as `ops/check-layers --list-layers` prints it."""
    out = subprocess.run([sys.executable, str(root / "ops" / "check-layers"), "--list-layers"],
                         check=True, capture_output=True, text=True).stdout
    table = {}
    for line in out.splitlines():
        layer, folder = line.split()
        table[folder] = layer
    return table


def section(text: str, heading: str):
    """The lines of a markdown section, from its heading to the next heading of any level."""
    lines = text.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    return lines[start:end]


def table_rows(lines):
    """The cells of each row of the markdown tables in `lines`, header and rule left out."""
    rows = []
    for line in lines:
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows.append(cells)
    return rows[1:] if rows else rows


DUPLICATES = []


def readme_map(root: pathlib.Path):
    table = {}
    for cells in table_rows(section((root / "README.md").read_text(), "## Layout")):
        folder = cells[1].strip("`")
        if folder in table:
            DUPLICATES.append(f"README.md layout table: {folder} has two rows")
        table[folder] = cells[0] or "-"
    return table


def architecture_picture(root: pathlib.Path):
    """folder -> layer from the picture's `layer N  folder/ folder/ …` lines."""
    table = {}
    for line in (root / "docs" / "architecture.md").read_text().splitlines():
        m = re.match(r"^\s*layer (\d+)\s+(.*)$", line)
        if not m:
            continue
        for token in m.group(2).split():
            if FOLDER.match(token):
                table[token] = m.group(1)
    return table


def architecture_table(root: pathlib.Path):
    text = (root / "docs" / "architecture.md").read_text()
    rows = table_rows(section(text, "## What each folder holds"))
    folders = [cells[0].strip("`") for cells in rows]
    for folder in sorted({f for f in folders if folders.count(f) > 1}):
        DUPLICATES.append(f"docs/architecture.md folder table: {folder} has two rows")
    return set(folders)


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    script = script_map(root)
    layered = {f: layer for f, layer in script.items() if layer != "-"}
    problems = []

    def compare(name, found, expected):
        for folder in sorted(set(expected) | set(found)):
            if folder not in found:
                problems.append(f"{name}: {folder} (layer {expected[folder]}) is missing")
            elif folder not in expected:
                problems.append(f"{name}: {folder} is not in ops/check-layers' table")
            elif found[folder] != expected[folder]:
                problems.append(f"{name}: {folder} is on layer {found[folder]}, "
                                f"ops/check-layers says {expected[folder]}")

    compare("README.md layout table", readme_map(root), script)
    compare("docs/architecture.md picture", architecture_picture(root), layered)
    compare("docs/architecture.md folder table",
            {f: layered.get(f, "?") for f in architecture_table(root)}, layered)
    problems += DUPLICATES
    for p in problems:
        print(p)
    if problems:
        print(f"layer_map_test: {len(problems)} disagreement(s) between the maps")
        return 1
    print(f"layer_map_test: the three maps name the same {len(layered)} layered folders")
    return 0


if __name__ == "__main__":
    sys.exit(main())
