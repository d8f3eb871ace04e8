# lit configuration for topocc's golden and error tests.
# Substitutions:
#   %topocc      the topocc binary
#   %topocc-fast an unsanitized Release topocc when the build has one
#                (TOPOCC_RELEASE_TOOLS), else %topocc
#   FileCheck    LLVM 14 FileCheck
#   not          LLVM's `not` (inverts the exit code; `not --crash` for crashes)
#   %topologies  the project's topologies/ folder
#   %inputs      tests/lit/Inputs
#   %shared      ../shared/data when present (tests needing it use REQUIRES: shared)
import os
import lit.formats

config.name = "topocc"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".test", ".yaml", ".ir"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.topocc_obj_root, "tests", "lit-out")

config.substitutions.append(("%topocc-fast", config.topocc_fast_bin))
config.substitutions.append(("%topocc", config.topocc_bin))
config.substitutions.append(("%topologies", os.path.join(config.topocc_src_root, "topologies")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%srcroot", config.topocc_src_root))
config.substitutions.append((r"(?<![\w/.-])FileCheck(?![\w/.-])", config.filecheck))
config.substitutions.append((r"(?<![\w/.-])not(?![\w/.-])", config.not_tool))

shared = os.path.normpath(os.path.join(config.topocc_src_root, "..", "shared", "data"))
if os.path.isdir(shared):
    config.available_features.add("shared")
    config.substitutions.append(("%shared", shared))
else:
    lit_config.note("../shared/data is absent: tests that need it are skipped")

# Keep sanitizer settings from the environment (scripts/test sets them).
for var in ["ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "HOME", "TMPDIR"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
