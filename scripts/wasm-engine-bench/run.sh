#!/usr/bin/env bash
# Builds the engine for wasm32 (simd128, wasm-opt -O3: the worker's settings) and times its phases
# in Node. Usage: bash scripts/wasm-engine-bench/run.sh TRACE [node flags, e.g. --no-liftoff]
# With --no-liftoff every function is optimized before it first runs: the engine's best case.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
trace="$(realpath "$1")"
shift
export PATH="$root/e2e/node_modules/.bin:$HOME/.cargo/bin:$PATH"
cd "$here"
cp "$root/Cargo.lock" Cargo.lock
RUSTFLAGS="-C target-feature=+simd128" cargo build --release --offline --target wasm32-unknown-unknown \
  --target-dir "$root/target/wasm-engine-bench"
wasm-bindgen --target nodejs --out-dir "$root/target/wasm-engine-bench/pkg" \
  "$root/target/wasm-engine-bench/wasm32-unknown-unknown/release/wasm_engine_bench.wasm"
wasm-opt -O3 --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals "$root/target/wasm-engine-bench/pkg/wasm_engine_bench_bg.wasm" \
  -o "$root/target/wasm-engine-bench/pkg/wasm_engine_bench_bg.wasm"
node "$@" run.mjs "$root/target/wasm-engine-bench/pkg" "$trace"
