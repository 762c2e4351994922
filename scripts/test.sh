#!/usr/bin/env bash
# Run every check that CI runs, in the order CI runs them:
#   cargo fmt --check, cargo clippy (-D warnings; every example is built too)
#   and the test build (beside the installs of the test tools),
#   cargo nextest (all tests), doc tests, cargo doc (-D warnings).
# Installs what is missing on a fresh machine; installed tools are cached
# outside the repository, in $WAVECREW_CACHE (default: ~/.cache/wavecrew).
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${WAVECREW_CACHE:-$HOME/.cache/wavecrew}"
mkdir -p "$CACHE"
export PATH="$CACHE/cargo/bin:$PATH"

step() { printf '\n==> %s\n' "$*" >&2; }

for component in rustfmt clippy; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    step "installing the $component component"
    rustup component add "$component"
  fi
done

step "cargo fmt --check"
cargo fmt --all --check

# The Rust build (clippy, the binaries the e2e tests run, then the test
# targets) waits on the CPU while the installs below wait on the network: they
# run side by side. The binaries are built as `cargo install` builds them (the
# CLI package alone, with the engine; what `bin_path` builds outside CI), not
# in the test targets' feature resolution, which adds what dev-dependencies
# turn on (nix's `mount`, ...): the e2e tests run what users install, and the
# install test finds those very binaries built instead of relinking them under
# the other tests.
BUILD_LOG="$(mktemp -t wavecrew-build.XXXXXX)"
step "cargo clippy and the test build, beside the installs (log: $BUILD_LOG)"
(
  cargo clippy --workspace --all-targets --locked -- -D warnings \
    && cargo build -p wavecrew-cli --features nats --bins --locked \
    && cargo build --workspace --tests --locked
) >"$BUILD_LOG" 2>&1 &
BUILD_PID=$!
# An install that fails (or Ctrl-C) ends the script: the build goes with it,
# cargo included (the subshell's child).
# (`|| true`: under `set -e` a failing command in the trap would become the
# script's exit status, and nothing is left to kill once the build ended.)
trap 'pkill -P "$BUILD_PID" 2>/dev/null || true; kill "$BUILD_PID" 2>/dev/null || true' EXIT

# On a machine without it, nextest is built from crates.io (no other source is
# reachable): pinned, in the dev profile, without debug info and without its
# self-updater and USDT probes, which builds in under a third of the time of a
# release build with every feature (102 s against 335 s here, alone; it is
# built beside the workspace's build and needed only when the tests start).
if ! cargo nextest --version >/dev/null 2>&1; then
  step "installing cargo-nextest into $CACHE/cargo"
  CARGO_PROFILE_DEV_DEBUG=false \
    cargo install --quiet --locked --debug --no-default-features \
    --root "$CACHE/cargo" cargo-nextest@0.9.151
fi

# --- wavecrew-validation: test tools for the fixture projects (begin) ---
# crates/validation's tests run real pytest (with pytest-cov), jest and
# vitest (with coverage) projects, and cargo nextest; they never skip when a
# tool is missing, so install the tools here, pinned, into the cache. The tests find them through
# WAVECREW_CACHE (default ~/.cache/wavecrew): $CACHE/py (a venv) and
# $CACHE/node/node_modules (from the committed lockfile).
export WAVECREW_CACHE="$CACHE"
# tests/it/mcp.rs drives `wavecrew mcp` with the official Python MCP SDK's
# client (`mcp`), from the same venv.
VALIDATION_PY_PINS="pytest==8.4.2 pytest-cov==6.3.0 mcp==2.3.0"
if [ "$(cat "$CACHE/py/.wavecrew-pins" 2>/dev/null)" != "$VALIDATION_PY_PINS" ]; then
  step "installing $VALIDATION_PY_PINS into $CACHE/py"
  rm -rf "$CACHE/py"
  python3 -m venv "$CACHE/py"
  # shellcheck disable=SC2086
  "$CACHE/py/bin/python" -m pip install --quiet --disable-pip-version-check $VALIDATION_PY_PINS
  echo "$VALIDATION_PY_PINS" > "$CACHE/py/.wavecrew-pins"
fi
NODE_TOOLS=crates/validation/tests/fixtures/node-tools
# The lockfile installed from is kept beside as a marker: npm rewrites the
# copy it installs from, so that copy cannot tell whether anything changed.
if ! cmp -s "$NODE_TOOLS/package-lock.json" "$CACHE/node/.wavecrew-lock" \
   || [ ! -x "$CACHE/node/node_modules/.bin/jest" ] \
   || [ ! -x "$CACHE/node/node_modules/.bin/vitest" ]; then
  step "installing the node test tools (jest, vitest) into $CACHE/node"
  rm -rf "$CACHE/node"
  mkdir -p "$CACHE/node"
  cp "$NODE_TOOLS/package.json" "$NODE_TOOLS/package-lock.json" "$CACHE/node/"
  # `npm install` (not `ci`) honours the lockfile and tolerates the
  # platform-specific optional packages a lockfile may list.
  npm install --prefix "$CACHE/node" --no-audit --no-fund --loglevel=error
  cp "$NODE_TOOLS/package-lock.json" "$CACHE/node/.wavecrew-lock"
fi
# --- wavecrew-validation (end) ---

