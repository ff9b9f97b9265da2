#!/usr/bin/env bash
# Regenerates proto/gen/ (TypeScript types for agent.proto) after any change to the .proto.
# The options mirror the loadSync options both sides use (agent/connection/proto.ts); a test
# (test/agent/connection/proto.test.ts) fails when the committed gen/ is out of date.
set -euo pipefail
cd "$(dirname "$0")"
out="${1:-gen}"
rm -rf "$out"
../node_modules/.bin/proto-loader-gen-types \
  --longs=String --enums=String --defaults --oneofs --grpcLib=@grpc/grpc-js \
  --importFileExtension=.ts --includeDirs=. --outDir="$out" gantry/agent/v1/agent.proto >/dev/null
