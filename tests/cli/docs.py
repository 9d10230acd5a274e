#!/usr/bin/env python3
"""Keeps README.md and docs/*.md true (ctest cli.docs).

Usage: docs.py SOURCE_DIR BUILD_DIR TEST_ENV

Every fenced block of the pages needs an info string. What the test does
with a block depends on it:

  sh, bash, shell   run with bash -eo pipefail from a scratch folder that
                    looks like the source tree with build/ = BUILD_DIR
  sh no-run         not run here: needs root, other hosts, a scheduler,
                    an install, or minutes (the reason is the block's own)
  console           "$ command" lines are run as above; the lines after
                    each are its expected output, compared as sorted lines
                    (ranks print in any order)
  ... file=NAME     any block with file=NAME is written to the scratch
                    folder as NAME before the page's commands run
  anything else     text, json, c, python...: not a command

A console or sh block that needs the Python module is skipped, saying so,
when the build has none. Also: relative links lead to files and headings
that exist, the variable table of docs/configuration.md
is exactly what `test_env --readme` prints from src/config/env.h, and
README.md is at most 300 lines.
"""
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^(\s*)```(.*)$")
RUN = {"sh", "bash", "shell"}
BLOCK_LIMIT_S = 60


def blocks(path):
    """(line number, info words, body lines) of each fenced block."""
    out, cur = [], None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line.rstrip("\n"))
            if cur is None and m:
                cur = (n, m.group(2).split(), len(m.group(1)), [])
            elif cur is not None and m and not m.group(2).strip():
                out.append((cur[0], cur[1], cur[3]))
                cur = None
            elif cur is not None:
                cur[3].append(line.rstrip("\n")[cur[2]:])
    if cur is not None:
        raise SystemExit(f"{path}:{cur[0]}: fenced block never closed")
    return out


def scratch(src, build):
    """A folder whose entries are the source tree's, with build/ = build."""
    d = tempfile.mkdtemp(prefix="dc-docs-")
    for name in os.listdir(src):
        if name not in ("build", ".git"):
            os.symlink(os.path.join(src, name), os.path.join(d, name))
    os.symlink(build, os.path.join(d, "build"))
    return d


def run(cmd, cwd, where):
    # What a job reads to find its peers would change what the pages show.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MLX_", "DISTCOMM_", "OMPI_", "PMI", "SLURM_"))
           and k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    try:
        p = subprocess.run(["bash", "-eo", "pipefail", "-c", cmd], cwd=cwd,
                           env=env, capture_output=True, text=True,
                           timeout=BLOCK_LIMIT_S)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{where}: still running after {BLOCK_LIMIT_S} s:\n{cmd}")
    if p.returncode != 0:
        raise SystemExit(f"{where}: exit {p.returncode}:\n{cmd}\n"
                         f"--- stdout\n{p.stdout}--- stderr\n{p.stderr}")
    return p.stdout


def console(body):
    """(command, expected lines) pairs of a console block."""
    pairs = []
    for line in body:
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        elif not pairs:
            raise ValueError("a console block starts with a \"$ \" line")
        else:
            pairs[-1][1].append(line)
    return pairs


def check_page(path, cwd, has_python, counts):
    rel = os.path.relpath(path, SRC)
    bl = blocks(path)
    for n, info, body in bl:
        if not info:
            raise SystemExit(f"{rel}:{n}: fenced block without an info string "
                             "(sh, sh no-run, console, text, ...)")
        for word in info:
            if word.startswith("file="):
                with open(os.path.join(cwd, word[5:]), "w") as f:
                    f.write("\n".join(body) + "\n")
    for n, info, body in bl:
        where = f"{rel}:{n}"
        text = "\n".join(body)
        if info[0] in RUN | {"console"} and "no-run" in info:
            counts["no-run"] += 1
            continue
        if info[0] not in RUN | {"console"}:
            continue
        if "PYTHONPATH=build/python" in text and not has_python:
            print(f"{where}: skipped: this build has no Python module")
            counts["skipped"] += 1
            continue
        if info[0] in RUN:
            run(text, cwd, where)
        else:
            for cmd, want in console(body):
                got = run(cmd, cwd, where).splitlines()
                if sorted(got) != sorted(want):
                    raise SystemExit(f"{where}: `{cmd}` printed:\n" +
                                     "\n".join(got) + "\nthe page says:\n" +
                                     "\n".join(want))
        counts["run"] += 1


LINK = re.compile(r"\]\(([^)\s]+)\)")
# Pages another branch of this round writes; linked before they land.
LANDING = {"docs/design.md"}


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    return {slug(m) for m in re.findall(r"^#+ (.*)$", text, flags=re.M)}


def check_links(path):
    """Relative links name files that exist, and headings they have."""
    text = re.sub(r"```.*?```", "", open(path, encoding="utf-8").read(),
                  flags=re.S)
    rel = os.path.relpath(path, SRC)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        name, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), name)) \
            if name else path
        if os.path.relpath(dest, SRC) in LANDING and not os.path.exists(dest):
            continue
        if not os.path.exists(dest):
            raise SystemExit(f"{rel}: link to {target}: no such file")
        if anchor and dest.endswith(".md") and anchor not in anchors(dest):
            raise SystemExit(f"{rel}: link to {target}: no such heading")


def check_table(src, test_env):
    table = subprocess.run([test_env, "--readme"], capture_output=True,
                           text=True, check=True).stdout
    page = open(os.path.join(src, "docs", "configuration.md"),
                encoding="utf-8").read()
    if table not in page:
        raise SystemExit("docs/configuration.md: the variable table differs "
                         "from src/config/env.h; paste in the output of "
                         "build/tests/test_env --readme")


def check_help(src, build):
    """docs/launcher.md quotes distcomm-launch --help: it must be today's."""
    launch = os.path.join(build, "bin", "distcomm-launch")
    text = subprocess.run([launch, "--help"], capture_output=True, text=True,
                          check=True).stdout
    page = open(os.path.join(src, "docs", "launcher.md"),
                encoding="utf-8").read()
    if text not in page:
        raise SystemExit("docs/launcher.md: the help block differs from "
                         "distcomm-launch --help; paste in its output")


def main():
    global SRC
    SRC, build, test_env = (os.path.abspath(a) for a in sys.argv[1:4])
    with open(os.path.join(SRC, "README.md"), encoding="utf-8") as f:
        lines = sum(1 for _ in f)
    if lines > 300:
        raise SystemExit(f"README.md has {lines} lines; at most 300")
    check_table(SRC, test_env)
    check_help(SRC, build)
    has_python = os.path.isdir(os.path.join(build, "python", "distcomm"))
    pages = [os.path.join(SRC, "README.md")]
    docs = os.path.join(SRC, "docs")
    pages += sorted(os.path.join(docs, p) for p in os.listdir(docs)
                    if p.endswith(".md"))
    counts = {"run": 0, "no-run": 0, "skipped": 0}
    for page in pages:
        check_links(page)
        cwd = scratch(SRC, build)
        check_page(page, cwd, has_python, counts)
        subprocess.run(["rm", "-rf", cwd], check=True)
    print(f"docs: {len(pages)} pages, {counts['run']} command blocks run, "
          f"{counts['no-run']} marked no-run, {counts['skipped']} skipped")


if __name__ == "__main__":
    main()
