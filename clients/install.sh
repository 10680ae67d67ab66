#!/usr/bin/env bash
# Installs what the client matrix (clients/matrix_test.go) runs, from the package
# registries only: redis-py from PyPI, node-redis from npm, Jedis and Lettuce (with their
# dependencies) from Maven Central, and from Debian the runtimes that are missing. Every
# version is pinned in the files beside this script. .ci/run calls it; a developer runs it
# once. It prints how long each step took.
set -euo pipefail
cd "$(dirname "$0")"

step() {
  local start=$SECONDS out
  if ! out=$("$@" 2>&1); then
    echo "$out" >&2
    echo "clients/install.sh: failed: $*" >&2
    return 1
  fi
  echo "clients/install.sh: $1 took $((SECONDS - start)) s"
}

missing=()
command -v python3 >/dev/null || missing+=(python3 python3-pip)
command -v node >/dev/null || missing+=(nodejs npm) # Debian 12's node is 18: the test then says it is too old
command -v java >/dev/null || missing+=(default-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq >/dev/null
  step $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

pip_install() {
  python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r python/requirements.txt
}
npm_install() { (cd node && npm ci --no-audit --no-fund --loglevel=error); }
# Maven only resolves the jars and writes their classpath; the test runs Check.java with
# the JDK's source launcher, so no build plugin is fetched.
mvn_resolve() {
  mvn -B -q -f java/pom.xml dependency:build-classpath -Dmdep.outputFile="$PWD/java/target/classpath.txt"
}
step pip_install
step npm_install
step mvn_resolve
