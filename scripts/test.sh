#!/usr/bin/env bash
# Run every check that CI runs, in the order CI runs them:
#   cargo fmt --check, cargo clippy (-D warnings), cargo nextest (all tests), doc tests.
# Installs what is missing on a fresh machine; installed tools are cached
# outside the repository, in $WAVECREW_CACHE (default: ~/.cache/wavecrew).
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE="${WAVECREW_CACHE:-$HOME/.cache/wavecrew}"
mkdir -p "$CACHE"
export PATH="$CACHE/cargo/bin:$PATH"

step() { printf '\n==> %s\n' "$*" >&2; }

if ! cargo nextest --version >/dev/null 2>&1; then
  step "installing cargo-nextest into $CACHE/cargo"
  cargo install --locked --root "$CACHE/cargo" cargo-nextest
fi
for component in rustfmt clippy; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    step "installing the $component component"
    rustup component add "$component"
  fi
done

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo nextest run"
cargo nextest run --workspace --locked --profile ci

step "doc tests"
cargo test --doc --workspace --locked
