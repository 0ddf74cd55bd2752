#!/usr/bin/env bash
# franz-go's kgo test binary (issue 14 item 3): franz-go's own integration tests, built once
# from the pinned module and run against Skiff by tests/compat/tests/franz_go.rs.
#
#   scripts/franz-go-kgo.sh        # builds target/franz-go/kgo.test (if missing or the pin moved)
#                                  # and writes the kgo source dir to target/franz-go/kgo.src
#
# The pin is FRANZ_GO_VERSION below. A throwaway module under target/franz-go/mod requires it
# and `go test -c` compiles the kgo package's tests into one binary. Go's module cache
# (`go env GOMODCACHE`) persists on a machine, so a warm machine downloads nothing; nothing
# fetched is committed.
set -euo pipefail

FRANZ_GO_VERSION="v1.22.3"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/target/franz-go"
MOD="$OUT/mod"
BIN="$OUT/kgo.test"
STAMP="$OUT/kgo.test.version"

command -v go >/dev/null || { echo "franz-go-kgo: go not found (install Go 1.24 or newer)" >&2; exit 1; }
if [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$FRANZ_GO_VERSION" ] && [ -d "$(cat "$OUT/kgo.src" 2>/dev/null)" ]; then
    exit 0
fi
mkdir -p "$MOD"
cat > "$MOD/go.mod" <<MODEOF
module skiff.local/franzgo

go 1.24

require github.com/twmb/franz-go $FRANZ_GO_VERSION
MODEOF
cat > "$MOD/tools.go" <<'GOEOF'
//go:build tools

package franzgo

import _ "github.com/twmb/franz-go/pkg/kgo"
GOEOF
cd "$MOD"
GOFLAGS=-mod=mod go mod tidy
go test -c -o "$BIN" github.com/twmb/franz-go/pkg/kgo
# Some kgo tests read their package's sources (config.go): they run from this directory.
echo "$(go env GOMODCACHE)/github.com/twmb/franz-go@$FRANZ_GO_VERSION/pkg/kgo" > "$OUT/kgo.src"
echo "$FRANZ_GO_VERSION" > "$STAMP"
echo "franz-go-kgo: built $BIN (franz-go $FRANZ_GO_VERSION)" >&2
