#!/usr/bin/env bash
# Installs the Debian packages foxhunt builds with. Idempotent: installs only what is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  lld  # a faster linker for the ~80 test programs (docs/DECISIONS.md "CI time"); optional
  libzstd-dev zstd zlib1g-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libeigen3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libxgboost-dev  # the gradient-boosted-tree baseline (src/train/gbdt.h)
  chromium  # headless rendering of `fxt report` in tests/report (docs/REPORT.md)
  pybind11-dev python3-dev python3-numpy python3-pandas python3-pytest  # import foxhunt (docs/PYTHON.md)
)
# Optional extras: clang builds the libFuzzer targets (make fuzz).
if [[ "${FXT_SETUP_FUZZ:-0}" == 1 ]]; then packages+=(clang); fi
# The PyTorch peer's CPU self-test and form check (bench/peer, docs/PEER.md): Debian's torch.
if [[ "${FXT_SETUP_PEER:-0}" == 1 ]]; then packages+=(python3-torch); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "setup: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) != 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
