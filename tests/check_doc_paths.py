#!/usr/bin/env python3
"""Every path and scenario file the docs name exists in the checkout, and no doc
cites what a clone does not have: a tracker issue ("issue 5", also when a line
break splits it) or a file outside it. The checks are tried on a made-up document
first, so a check that stops finding its problem fails too.

Reads README.md, DEVELOPERS.md, docs/*.md, reports/README.md and
scripts/slurm/README.md, and checks:

- relative Markdown links ([text](target)), resolved from the document's folder;
- paths in backticks and in fenced code blocks whose first component is a
  folder or file of the checkout (`scenarios/quick.json`, `harness/cli/`,
  `scripts/plot.py`), resolved from the checkout's root (from the document's
  folder when that is where they exist); globs (`scenarios/fa2/*.json`) must
  match something;

A path must stay inside the checkout (no `../shared/...`). Placeholders are
written in angle brackets (`scenarios/<yours>.json`, `reports/<device>/`) and
are not checked; neither are outputs under the folders .gitignore ignores
(`build/`, `results/`), whether or not a run has made them. Exit status 1 lists every problem with its document and
line.
"""
import argparse
import fnmatch
import pathlib
import re
import sys

DOCUMENTS = ["README.md", "DEVELOPERS.md", "docs/*.md", "reports/README.md", "scripts/slurm/README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
PATHLIKE = re.compile(r"^[A-Za-z0-9_.*/{}-]+$")
# Across a line break too: "issue\n13" is as much a citation as "issue 13".
TRACKER_ISSUE = re.compile(r"\b[Ii]ssues?\s+#?\d+\b")


def documents(root):
    found = []
    for pattern in DOCUMENTS:
        found += sorted(root.glob(pattern))
    return found


def candidates(line):
    """Path-like words of a line of code: split on spaces, quotes and shell punctuation
    (commas too, except inside braces)."""
    for word in re.split(r"[\s'\"=;|()]+|,(?![^{]*\})", line):
        word = word.rstrip(".:,")
        if "/" in word:
            yield word


def expand_braces(path):
    """harness/{a,b}.cpp -> harness/a.cpp, harness/b.cpp."""
    match = re.search(r"\{([^{}]*)\}", path)
    if not match:
        return [path]
    return [expanded for part in match.group(1).split(",")
            for expanded in expand_braces(path[:match.start()] + part + path[match.end():])]


def exists(root, base, path):
    """Whether `path` names something inside the checkout (from the root or from `base`)."""
    for start in (root, base):
        target = (start / path)
        try:
            target.resolve().relative_to(root.resolve())
        except ValueError:
            continue  # outside the checkout
        if any(ch in path for ch in "*?"):
            if list(start.glob(path)):
                return True
        elif target.exists():
            return True
    return False


def ignored_folders(root):
    """The folder patterns of .gitignore (`build/`, `/results/`): where outputs go.
    A leading slash anchors a pattern at the root, where these paths start anyway."""
    gitignore = root / ".gitignore"
    lines = gitignore.read_text().splitlines() if gitignore.exists() else []
    return [line.strip().strip("/") for line in lines if line.strip().endswith("/")]


def checked_path(root, word):
    """The word as a path to check, or None when it is not one the checkout should hold."""
    if "<" in word or ">" in word or "://" in word or word.startswith(("-", "$", "~")):
        return None
    if not PATHLIKE.match(word):
        return None
    first = word.split("/")[0]
    if first in ("", "."):
        return None
    if first == "..":
        return word  # must still resolve inside the checkout
    if any(fnmatch.fnmatch(first, pattern) for pattern in ignored_folders(root)):
        return None
    if "/" in word and (root / first).exists():
        return word
    return None


def problems_in(root, document):
    base = document.parent
    problems = []
    in_code = False
    text = document.read_text()
    for match in TRACKER_ISSUE.finditer(text):
        number = text.count("\n", 0, match.start()) + 1
        issue = " ".join(match.group(0).split())
        problems.append(f"{document.relative_to(root)}:{number}: cites a tracker issue ({issue}), "
                        "which a reader of the clone cannot see")
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{document.relative_to(root)}:{number}"
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        for target in LINK.findall(line):
            if "://" in target or target.startswith(("#", "mailto:")):
                continue
            path = target.split("#")[0]
            if path and not exists(root, base, path):
                problems.append(f"{where}: link to {target}, which does not exist")
        words = list(candidates(line)) if in_code else [w for span in CODE.findall(line) for w in candidates(span)]
        for word in words:
            path = checked_path(root, word)
            if path is not None:
                for expanded in expand_braces(path):
                    if not exists(root, base, expanded):
                        problems.append(f"{where}: {word} does not exist")
    return problems


def check_the_checker():
    """The checks themselves: a citation wrapped over two lines, a path outside the
    checkout and a missing file are each found; an output under a folder
    .gitignore anchors at the root is not, once a run has made the folder."""
    import tempfile
    with tempfile.TemporaryDirectory() as directory:
        root = pathlib.Path(directory)
        (root / "docs").mkdir()
        document = root / "docs" / "doc.md"
        (root / "results").mkdir()
        (root / ".gitignore").write_text("/results/\n")
        document.write_text("The reproducers of issue\n13 are kept; see `../shared/DESIGN.md`\n"
                            "and `docs/missing.md`; a run writes `results/run.json`.\n")
        found = problems_in(root, document)
        expected = ["docs/doc.md:1: cites a tracker issue (issue 13)", "../shared/DESIGN.md does not exist",
                    "docs/missing.md does not exist"]
        missed = [e for e in expected if not any(e in problem for problem in found)]
        assert not missed, f"the doc check misses {missed}; it found {found}"
        assert not any("results/run.json" in problem for problem in found), \
            f"the doc check takes an output for a missing file: {found}"


def main():
    check_the_checker()
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True, type=pathlib.Path)
    root = parser.parse_args().source_dir.resolve()
    docs = documents(root)
    assert len(docs) >= 5, f"found only {docs}"
    problems = [problem for document in docs for problem in problems_in(root, document)]
    if problems:
        sys.exit("paths named in the docs that do not exist:\n" + "\n".join(problems))
    print(f"every path named in {len(docs)} documents exists")


if __name__ == "__main__":
    main()
