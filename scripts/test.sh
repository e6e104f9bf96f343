#!/usr/bin/env bash
# Builds everything and runs every test. The transfer contract suite runs over the embedded transport
# always, and over a real NIXL too: .ci/nixl-setup.sh fetches NIXL's wheel from PyPI into .ci-cache/.
# Without network the NIXL tests are skipped (they say why) — except in CI, where that is an error.
# Then scripts/consumer-app-test.sh: the getting-started path of a new user, end to end.
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

# The real dynamo.nixl_connect (ai-dynamo-runtime 1.6.1 from PyPI) for DynamoInteropTest.
if [[ -n "${NIXL_PYTHON_PATH:-}" ]] && dynamo_env="$(.ci/dynamo-setup.sh)"; then
  eval "$dynamo_env"
elif [[ "${CI:-}" == "true" ]]; then
  echo "test.sh: dynamo.nixl_connect could not be set up; CI must test interop with the real module" >&2
  exit 1
else
  echo "test.sh: dynamo.nixl_connect could not be set up; DynamoInteropTest will be skipped" >&2
fi

./mvnw -B -ntp verify "$@"
# A fresh application built from the documented pom against freshly installed artifacts (~40 s).
./scripts/consumer-app-test.sh
