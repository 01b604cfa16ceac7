#!/usr/bin/env bash
# System dependencies of the self-tests that npm cannot provide: Debian's chromium for the HTML report's
# browser test (test/html.test.ts drives it with playwright-core at /usr/bin/chromium; no `npx playwright install`).
# Installs only what is missing, so a prepared machine does no network work.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  echo "run-deps: /usr/bin/chromium present ($(/usr/bin/chromium --version 2>/dev/null | head -n1))"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "run-deps: /usr/bin/chromium missing and apt-get not available; install Debian's chromium by hand" >&2
  exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "run-deps: /usr/bin/chromium missing and not root (no sudo); cannot install it" >&2
    exit 1
  fi
fi

echo "run-deps: installing chromium with apt-get"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium
/usr/bin/chromium --version 2>/dev/null | head -n1 || true
