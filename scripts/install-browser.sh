#!/usr/bin/env bash
# Install headless Chromium and its WebDriver from Debian's packages for the
# browser tests (tests/e2e, marker `browser`).  Idempotent: does nothing when
# both binaries are present.  Needs root (or sudo) and the Debian archive.
# Set SKIP_BROWSER_INSTALL=1 to skip (the browser tests then skip themselves).
set -euo pipefail
if [ "${SKIP_BROWSER_INSTALL:-0}" = 1 ]; then
  exit 0
fi
have() { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; }
if have; then
  exit 0
fi
sudo_cmd=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo -n)
  else
    echo "install-browser: not root and no sudo; install the Debian packages chromium and chromium-driver by hand" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-browser: no apt-get here; install Chromium and chromedriver at /usr/bin by hand" >&2
  exit 1
fi
echo "install-browser: installing chromium and chromium-driver (Debian packages)"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >/dev/null
if ! have; then
  echo "install-browser: chromium or chromedriver still missing after the install" >&2
  exit 1
fi
echo "install-browser: $(/usr/bin/chromium --version 2>/dev/null | head -1)"
