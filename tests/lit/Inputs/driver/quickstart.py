"""Runs every command of the README's quickstart as written.

usage: quickstart.py README.md TOPOCC WORKDIR

Takes the ```sh block under "## Quickstart", skips `scripts/demo` and the
`t=` assignment, joins continued lines, replaces `$t` with TOPOCC and the
placeholder `other-tool.xml` with a real MSCCL file (the ar.xml the block
writes, copied), and runs each line in WORKDIR with the repository root as
`topologies/`'s parent. Prints one line per command; exit status 1 when one
fails.
"""
import os
import shutil
import subprocess
import sys

readme, topocc, work = sys.argv[1:4]
root = os.path.dirname(os.path.abspath(readme))
text = open(readme, encoding="utf-8").read()
start = text.index("## Quickstart")
block = text[text.index("```sh", start) + 5:]
block = block[:block.index("```")]
commands, pending = [], ""
for line in block.splitlines():
    line = line.rstrip()
    if line.endswith("\\"):
        pending += line[:-1] + " "
        continue
    line = pending + line
    pending = ""
    code = line.split("  #")[0].strip()
    if not code or code.startswith("scripts/demo") or code.startswith("t="):
        continue
    commands.append(code)
os.makedirs(work, exist_ok=True)
for name in ("topologies",):
    link = os.path.join(work, name)
    if not os.path.exists(link):
        os.symlink(os.path.join(root, name), link)
failed = 0
for code in commands:
    if "other-tool.xml" in code and os.path.exists(os.path.join(work, "ar.xml")):
        shutil.copy(os.path.join(work, "ar.xml"), os.path.join(work, "other-tool.xml"))
    run = code.replace("$t", topocc)
    p = subprocess.run(run, shell=True, cwd=work, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    print("%s: %s" % ("ok" if p.returncode == 0 else "FAILED (exit %d)" % p.returncode, code))
    if p.returncode != 0:
        failed += 1
        sys.stdout.write(p.stderr[-2000:])
print("%d commands, %d failed" % (len(commands), failed))
sys.exit(1 if failed else 0)
