#!/usr/bin/env bash
# The server run by an ordinary user: the suites that execute code, run by vitest as a user
# without root (no cgroup writes, no uid drop; bubblewrap on an unprivileged user namespace).
# Run as root by .ci/run after `npm test` (dist/ built). Arguments go to vitest: test files run
# instead of the default set. CODEXEC_TEST_SANDBOX_MODE (namespace by default, or landlock) picks
# the mode; CODEXEC_TEST_USER=root runs the same set as root (the server then drops code to 65534).
set -euo pipefail
cd "$(dirname "$0")/.."
user=${CODEXEC_TEST_USER:-codexec-ci}
mode=${CODEXEC_TEST_SANDBOX_MODE:-namespace}
[ "$(id -u)" = 0 ] || { echo "test-unprivileged: run as root (it creates and switches to $user)" >&2; exit 2; }
[ -f dist/cli.js ] || { echo "test-unprivileged: build first (npm run build)" >&2; exit 2; }
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home=$(getent passwd "$user" | cut -d: -f6)

# The checkout as the user sees it: in place when every directory on the way lets it in, else a
# copy (a clone under /root, say) in a directory of its own, removed at the end.
dir=$PWD
# (Absolute paths: a relative one would be resolved from the cwd it inherits, already open.)
if ! runuser -u "$user" -- test -r "$dir/package.json" -a -x "$dir/node_modules/.bin" -a -r "$dir/dist/cli.js"; then
  dir=$(mktemp -d /tmp/codexec-unprivileged-XXXXXX)
  trap 'rm -rf "$dir"' EXIT
  tar --exclude=./.git -cf - . | tar -xf - -C "$dir"
  chmod -R a+rX "$dir"
fi

# Without a file among the arguments (options only, e.g. --reporter=verbose), the default set.
files=0
for arg in "$@"; do [[ $arg == -* ]] || files=1; done
if [ $files = 0 ]; then
  set -- "$@" test/sandbox/*.test.ts test/sessions test/engine \
    test/server/execute-code.test.ts test/server/execute-command.test.ts \
    test/server/security.test.ts test/server/limits.test.ts test/server/files.test.ts \
    test/server/processes.test.ts test/server/mounts.test.ts test/server/ports.test.ts test/egress/allowlist.test.ts test/egress/credentials.test.ts test/egress/fastopen.test.ts
fi

# A clean environment: the user's HOME, system paths only (this PATH's python3 may be a shim
# under /root that the user cannot read), proxies passed on; NODE_EXTRA_CA_CERTS is not (it
# doubles node's start-up, and nothing here reaches a registry). TMPDIR is in the user's home,
# where an ordinary user's CODEXEC_HOME is (~/.codexec): the tests' homes and workspaces then lie
# under a directory every sandbox hides (the server user's home), as they would for that user.
# As root: a directory like /tmp (1777: servers some tests run as other users write there too),
# as a root server's homes are outside /root (0700: no sandbox user of a landlock run may search
# it, docs/security.md).
tmp=$home/tmp
if [ "$user" = root ]; then tmp=$(mktemp -d /tmp/codexec-root-tests-XXXXXX) && chmod 1777 "$tmp"; else runuser -u "$user" -- mkdir -p "$tmp"; fi
env=(HOME="$home" USER="$user" LOGNAME="$user" LANG=C.UTF-8 PATH=/usr/local/bin:/usr/bin:/bin
  TMPDIR="$tmp" CODEXEC_TEST_SANDBOX_MODE="$mode" CI="${CI:-true}")
for name in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  [ -n "${!name:-}" ] && env+=("$name=${!name}")
done
started=$(date +%s)
cd "$dir"
# --configLoader runner: vite would bundle the config into node_modules/.vite-temp, which the user
# may not write.
status=0
runuser -u "$user" -- env -i "${env[@]}" node node_modules/vitest/vitest.mjs run --configLoader runner "$@" ||
  status=$?
echo "test-unprivileged: $mode mode as $user, $(( $(date +%s) - started )) s"
# The root pass's directory like /tmp is this run's alone: nothing of it is left behind.
if [ "$user" = root ]; then rm -rf "$tmp"; fi
exit $status
