#!/usr/bin/env bash
# Installs everything the suite and its tests need on a fresh Debian machine. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

# qemu-user-static, clang/lld, the riscv64 libc: the qemu-rvv harness. picolibc + qemu-system-misc:
# the bare-metal (FireSim) harness and its check on qemu's spike machine. chromium: the report check.
# postgresql: the server the results-history selftests start (initdb in a temporary folder).
# mesa-vulkan-drivers: lavapipe, the Vulkan device iree-vulkan runs on without a GPU; vulkan-tools:
# vulkaninfo, which reports the device's features and limits (the target iree-vulkan compiles for).
APT_PACKAGES=(qemu-user-static clang-16 lld-16 gcc-riscv64-linux-gnu libc6-dev-riscv64-cross
              picolibc-riscv64-unknown-elf qemu-system-misc chromium postgresql mesa-vulkan-drivers vulkan-tools)
# Quiet unless it fails: every command's output goes to one log file, shown (its tail) only when a
# step fails; apt-get's -qq leaves dpkg's unpacking and set-up lines on stdout (~240 on a fresh machine).
LOG="${ACCEL_SETUP_LOG:-${TMPDIR:-/tmp}/accel-regress-setup.log}"
: > "$LOG"
quietly() {
  echo "+ $*" >> "$LOG"
  if ! "$@" >> "$LOG" 2>&1; then
    echo "setup: failed: $*" >&2
    echo "setup: the last 40 lines of $LOG (the whole log is kept there):" >&2
    tail -n 40 "$LOG" >&2
    exit 1
  fi
}

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing ${missing[*]} (log: $LOG)"
    quietly apt-get update -qq
    quietly env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "setup: not root, so not installing ${missing[*]}; the backends that need them will SKIP with the reason" >&2
  fi
fi

quietly python3 -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[iree,reports,dev,bisect,test,docs,corpus,postgresql,firesim]"