# --- agent CLIs (begin) ---
# crates/backends' tests run the real codex, gemini and claude CLIs against a
# mock model server on 127.0.0.1 (no key, no network). Pinned versions are
# installed from npm into $CACHE/agent-clis; the tests find them through
# WAVECREW_CACHE and fail (never skip) when they are missing.
AGENT_CLI_PINS="@openai/codex@0.169.0 @google/gemini-cli@0.61.0 @anthropic-ai/claude-code@2.1.197"
AGENT_CLIS="$CACHE/agent-clis"
if [ "$(cat "$AGENT_CLIS/.wavecrew-pins" 2>/dev/null)" != "$AGENT_CLI_PINS" ] \
   || [ ! -x "$AGENT_CLIS/node_modules/.bin/codex" ] \
   || [ ! -x "$AGENT_CLIS/node_modules/.bin/gemini" ] \
   || [ ! -x "$AGENT_CLIS/node_modules/.bin/claude" ]; then
  step "installing the agent CLIs ($AGENT_CLI_PINS) into $AGENT_CLIS"
  rm -rf "$AGENT_CLIS"
  mkdir -p "$AGENT_CLIS"
  # shellcheck disable=SC2086
  npm install --prefix "$AGENT_CLIS" --no-audit --no-fund --loglevel=error $AGENT_CLI_PINS
  echo "$AGENT_CLI_PINS" > "$AGENT_CLIS/.wavecrew-pins"
fi
# claude needs its postinstall step (it puts the native binary in place);
# run it again if an install skipped scripts.
if ! "$AGENT_CLIS/node_modules/.bin/claude" --version >/dev/null 2>&1; then
  step "placing claude's native binary"
  (cd "$AGENT_CLIS/node_modules/@anthropic-ai/claude-code" && node install.cjs)
fi
# --- agent CLIs (end) ---

# --- chromium (begin) ---
# tests/it/report.rs renders the HTML timeline in headless Chromium
# (Debian's package) and checks the screenshot; it never skips.
if ! command -v chromium >/dev/null 2>&1; then
  step "installing Debian's chromium"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null \
    || { $SUDO apt-get update -q >/dev/null && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }
fi
# --- chromium (end) ---

# --- nats-server (begin) ---
# crates/engine-nats' tests run the real nats-server (Debian's 2.9.10, with
# JetStream) on 127.0.0.1 with a free port; they fail (never skip) when it is
# missing.
# The multi-host tests (tests/it/hosts) simulate hosts with network
# namespaces: `ip` (iproute2), `nsenter` and `unshare` (util-linux), as root.
NATS_PACKAGES=""
command -v nats-server >/dev/null 2>&1 || NATS_PACKAGES="$NATS_PACKAGES nats-server"
command -v ip >/dev/null 2>&1 || NATS_PACKAGES="$NATS_PACKAGES iproute2"
command -v nsenter >/dev/null 2>&1 || NATS_PACKAGES="$NATS_PACKAGES util-linux"
if [ -n "$NATS_PACKAGES" ]; then
  step "installing Debian's$NATS_PACKAGES"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q >/dev/null
  # shellcheck disable=SC2086 # a list of package names
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $NATS_PACKAGES >/dev/null
fi
# --- nats-server (end) ---

step "waiting for cargo clippy and the test build"
if ! wait "$BUILD_PID"; then
  cat "$BUILD_LOG"
  echo "cargo clippy or the test build failed" >&2
  exit 1
fi
grep -v '^\s*\(Compiling\|Checking\|Downloaded\|Downloading\)' "$BUILD_LOG" || true
rm -f "$BUILD_LOG"

# The doc tests and `cargo doc` run beside the tests: after them they took
# 68 s on two cores; beside them they end before the tests do. They start once
# nextest has its test binaries, when cargo's build lock is free again; their
# output follows the tests'.
NEXTEST_LOG="$(mktemp -t wavecrew-nextest.XXXXXX)"
DOC_LOG="$(mktemp -t wavecrew-doc.XXXXXX)"
(
  until grep -q '^ *Starting ' "$NEXTEST_LOG" 2>/dev/null; do sleep 1; done
  printf '==> doc tests\n'
  cargo test --doc --workspace --locked
  printf '==> cargo doc (warnings denied)\n'
  RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --locked
) >"$DOC_LOG" 2>&1 &
DOC_PID=$!
trap 'pkill -P "$BUILD_PID" 2>/dev/null || true; kill "$BUILD_PID" 2>/dev/null || true; pkill -P "$DOC_PID" 2>/dev/null || true; kill "$DOC_PID" 2>/dev/null || true' EXIT

# The binaries the e2e tests run were built above: no test builds them again.
step "cargo nextest run (the doc tests and cargo doc beside it)"
WAVECREW_E2E_NO_BUILD=1 cargo nextest run --workspace --locked --profile ci 2>&1 | tee "$NEXTEST_LOG"

step "waiting for the doc tests and cargo doc"
DOC_STATUS=0
wait "$DOC_PID" || DOC_STATUS=$?
cat "$DOC_LOG"
rm -f "$NEXTEST_LOG" "$DOC_LOG"
if [ "$DOC_STATUS" != 0 ]; then
  echo "the doc tests or cargo doc failed" >&2
  exit 1
fi
