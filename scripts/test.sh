#!/usr/bin/env bash
# Builds everything and runs every test. The transfer contract suite runs over the embedded transport
# always, and over a real NIXL too: .ci/nixl-setup.sh fetches NIXL's wheel from PyPI into .ci-cache/.
# Without network the NIXL tests are skipped (they say why) — except in CI, where that is an error.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if nixl_env="$(.ci/nixl-setup.sh)"; then
  eval "$nixl_env"
elif [[ "${CI:-}" == "true" ]]; then
  echo "test.sh: NIXL could not be set up; CI must test against a real NIXL" >&2
  exit 1
else
  echo "test.sh: NIXL could not be set up; the NIXL tests will be skipped" >&2
fi

exec ./mvnw -B -ntp verify "$@"
