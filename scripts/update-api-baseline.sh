#!/usr/bin/env bash
# Regenerates nixl-connect-core/src/test/resources/public-api.txt, the public API that PublicApiBaselineTest pins,
# from the code as it is now. Run it after changing the public API on purpose and commit the file with the change:
# its diff is the API change a reviewer sees. Extra arguments go to Maven (e.g. -o to stay offline).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
./mvnw -B -ntp -q "$@" -pl nixl-connect-core -am test -Dtest=PublicApiBaselineTest \
  -Dsurefire.failIfNoSpecifiedTests=false -DupdateApiBaseline=true
git --no-pager diff --stat -- nixl-connect-core/src/test/resources/public-api.txt || true
