# Sourced by the examples: TOPOCC (the binary), BUILD (its folder), OUT.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOPOCC=${TOPOCC:-$ROOT/build/release/topocc}
if [ ! -x "$TOPOCC" ]; then
  echo "no topocc at $TOPOCC: build first (scripts/demo) or set TOPOCC" >&2
  exit 1
fi
BUILD=$(dirname "$TOPOCC")
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
cd "$ROOT"
